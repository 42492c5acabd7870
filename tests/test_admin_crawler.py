"""A crawler over every admin changelist: each filter parameter the page
offers (and the usual list parameters) with junk values. No server error."""

import re
from html import unescape
from urllib.parse import parse_qsl, urlencode

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from tests.conftest import converse
from tests.figures import record

JUNK = ["zzz", "abc", "99999999999", "-1", "1e309", "2026-13-45", "' OR 1=1 --", "\x00", "é" * 300, "[]", "None",
        "9" * 40]
LIST_PARAMETERS = ["o", "p", "q", "e", "all", "_to_field", "_popup"]


@pytest.mark.slow
def test_no_changelist_answers_junk_filters_with_a_server_error(api, tenant_a, operator):
    api.remember("alice", "Alice likes tea.", tags=["drink"])
    converse(api, ["I think I might try pottery classes."])
    client = Client(raise_request_exception=False)
    client.force_login(operator("root", superuser=True))
    tried, errors, parameters = 0, [], set()
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        page = client.get(url)
        assert page.status_code == 200, url
        names = {name for href in re.findall(r'href="\?([^"]*)"', page.content.decode())
                 for name, _ in parse_qsl(unescape(href))}
        parameters |= {f"{url}:{n}" for n in names}
        for name in sorted(names | set(LIST_PARAMETERS)):
            for junk in JUNK:
                response = client.get(f"{url}?{urlencode({name: junk})}")
                tried += 1
                if response.status_code >= 500:
                    errors.append(f"{url}?{name}={junk[:20]!r} -> {response.status_code}")
    record("admin crawler: changelists", len(admin.site._registry))
    record("admin crawler: filter parameters found", len(parameters))
    record("admin crawler: requests with junk values", tried)
    record("admin crawler: server errors", len(errors))
    assert errors == [], "\n".join(errors)


# Lookups and values a person might paste into an admin list's address: issue 55 found `__regex` with
# `(((` and lookups on the search vector answering 500.
LOOKUPS = ["", "exact", "iexact", "icontains", "regex", "iregex", "gt", "lte", "in", "isnull", "range", "year",
           "month", "date", "search", "unaccent", "trigram_similar", "contained_by", "overlap", "has_key", "len", "zzz"]
JUNK_VALUES = ["(((", "zzz", "1e309", "99999999999", "9" * 40, "2026-13-45", "\x00", "a,b", "-1", "1,2", "", "["]


@pytest.mark.parametrize(("internal_type", "lookup", "value", "allowed"), [
    ("CharField", "", "alice", True), ("TextField", "icontains", "tea", True), ("TextField", "regex", "(((", False),
    ("TextField", "iregex", "tea", False), ("TextField", "unaccent", "x", False),
    ("CharField", "exact", "a\x00", False),
    ("SearchVectorField", "", "tea", False), ("SearchVectorField", "exact", "x", False),
    ("ArrayField", "", "drink", False), ("JSONField", "has_key", "x", False), ("VectorField", "", "[1]", False),
    ("IntegerField", "", "12", True), ("IntegerField", "in", "1,2,3", True), ("IntegerField", "in", "9" * 40, False),
    ("IntegerField", "gt", "2147483648", False), ("BigIntegerField", "gt", "2147483648", True),
    ("SmallIntegerField", "", "40000", False), ("FloatField", "gte", "0.5", True),
    ("FloatField", "range", "1,2", False),
    ("DateTimeField", "gte", "2026-01-01", True), ("DateTimeField", "year", "2026", True),
    ("DateTimeField", "year", "99999999999", False), ("DateTimeField", "month", "13", False),
    ("DateTimeField", "contained_by", "x", False), ("BooleanField", "exact", "1", True),
    ("BooleanField", "isnull", "True", True), ("UUIDField", "in", "a,b", True),
    ("UUIDField", "startswith", "a", False)])
def test_which_lookups_an_admin_list_takes(internal_type, lookup, value, allowed):
    from memories.admin.lookups import lookup_problem

    assert (lookup_problem(internal_type, lookup, value) is None) is allowed


@pytest.mark.slow
def test_junk_lookups_on_every_column_are_a_4xx_never_a_5xx(api, tenant_a, operator):
    """Every changelist, every column (through a relation too), a sample of lookups with junk values: a
    lookup the list does not take is a 400 (DisallowedModelAdminLookup), a junk value for one it takes
    a redirect (?e=1) or an empty list; never a server error."""
    import zlib

    from django.db import transaction

    api.remember("alice", "Alice likes tea.", tags=["drink"])
    converse(api, ["I think I might try pottery classes. My mum Sheila lives in Leeds."])
    client = Client(raise_request_exception=False)
    client.force_login(operator("root", superuser=True))
    tried, errors, codes = 0, [], {}
    for name, junk in [("text__regex", "((("), ("search_vector", "tea"), ("search_vector__exact", "x"),
                       ("search_vector__regex", "((("), ("embedding_state__regex", "(((")]:  # the issue's own
        response = client.get(f"{reverse('admin:memories_memoryitem_changelist')}?{urlencode({name: junk})}")
        assert response.status_code == 400, (name, response.status_code)
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        columns = [f.name for f in model._meta.get_fields() if getattr(f, "concrete", False)] + ["tenant__name"]
        for column in columns:  # per column: regex and five other lookups, one junk value each (by a hash)
            picked = sorted(LOOKUPS, key=lambda lookup: zlib.crc32(f"{model.__name__}.{column}.{lookup}".encode()))
            for lookup in ["regex", *[lookup for lookup in picked if lookup != "regex"][:5]]:
                name = f"{column}__{lookup}" if lookup else column
                for junk in [JUNK_VALUES[zlib.crc32(name.encode()) % len(JUNK_VALUES)]]:
                    with transaction.atomic():  # a server error's aborted transaction must not spill over
                        response = client.get(f"{url}?{urlencode({name: junk})}")
                        tried += 1
                        codes[response.status_code] = codes.get(response.status_code, 0) + 1
                        if response.status_code >= 500:
                            errors.append(f"{url}?{name}={junk[:20]!r} -> {response.status_code}")
                            transaction.set_rollback(True)
    record("admin crawler: junk lookups tried", tried)
    record("admin crawler: junk lookups answered 4xx", sum(n for code, n in codes.items() if 400 <= code < 500))
    assert errors == [], "\n".join(errors[:50])
    assert codes.get(400, 0) > tried / 2, codes
