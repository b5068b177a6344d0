"""API permission classes."""

from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.views import APIView

__all__ = ["ReadForMembersWriteForStaff"]


class ReadForMembersWriteForStaff(permissions.BasePermission):
    """Reads for any signed-in user (querysets already narrow to what they may see);
    writes for portal admins only."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or bool(request.user.is_staff)
