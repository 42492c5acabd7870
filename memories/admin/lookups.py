"""Which query-string lookups an admin list takes (?status=active, ?created_at__gte=..., ?tenant__id__exact=2):
the plain comparisons a person filters by, on columns of ordinary kinds, with values the database can hold.
Anything else is refused before a query is made (Django's DisallowedModelAdminLookup: a 400), never a
database error: issue 55 found 45 of 4,992 junk lookups answering 500 (`text__regex=(((`, lookups on the
search vector), and sampling more found `__range`, `__unaccent`, `__trigram_similar`, `__contained_by`,
`__year=99999999999` and `__in` past an integer column's range doing the same.

`lookup_problem` is the rule (pure, table-tested in tests/test_admin_crawler.py); `SafeLookups` applies it
to every admin list (tenant-scoped admins and the accounts' pages)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models.constants import LOOKUP_SEP

TEXT, NUMBER, TIME, BOOL, UUID = "text", "number", "time", "bool", "uuid"
LOOKUPS = {
    TEXT: frozenset({"exact", "iexact", "contains", "icontains", "startswith", "istartswith", "endswith",
                     "iendswith", "in", "isnull"}),
    NUMBER: frozenset({"exact", "in", "isnull", "gt", "gte", "lt", "lte"}),
    TIME: frozenset({"exact", "isnull", "gt", "gte", "lt", "lte", "date", "year", "month", "day"}),
    BOOL: frozenset({"exact", "isnull"}),
    UUID: frozenset({"exact", "in", "isnull"}),
}
# The integer columns' ranges (PostgreSQL's smallint, integer, bigint): a value past them is a database error.
INTEGER_BITS = {"SmallIntegerField": 15, "PositiveSmallIntegerField": 15, "IntegerField": 31,
                "PositiveIntegerField": 31, "AutoField": 31, "BigIntegerField": 63, "PositiveBigIntegerField": 63,
                "BigAutoField": 63, "SmallAutoField": 15}
KINDS = {**{name: NUMBER for name in INTEGER_BITS}, "FloatField": NUMBER, "DecimalField": NUMBER,
         "CharField": TEXT, "TextField": TEXT, "SlugField": TEXT, "EmailField": TEXT, "URLField": TEXT,
         "DateField": TIME, "DateTimeField": TIME, "BooleanField": BOOL, "UUIDField": UUID}
PARTS_OF_A_DATE = {"year": (1, 9999), "month": (1, 12), "day": (1, 31)}


def lookup_problem(internal_type: str, lookup: str, value: str) -> str | None:
    """Pure: why a list may not filter a column of `internal_type` (Django's) by `lookup` ("" = exact)
    with `value`, or None when it may. Columns of other kinds (arrays, JSON, the search vector, vectors)
    take no lookup at all; integers must fit their column; a date part must be a date's."""
    kind = KINDS.get(internal_type)
    if kind is None:
        return f"a {internal_type} column is not filtered from the address bar"
    lookup = lookup or "exact"
    if lookup not in LOOKUPS[kind]:
        return f"__{lookup} is not a filter of a {kind} column"
    if "\x00" in value:
        return "a value may not hold a NUL character"
    if lookup in PARTS_OF_A_DATE:
        low, high = PARTS_OF_A_DATE[lookup]
        return None if value.isdigit() and low <= int(value) <= high else f"__{lookup} takes {low} to {high}"
    if internal_type in INTEGER_BITS and lookup in ("exact", "in", "gt", "gte", "lt", "lte"):
        limit = 2 ** INTEGER_BITS[internal_type]
        for part in value.split(",") if lookup == "in" else [value]:
            try:
                number = int(part)
            except ValueError:
                return f"{part!r} is not a whole number"
            if not -limit <= number < limit:
                return f"{part} is out of the column's range"
    return None


def column_and_lookup(model, lookup: str) -> tuple[models.Field, str] | None:
    """The column a query-string lookup ends on (through relations: tenant__id__exact, a foreign key alone
    as its target's key) and the lookup left on it; None when its first part names no field."""
    parts = lookup.split(LOOKUP_SEP)
    field = None
    for position, part in enumerate(parts):
        try:
            field = model._meta.get_field(part)
        except FieldDoesNotExist:
            if field is None:
                return None
            return field, LOOKUP_SEP.join(parts[position:])
        if field.is_relation and field.related_model is not None:
            model = field.related_model
            if position == len(parts) - 1 or parts[position + 1] not in {f.name for f in model._meta.get_fields()}:
                target = model._meta.pk
                return target, LOOKUP_SEP.join(parts[position + 1:])
            continue
        return field, LOOKUP_SEP.join(parts[position + 1:])
    return None


class SafeLookups(admin.ModelAdmin):
    """A ModelAdmin whose lists take a lookup is allowed only when `lookup_problem` finds none (then Django's own
    rule still applies). Its first part naming no field (a list filter's own parameter) is Django's."""

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        found = column_and_lookup(self.model, lookup)
        if found is not None and lookup_problem(found[0].get_internal_type(), found[1], str(value)) is not None:
            return False
        return super().lookup_allowed(lookup, value, request)
