"""Bulk row writes for the mirror: COPY on PostgreSQL, ``bulk_create`` elsewhere."""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

import msgspec
from django.db import connection, models, transaction
from django.utils import timezone

if TYPE_CHECKING:
    from django.db.models.options import Options

__all__ = ["BATCH", "BulkWriter"]

BATCH = 1000

_msgspec_encode = msgspec.json.Encoder().encode
_stdlib_encode = json.JSONEncoder(check_circular=False, separators=(",", ":")).encode


def _encode_json(value: Any) -> str:
    """Compact JSON text; msgspec (about 5× the standard library on a slice), the standard
    library for what msgspec refuses (a dict with non-string keys, a value it cannot encode).
    PostgreSQL parses the text into ``jsonb``: the spelling does not reach the rows."""
    try:
        return _msgspec_encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return _stdlib_encode(value)


def _field(meta: Options[Any], name: str) -> models.Field[Any, Any]:
    """The field ``name`` (a field's name or attname): rows hold fields, never relations'
    reverse sides."""
    field = meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def _column(meta: Options[Any], name: str) -> str:
    """The column of the field ``name``: a concrete field's (only many-to-many fields have
    none)."""
    column = _field(meta, name).column
    assert column is not None
    return column


# The raw connections (a session each) whose staging tables exist: a temporary table lives
# as long as its session, so it is created once per connection, not once per batch. Noted
# when the creating transaction commits (a rollback drops it again).
_STAGED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _ensure_stage(cursor: Any, stage: str, shape: str) -> None:
    raw = connection.connection
    if stage in _STAGED.get(raw, ()):
        return
    cursor.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ON COMMIT DELETE ROWS AS {shape}"  # noqa: S608
    )
    transaction.on_commit(lambda: _STAGED.setdefault(raw, set()).add(stage))


class BulkWriter:
    """Inserts and upserts rows given as {field name or attname: value}.

    On PostgreSQL rows go through ``COPY`` (upserts through a temporary staging table and
    ``INSERT … ON CONFLICT``): Django's bulk insert sends JSON columns as text arrays whose
    escaping, in Python, costs more than everything else of a cold start. JSON values are
    encoded once: a slice's ``raw`` embeds its devices, whose ``raw``/``attributes`` columns
    then reuse the text already encoded (``embedded``: the path to them, see ``_encode``).
    Elsewhere (SQLite) rows go through ``bulk_create``, as before.
    """

    def __init__(self, *, embedded: tuple[str, ...] = ()) -> None:
        self.postgres = connection.vendor == "postgresql"
        self.path = embedded
        # id(dict or list) → (the value, kept alive so that its id is not reused; its JSON)
        self.encoded: dict[int, tuple[Any, str]] = {}

    def insert(self, model: type[models.Model], names: list[str], rows: list[dict]) -> None:
        if not rows:
            return
        if not self.postgres:
            model._default_manager.bulk_create([model(**row) for row in rows], batch_size=BATCH)
            return
        self._copy(model, model._meta.db_table, names, rows)

    def insert_new(self, model: type[models.Model], names: list[str], rows: list[dict]) -> None:
        """Inserts rows, leaving out those a unique constraint finds already there (another
        writer's): ``COPY`` into staging and one ``INSERT … ON CONFLICT DO NOTHING``."""
        if not rows:
            return
        if not self.postgres:
            model._default_manager.bulk_create(
                [model(**row) for row in rows], batch_size=BATCH, ignore_conflicts=True
            )
            return
        self._through_stage(model, names, rows, "DO NOTHING")

    def upsert(
        self,
        model: type[models.Model],
        names: list[str],
        rows: list[dict],
        *,
        unique: list[str],
        update: list[str],
    ) -> None:
        if not rows:
            return
        if not self.postgres:
            model._default_manager.bulk_create(
                [model(**row) for row in rows],
                batch_size=BATCH,
                update_conflicts=True,
                unique_fields=unique,
                update_fields=update,
            )
            return
        quote = connection.ops.quote_name
        meta = model._meta
        conflict = ", ".join(quote(_column(meta, name)) for name in unique)
        assignments = ", ".join(
            f"{quote(_column(meta, n))} = EXCLUDED.{quote(_column(meta, n))}" for n in update
        )
        self._through_stage(model, names, rows, f"({conflict}) DO UPDATE SET {assignments}")

    def _through_stage(
        self, model: type[models.Model], names: list[str], rows: list[dict], on_conflict: str
    ) -> None:
        """``COPY`` into a temporary table shaped like ``model``'s, then one ``INSERT … SELECT
        … ON CONFLICT <on_conflict>``."""
        quote = connection.ops.quote_name
        meta = model._meta
        columns = ", ".join(quote(_column(meta, name)) for name in names)
        stage = quote(f"mirror_stage_{meta.db_table}")
        table = quote(meta.db_table)
        with connection.cursor() as cursor:
            _ensure_stage(cursor, stage, f"SELECT {columns} FROM {table} WITH NO DATA")  # noqa: S608
            self._copy(model, f"mirror_stage_{meta.db_table}", names, rows)
            # Emptied by the statement that moves its rows: one round trip, not two.
            cursor.execute(
                f"WITH staged AS (DELETE FROM {stage} RETURNING {columns}) "  # noqa: S608
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staged "
                f"ON CONFLICT {on_conflict}"
            )

    def _copy(
        self, model: type[models.Model], table: str, names: list[str], rows: list[dict]
    ) -> None:
        """``COPY`` rows into ``table``; a missing value takes the field's default, ``auto_now``
        fields the current time, as Django's inserts do."""
        fields = [_field(model._meta, name) for name in names]
        columns = list(zip(names, [f.get_default() for f in fields], strict=True))
        stamped = [
            i
            for i, f in enumerate(fields)
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        ]
        json_columns = [
            i for i, f in enumerate(fields) if isinstance(f, models.JSONField) and i not in stamped
        ]
        now = timezone.now()
        encode = self._encode
        quote = connection.ops.quote_name
        column_list = ", ".join(quote(_column(model._meta, name)) for name in names)
        sql = f"COPY {quote(table)} ({column_list}) FROM STDIN"
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
            for row in rows:
                values = [row.get(name, default) for name, default in columns]
                for i in json_columns:
                    if values[i] is not None:
                        values[i] = encode(values[i])
                for i in stamped:
                    values[i] = now
                copy.write_row(values)

    def _encode(self, value: Any, path: tuple[str, ...] | None = None) -> str:
        """JSON text of a value, reusing the text of dicts and lists encoded before.

        ``path`` names the keys (``*``: every key or item) under which embedded objects are
        looked for; the containers met on the way and the values at its end are remembered.
        """
        hit = self.encoded.get(id(value))
        if hit is not None:
            return hit[1]
        path = self.path if path is None else path
        if path and isinstance(value, dict) and all(isinstance(k, str) for k in value):
            step, rest = path[0], path[1:]
            text = (
                "{"
                + ",".join(
                    f"{_encode_json(k)}:"
                    + (self._encode(v, rest) if step in ("*", k) else _encode_json(v))
                    for k, v in value.items()
                )
                + "}"
            )
        elif path and isinstance(value, list) and path[0] == "*":
            text = "[" + ",".join(self._encode(v, path[1:]) for v in value) + "]"
        else:
            text = _encode_json(value)
        if self.path and isinstance(value, dict | list):
            self.encoded[id(value)] = (value, text)
        return text
