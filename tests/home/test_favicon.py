"""The portal has an icon: every page names a small SVG favicon from static files, and
``/favicon.ico`` (asked for by browsers where a page names none: the admin, JSON) leads to it,
without a login."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db

ICON = '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">'


def test_pages_name_the_svg_favicon(client, client_as, bob):
    assert ICON in client.get("/login/").content.decode()
    assert ICON in client_as(bob).get("/").content.decode()


def test_favicon_ico_leads_to_it_without_a_login(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/img/favicon.svg"
    assert "max-age=86400" in response["Cache-Control"]


def test_the_favicon_is_a_small_square_svg():
    path = finders.find("img/favicon.svg")
    assert path is not None
    with open(path, encoding="utf-8") as file:
        svg = file.read()
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">')
    assert svg.rstrip().endswith("</svg>")
    assert len(svg.encode()) < 1024
