"""Rules for text people type into the portal (names, descriptions), shared by every write
path through the models' ``clean()``.

Refused: control characters (which include NUL and the ESC of ANSI escape sequences),
Unicode bidirectional controls (which make text display in another order than it is stored,
e.g. a "Trojan Source" name), lone surrogates, and line breaks in single-line text.
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError

__all__ = ["BIDI_CONTROLS", "DNS_SUBDOMAIN", "validate_printable_text"]

# A Kubernetes object name (DNS subdomain, RFC 1123): DeviceClasses, claims, drivers. Use
# ``fullmatch``; the 253-character limit is the caller's.
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

# Marks (ALM, LRM, RLM), embeddings and overrides (LRE..RLO), isolates (LRI..PDI).
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
MULTILINE_ALLOWED = frozenset("\n\r\t")


def validate_printable_text(value: str, *, multiline: bool = False) -> None:
    """Raises ``ValidationError`` naming the first character text may not contain."""
    allowed = MULTILINE_ALLOWED if multiline else frozenset()
    for character in value:
        if character in allowed:
            continue
        category = unicodedata.category(character)
        if character in BIDI_CONTROLS or category in ("Cc", "Cs", "Zl", "Zp"):
            raise ValidationError(
                f"Text may not contain control or bidirectional characters "
                f"(found U+{ord(character):04X}).",
                code="unprintable",
            )
