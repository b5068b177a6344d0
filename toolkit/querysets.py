"""The one shape of ``visible_to(user)`` (STYLE §3): signed out sees nothing, a portal admin
(staff) everything, anyone else what the model's ``visible_to_member`` keeps."""

from __future__ import annotations

from typing import Self, TypeVar

from django.contrib.auth.models import AnonymousUser, User
from django.db import models

__all__ = ["VisibleQuerySet"]

_M = TypeVar("_M", bound=models.Model)


class VisibleQuerySet(models.QuerySet[_M, _M]):
    def visible_to(self, user: User | AnonymousUser) -> Self:
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        assert isinstance(user, User)  # authenticated: the user model
        return self.visible_to_member(user)

    def visible_to_member(self, user: User) -> Self:
        """What a signed-in user who is no portal admin sees (each model says)."""
        raise NotImplementedError
