"""Bulk INSERT with one array parameter per column.

Django's bulk_create writes one placeholder per value: for 1,000 memories
that is 26,000 placeholders composed, quoted and parsed on the client, about
half of a batch's time. `INSERT ... SELECT FROM unnest(arrays)` sends one
array per column and lets the server do the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from psycopg.types.json import Jsonb


@dataclass(frozen=True)
class Computed:
    """A column the database computes from a per-row input, e.g. a tsvector
    from its document: `expression` holds `{}` where the input goes."""

    expression: str
    input_type: str
    value: Callable[[models.Model], object]


def insert_objects(model: type[models.Model], objects: Sequence[models.Model],
                   computed: dict[str, Computed] | None = None) -> None:
    """Insert unsaved model instances in one statement. Auto-increment keys
    are left to the database (not read back); every other concrete field is
    written from the instance after its pre_save (auto_now_add and the like)."""
    if not objects:
        return
    computed = computed or {}
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, models.AutoField)]
    inputs, selects, params = [], [], []
    for index, field in enumerate(fields):
        alias = f"c{index}"
        if field.attname in computed:
            rule = computed[field.attname]
            inputs.append(f"%s::{rule.input_type}[]")
            selects.append(rule.expression.format(f"u.{alias}"))
            params.append([rule.value(obj) for obj in objects])
        elif isinstance(field, ArrayField):
            # unnest flattens a two-dimensional array; ragged per-row arrays travel as jsonb.

            inputs.append("%s::jsonb[]")
            element_type = _unsized(str(field.db_type(connection)))
            selects.append(f"ARRAY(SELECT jsonb_array_elements_text(u.{alias}))::{element_type}")
            params.append([None if (v := getattr(obj, field.attname)) is None else Jsonb(list(v))
                           for obj in objects])
        else:
            inputs.append(f"%s::{_unsized(str(field.cast_db_type(connection)))}[]")
            selects.append(f"u.{alias}")
            params.append([field.get_db_prep_save(field.pre_save(obj, True), connection) for obj in objects])
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    aliases = ", ".join(f"c{i}" for i in range(len(fields)))
    sql = (f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
           f"SELECT {', '.join(selects)} FROM unnest({', '.join(inputs)}) AS u({aliases})")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    for obj in objects:
        obj._state.adding = False
        obj._state.db = connection.alias


def _unsized(db_type: str) -> str:
    """varchar(255) -> varchar: an explicit cast to a sized type truncates
    silently; left unsized, the column's own type rejects an over-long value."""
    return re.sub(r"\(\d+\)", "", db_type)
