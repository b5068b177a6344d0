"""Semantic versions: strict and normalizing parsing, precedence."""

import pytest

from dra.semver import SemverError, parse_semver


@pytest.mark.parametrize(
    "text", ["1.2.3", "0.0.0", "1.2.3-alpha.1", "1.2.3+build.5", "1.2.3-rc.1+b", "10.20.30-x-y.0"]
)
def test_it_accepts_strict_semantic_versions(text):
    assert str(parse_semver(text)) == text


@pytest.mark.parametrize(
    "text",
    ["", "1", "1.2", "v1.2.3", "01.2.3", "1.2.3-01", "1.2.3-", "1.2.3+", "1.2.x", "1.2.3-a..b"],
)
def test_it_rejects_what_strict_semver_rejects(text):
    with pytest.raises(SemverError):
        parse_semver(text)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("v1.2.3", "1.2.3"),
        ("1", "1.0.0"),
        ("1.2", "1.2.0"),
        ("01.02.03", "1.2.3"),
        ("v1.0", "1.0.0"),
    ],
)
def test_it_normalizes_when_asked(text, normalized):
    assert str(parse_semver(text, normalize=True)) == normalized


def test_it_refuses_prerelease_on_short_versions_even_when_normalizing():
    with pytest.raises(SemverError):
        parse_semver("1.2-rc1", normalize=True)


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("1.2.3", "1.2.3+build", 0),
        ("1.0.0-alpha", "1.0.0", -1),
        ("1.0.0-alpha", "1.0.0-alpha.1", -1),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta", -1),
        ("1.0.0-beta.2", "1.0.0-beta.11", -1),
        ("1.0.0-rc.1", "1.0.0-beta.11", 1),
        ("2.0.0", "10.0.0", -1),
    ],
)
def test_it_orders_by_semver_precedence(left, right, expected):
    assert parse_semver(left).compare(parse_semver(right)) == expected
