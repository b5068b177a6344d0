"""Request types for views' annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["AuthenticatedHttpRequest"]


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view behind ``login_required``: its user is signed in (django-stubs'
    recipe). Only an annotation: Django hands the view its usual ``HttpRequest``."""

    user: User
