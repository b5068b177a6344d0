"""Body parsers that refuse, with a 400, what would otherwise fail deep inside a request:
JSON nested deeper than ``API_JSON_MAX_DEPTH`` (Python's parser recurses once per level), and
text PostgreSQL cannot store or compare (NUL characters, lone UTF-16 surrogates), which would
reach the database in uniqueness checks and lookups before any field validator ran."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.http import QueryDict
from rest_framework import parsers
from rest_framework.exceptions import ParseError

__all__ = ["BoundedFormParser", "BoundedJSONParser", "BoundedMultiPartParser", "check_body"]

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def check_body(data: Any) -> None:
    """Raises ``ParseError`` if ``data`` nests deeper than the limit or holds unstorable text.
    Iterative: a deep document must not exhaust the stack here either."""
    limit = settings.API_JSON_MAX_DEPTH
    pending: list[tuple[Any, int]] = [(data, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                raise ParseError("Text may not contain NUL characters or lone surrogates.")
            continue
        if isinstance(item, QueryDict):
            item = {key: item.getlist(key) for key in item}
        if isinstance(item, dict):
            item = [*item.keys(), *item.values()]
        if isinstance(item, list):
            if depth + 1 > limit:
                raise ParseError(f"The body nests deeper than {limit} levels.")
            pending.extend((child, depth + 1) for child in item)


class BoundedJSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            limit = settings.API_JSON_MAX_DEPTH
            raise ParseError(f"The body nests deeper than {limit} levels.") from None
        check_body(data)
        return data


class BoundedFormParser(parsers.FormParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        check_body(data)
        return data


class BoundedMultiPartParser(parsers.MultiPartParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        result = super().parse(stream, media_type, parser_context)
        check_body(result.data)
        return result
