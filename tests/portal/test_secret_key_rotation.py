"""Rotating SECRET_KEY: what the old key signed stays valid while it is a fallback."""

from __future__ import annotations

from tests.portal.test_settings import run_manage

OLD, NEW = "old-" + "o" * 56, "new-" + "n" * 56
SIGN = "from django.core import signing; print(signing.dumps('still me'))"


def load(token: str) -> str:
    return f"from django.core import signing; print(signing.loads({token!r}))"


def test_it_keeps_what_the_old_key_signed_valid_while_the_old_key_is_a_fallback(tmp_path):
    token = run_manage("shell", "--no-imports", "-c", SIGN, SECRET_KEY=OLD).stdout.strip()
    fallbacks = tmp_path / "fallbacks"  # as a Secret's file: one per line
    fallbacks.write_text(f"another-{'a' * 52}\n{OLD}\n")

    kept = run_manage(
        "shell", "--no-imports", "-c", load(token),
        SECRET_KEY=NEW, SECRET_KEY_FALLBACKS_FILE=str(fallbacks),
    )  # fmt: skip
    dropped = run_manage("shell", "--no-imports", "-c", load(token), SECRET_KEY=NEW)

    assert kept.stdout.strip() == "still me", kept.stderr
    assert "BadSignature" in dropped.stderr
