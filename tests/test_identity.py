"""One spelling per identity: ids are NFKC-normalised on the way in, ids with
invisible characters are refused, and dedupe ignores invisible characters."""

import logging
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import call_command

from memories.identity import normalize_identifier, strip_invisible
from memories.models import MemoryItem
from memories.text import content_hash
from memories.writing import users_write_lock

NFC = "jos\u00e9"
SAME_USER = [NFC, "jose\u0301", "\uff4a\uff4f\uff53\u00e9"]  # NFC, NFD, fullwidth letters
REFUSED = ["jo\u200bs\u00e9", "\ufeffjos\u00e9", "\u200fjos\u00e9", "jos\u00e9\u202e", "jo\x07se",
           # default-ignorable code points and characters drawn as nothing (fillers, blank Braille)
           "jo\u034fs\u00e9", "jos\u00e9\u3164", "\uffa0jos\u00e9", "jo\u2800s\u00e9", "jo\u115fse", "jo\u1160se",
           "jo\u00adse", "jo\ufe0fse", "jo\U000e0041se"]


@pytest.mark.parametrize("spelling", SAME_USER)
def test_equivalent_spellings_are_one_id(spelling):
    assert normalize_identifier(spelling) == NFC


@pytest.mark.parametrize("spelling", REFUSED)
def test_ids_with_invisible_or_control_characters_are_refused(spelling, api):
    response = api.post("memories", {"user_id": spelling, "text": "Likes tea."})
    assert response.status_code == 400 and "user_id" in response.json()
    for field in ("agent_id", "session_id", "group_id"):
        response = api.post("memories", {"user_id": "ok", "text": "Likes tea.", field: spelling})
        assert response.status_code == 400 and field in response.json()
    assert api.delete(f"users/{quote(spelling)}/memories").status_code == 400
    assert api.get(f"memories?user_id={quote(spelling)}").status_code == 400
    assert api.post("conversations", {"user_id": "u", "session_id": "s", "participants": {"X": spelling},
                                      "messages": [{"role": "user", "content": "hi"}]}).status_code == 400


def test_every_spelling_of_one_user_is_erased_together(api):
    for number, spelling in enumerate(SAME_USER):
        api.remember(spelling, f"Fact number {number}.")
    assert set(MemoryItem.objects.values_list("user_id", flat=True)) == {NFC}
    assert len(api.get(f"memories?user_id={quote(SAME_USER[1])}").json()["results"]) == 3
    assert api.delete(f"users/{quote(SAME_USER[2])}/memories").json()["memories"] == 3
    assert not MemoryItem.objects.exists()


@pytest.mark.parametrize("invisible", ["\u200b", "\u200d", "\u200e", "\u202a", "\ufeff", "\u2060"])
def test_text_dedupe_ignores_invisible_characters(invisible, api):
    api.remember("alice", "Alice likes green tea.")
    twin = api.post("memories", {"user_id": "alice", "text": f"Alice likes{invisible} green tea."}).json()
    assert twin["operation"] == "NOOP"
    assert strip_invisible(f"a{invisible}b") == "ab" and content_hash(f"a{invisible}b") == content_hash("ab")


def test_the_normalize_command_renames_old_ids_and_reports_collisions(api, tenant_a):
    api.remember("rene", "René likes chess.")
    api.remember("other", "Other likes chess.")
    api.remember("zoe", "Zoë likes go.")
    # Rows written before ids were normalised: an NFD id, and one that collides with an existing user
    # (as any writer does, the users' write locks first).
    users_write_lock(tenant_a.id, ["rene", "rene\u0301", "other", "\uff5a\uff4f\uff45"])
    MemoryItem.objects.filter(user_id="rene").update(user_id="rene\u0301")
    MemoryItem.objects.filter(user_id="other").update(user_id="\uff5a\uff4f\uff45")  # fullwidth "zoe"
    out = StringIO()
    call_command("normalize_ids", "--dry-run", stdout=out, stderr=StringIO())
    assert "collisions: 1" in out.getvalue() and MemoryItem.objects.filter(user_id="rene\u0301").exists()
    out = StringIO()
    call_command("normalize_ids", stdout=out, stderr=StringIO())
    assert "COLLISION" in out.getvalue() and "ids renamed: 1" in out.getvalue()
    assert MemoryItem.objects.filter(user_id="ren\u00e9").count() == 1
    assert MemoryItem.objects.filter(user_id="\uff5a\uff4f\uff45").exists()  # reported, not merged


