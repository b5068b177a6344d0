"""Semantic versions as Kubernetes' CEL semver library sees them (blang/semver v4).

``parse_semver`` is strict semver 2.0.0 (what ``semver(s)`` and version attributes use);
``parse_semver(s, normalize=True)`` first drops a leading ``v``, strips leading zeros from the
numeric parts and fills a missing minor/patch (``semver(s, true)``). Ordering is semver
precedence: build metadata is ignored, a prerelease sorts before its release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["Semver", "SemverError", "parse_semver", "is_semver"]

_NUMBERS = frozenset("0123456789")
_ALPHANUMERIC = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_UINT64_MAX = 2**64 - 1


class SemverError(ValueError):
    """Not a semantic version; the message follows blang/semver's wording."""


@dataclass(frozen=True, slots=True)
class Semver:
    """A parsed version; equality and ordering follow semver precedence."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[int | str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    def precedence_key(self) -> str:
        """A string equal for exactly the versions of equal precedence (build metadata dropped)."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(part) for part in self.prerelease)
        return text

    def compare(self, other: Semver) -> int:
        mine = (self.major, self.minor, self.patch)
        theirs = (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.prerelease and not other.prerelease:
            return 0
        if not self.prerelease:
            return 1
        if not other.prerelease:
            return -1
        for left, right in zip(self.prerelease, other.prerelease, strict=False):
            result = _compare_prerelease_part(left, right)
            if result:
                return result
        if len(self.prerelease) == len(other.prerelease):
            return 0
        return 1 if len(self.prerelease) > len(other.prerelease) else -1

    def __str__(self) -> str:
        text = self.precedence_key()
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _compare_prerelease_part(left: int | str, right: int | str) -> int:
    if isinstance(left, int) and isinstance(right, int):
        return (left > right) - (left < right)
    if isinstance(left, int):
        return -1
    if isinstance(right, int):
        return 1
    return (left > right) - (left < right)


def _parse_number(text: str, what: str) -> int:
    if not text or any(character not in _NUMBERS for character in text):
        if text and any(character not in _NUMBERS for character in text):
            raise SemverError(f"Invalid character(s) found in {what} number {text!r}")
        raise SemverError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {text!r}")
    number = int(text)
    if number > _UINT64_MAX:
        raise SemverError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return number


def _parse_strict(text: str) -> Semver:
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _parse_number(parts[0], "major")
    minor = _parse_number(parts[1], "minor")
    patch_text = parts[2]
    build: list[str] = []
    prerelease_texts: list[str] = []
    if "+" in patch_text:
        patch_text, build_text = patch_text.split("+", 1)
        build = build_text.split(".")
    if "-" in patch_text:
        patch_text, prerelease_text = patch_text.split("-", 1)
        prerelease_texts = prerelease_text.split(".")
    patch = _parse_number(patch_text, "patch")
    prerelease: list[int | str] = []
    for part in prerelease_texts:
        if not part:
            raise SemverError("Prerelease is empty")
        if all(character in _NUMBERS for character in part):
            if len(part) > 1 and part[0] == "0":
                raise SemverError(
                    f"Numeric PreRelease version must not contain leading zeroes {part!r}"
                )
            prerelease.append(int(part))
        elif all(character in _ALPHANUMERIC for character in part):
            prerelease.append(part)
        else:
            raise SemverError(f"Invalid character(s) found in prerelease {part!r}")
    for part in build:
        if not part:
            raise SemverError("Build meta data is empty")
        if any(character not in _ALPHANUMERIC for character in part):
            raise SemverError(f"Invalid character(s) found in build meta data {part!r}")
    return Semver(major, minor, patch, tuple(prerelease), tuple(build))


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            if not stripped or stripped[0] not in _NUMBERS:
                stripped = "0" + stripped
            parts[index] = stripped
    if len(parts) < 3:
        if any(character in parts[-1] for character in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return ".".join(parts)


@lru_cache(maxsize=4096)
def parse_semver(text: str, normalize: bool = False) -> Semver:
    """Parse strictly, or leniently with ``normalize``; raises :class:`SemverError`."""
    if normalize:
        text = _normalize(text)
    return _parse_strict(text)


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except SemverError:
        return False
    return True
