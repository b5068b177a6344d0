"""Renderers of the API beyond DRF's.

``FastJSONRenderer`` is DRF's ``JSONRenderer`` with msgspec doing the encoding: for long
lists (the device list renders 100 devices with their attributes) json.dumps with DRF's
encoder class was a third of the time spent outside SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from rest_framework import renderers
from rest_framework.utils import encoders

__all__ = ["FastJSONRenderer", "json_lines"]

_fallback = encoders.JSONEncoder()


def _encode_other(value: Any) -> Any:
    # str subclasses (DRF's ErrorDetail) as plain strings; the rest (Decimal, UUID, lazy
    # strings, ...) as DRF's encoder turns them into JSON values.
    if isinstance(value, str):
        return str(value)
    return _fallback.default(value)


_encoder = msgspec.json.Encoder(enc_hook=_encode_other)


def _escape_line_separators(body: bytes) -> bytes:
    """U+2028 and U+2029 escaped, as JSONRenderer does, so that the JSON is a JavaScript
    subset."""
    if b"\xe2\x80" in body:
        body = body.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return body


def json_lines(items: list[Any]) -> bytes:
    """``items`` as JSON Lines: each as ``FastJSONRenderer`` writes it, then a newline."""
    return _escape_line_separators(_encoder.encode_lines(items))


class FastJSONRenderer(renderers.JSONRenderer):
    """The bytes ``JSONRenderer`` writes for compact, UTF-8 answers (the settings' defaults),
    for values JSON holds as such (strings, integers, booleans, null, lists, objects) and
    those DRF's encoder converts; ``?indent`` and the browsable API go through DRF's encoder.

    Only for views whose answers hold no ``datetime`` or ``float`` of their own (serializer
    fields turn datetimes into strings first): msgspec writes datetimes with microseconds where
    DRF writes milliseconds, and exponents as ``1e100`` where json.dumps writes ``1e+100``.
    """

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        # DRF's get_indent takes no media type as well (its stub says str).
        indent = self.get_indent(accepted_media_type, renderer_context or {})  # type: ignore[arg-type]
        if indent is not None or not self.compact or self.ensure_ascii or not self.strict:
            return super().render(data, accepted_media_type, renderer_context)
        return _escape_line_separators(_encoder.encode(data))