def test_request_logs_carry_a_keyed_digest_of_a_user_id_never_the_id(api, caplog):
    from memories.identity import identifier_digest

    api.remember("josé.garcía", "Likes tea.")
    with caplog.at_level(logging.INFO, logger="memory.requests"):
        caplog.clear()
        assert api.get("users/jos%C3%A9.garc%C3%ADa/traits").status_code == 200
        api.post("sessions/s-josé-1/end", {"user_id": "josé.garcía"})
        api.get("memories?user_id=jos%C3%A9.garc%C3%ADa")
    lines = [(r.getMessage(), getattr(r, "path", "")) for r in caplog.records if r.name == "memory.requests"]
    assert len(lines) == 3 and not any("josé" in message or "josé" in path for message, path in lines), lines
    assert lines[0][1] == f"/api/v1/users/~{identifier_digest('josé.garcía')}/traits"
    assert lines[1][1] == f"/api/v1/sessions/~{identifier_digest('s-josé-1')}/end"
    assert identifier_digest("josé.garcía") != identifier_digest("jose.garcia")


def test_no_request_line_carries_a_user_id_matched_route_or_not(api, caplog, key_a):
    """Issue 55: unmatched routes logged their raw path (user ids in it), and Django's own line for a
    failed request carried the request's repr, query string included. Every line through the configured
    formatter and filters: a path no route matched is not shown, text path parameters are digests,
    numbers and UUIDs are kept, and the query string is never written."""
    from django.test import RequestFactory
    from django.utils.log import log_response

    from memory_project.observability import JsonFormatter, RequestIdFilter, RequestPathFilter

    api.remember("someone", "Likes tea.")  # the first task sets Celery's logging up: before the capture
    with caplog.at_level(logging.INFO):
        caplog.clear()
        api.get("users/priya.sharma/nothing-here?user_id=priya.sharma")  # unmatched
        api.get("nope/priya.sharma")
        api.client.get("/v1/memories/priya.sharma/history/", HTTP_AUTHORIZATION=f"Token {key_a.raw_key}")
        api.client.delete("/v1/memories/?user_id=priya.sharma&filters=" + "[" * 1300,
                          HTTP_AUTHORIZATION=f"Token {key_a.raw_key}")
        api.get("memories/00000000-0000-0000-0000-000000000000")
        request = RequestFactory().get("/api/v1/users/priya.sharma/traits?user_id=priya.sharma")
        log_response("%s: %s", "Internal Server Error", request.path, request=request,
                     response=type("R", (), {"status_code": 500})(), logger=logging.getLogger("django.request"))
    records = [r for r in caplog.records if r.name in ("memory.requests", "django.request")]
    lines = []
    for record in records:
        RequestIdFilter().filter(record)
        RequestPathFilter().filter(record)
        lines.append(JsonFormatter().format(record))
    assert len(lines) == 6 and not any("priya" in line for line in lines), lines
    assert all('"path": "(unmatched)"' in line for line in lines[:2]), lines
    assert "00000000-0000-0000-0000-000000000000" in lines[4] and " 400" in lines[3], lines


def test_celery_task_lines_carry_a_keyed_digest_of_a_user_id_never_the_id(tenant_a, caplog):
    """Issue 43: Celery's line for reflect_user showed the raw user id in its arguments, and again in
    its return value when another cycle was running. Both go through the configured JSON formatter."""
    from memories.identity import identifier_digest
    from memory_project.celery import app
    from memory_project.observability import JsonFormatter, TaskArgumentsFilter
    from reflection.models import ReflectionCycle

    ReflectionCycle.objects.create(tenant=tenant_a, user_id="josé.garcía", trigger="requested", status="running")
    with caplog.at_level(logging.INFO, logger="celery.app.trace"):
        caplog.clear()
        app.tasks["reflection.tasks.reflect_user"].apply(args=(tenant_a.id, "josé.garcía", "requested"))
        app.tasks["reflection.tasks.reflect_if_important"].apply(args=(tenant_a.id, ["josé.garcía", "bo"]))
    lines = [JsonFormatter().format(r) for r in caplog.records if r.name == "celery.app.trace"]
    assert len(lines) == 2 and not any("josé" in line or "jos\\u00e9" in line for line in lines), lines
    assert f"~{identifier_digest('josé.garcía')}" in lines[0] and "already running" in lines[0]
    assert f"~{identifier_digest('bo')}" in lines[1]
    # A repr Celery cut short names no id it can be told apart by: the arguments are not shown.
    record = logging.LogRecord("celery.app.trace", logging.INFO, "", 0, "Task %(name)s: %(args)s",
                               None, None)
    record.args = {"name": "reflection.tasks.reflect_user", "args": "(1, 'josé.garc...", "return_value": "{}"}
    TaskArgumentsFilter().filter(record)
    assert "josé" not in record.getMessage() and "not shown" in record.getMessage()
