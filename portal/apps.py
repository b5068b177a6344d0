import functools
from collections.abc import Callable
from typing import Any

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        _remember_cell_signatures()
        from portal import receivers  # noqa: F401  (connects the signal receivers)


def _remember_cell_signatures() -> None:
    """django-tables2 inspects the signature of a column's ``render_*`` method for every cell it
    renders (``inspect.signature``: 2,000 calls and ~25 % of a 50-row device list page). The
    answer depends only on the function, so it is kept per function (bound methods by their
    underlying function; the table instance does not change it)."""
    from django_tables2 import utils

    inspect_signature = utils.signature

    @functools.lru_cache(maxsize=4096)
    def of(function: Callable[..., Any], bound: bool) -> Any:
        return inspect_signature(function.__get__(object()) if bound else function)

    def signature(fn: Callable[..., Any]) -> Any:
        underlying = getattr(fn, "__func__", None)
        if underlying is not None and getattr(fn, "__self__", None) is not None:
            return of(underlying, True)
        try:
            return of(fn, False)
        except TypeError:  # not hashable
            return inspect_signature(fn)

    utils.signature = signature
