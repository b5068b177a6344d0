"""``field__any=[…]``: membership in a list as one array parameter on PostgreSQL.

``field__in=[…]`` spells a placeholder per value, which the driver splits and quotes one by one
in Python: for the mirror's batches of 500–1,000 keys that cost more than the indexed read
itself. ``field = ANY(%s)`` sends the list as one array. Elsewhere (SQLite) it is ``IN``.
Takes a list (or any iterable) of values, never a queryset.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import Field, ForeignObject, Lookup

__all__ = ["AnyOf"]


class AnyOf(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def _values(self, connection: Any) -> list[Any]:
        field = self.lhs.output_field
        return [field.get_db_prep_value(value, connection) for value in self.rhs]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values(connection)
        if not values:
            raise EmptyResultSet
        return f"{lhs} IN ({', '.join(['%s'] * len(values))})", [*lhs_params, *values]

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*lhs_params, self._values(connection)]


Field.register_lookup(AnyOf)
# Related fields keep lookups of their own (``claim_id__any`` compares the key column).
ForeignObject.register_lookup(AnyOf)
