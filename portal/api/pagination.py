"""One pagination style for every list endpoint: ``?limit=&offset=``."""

from rest_framework import pagination

__all__ = ["LimitOffsetPagination"]


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = 1000
