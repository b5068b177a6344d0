"""Static files survive production's hashed-manifest storage (``DEBUG=false``)."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management import call_command

STATIC = Path(__file__).resolve().parents[2] / "static"
SOURCE_MAP = re.compile(rb"sourceMappingURL=(\S+?)(?:\s*\*/)?\s*$", re.MULTILINE)


def test_every_source_map_a_static_file_points_at_is_shipped():
    dangling = [
        f"{path.relative_to(STATIC)} → {target.decode()}"
        for path in STATIC.rglob("*")
        if path.suffix in (".js", ".css")
        for target in SOURCE_MAP.findall(path.read_bytes())
        if not (path.parent / target.decode()).exists()
    ]
    assert dangling == []


def test_collectstatic_post_processes_every_file_with_the_manifest_storage(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)
    assert (tmp_path / "staticfiles.json").exists()
