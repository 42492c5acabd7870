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
