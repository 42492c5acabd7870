"""Where a request's time goes: exclusive phases, the Server-Timing header, the bench's reading of it."""

import time

import pytest
from django.test import override_settings

from memories.timing import current_timeline, parse_server_timing, phase, server_timing, timeline_begin, timeline_end


def _sleep_ms(ms: float) -> None:
    time.sleep(ms / 1000)


def test_a_phase_inside_another_is_counted_once():
    timeline, token = timeline_begin()
    try:
        with phase("work"):
            _sleep_ms(10)
            with phase("embed"):
                _sleep_ms(20)
            with phase("work"):  # the same name nested adds to itself, not twice
                _sleep_ms(5)
        _sleep_ms(5)
    finally:
        timeline_end(token)
    assert 14 <= timeline.exclusive_ms["work"] < 30
    assert 19 <= timeline.exclusive_ms["embed"] < 35
    total = timeline.total_ms()
    assert abs(sum(timeline.exclusive_ms.values()) + timeline.rest_ms() - total) < 1.0
    assert timeline.rest_ms() >= 4


def test_outside_a_request_nothing_is_timed():
    assert current_timeline() is None
    with phase("work"):
        pass
    assert current_timeline() is None


@pytest.mark.parametrize(("header", "parsed"), [
    ("total;dur=3.5, auth;dur=0.20", {"total": 3.5, "auth": 0.2}),
    ('db;dur=1.25;desc="3 statements", rest;dur=0', {"db": 1.25, "rest": 0.0}),
    ("cache;desc=hit", {}),
    ("", {}),
])
def test_the_header_reads_back(header, parsed):
    assert parse_server_timing(header) == parsed


def test_the_header_lists_phases_in_order_then_rest_and_db():
    timeline, token = timeline_begin()
    try:
        with phase("render"):
            pass
        with phase("auth"):
            pass
        header = server_timing(timeline)
    finally:
        timeline_end(token)
    names = [part.split(";")[0].strip() for part in header.split(",")]
    assert names == ["total", "auth", "render", "rest", "db"]


def test_an_answer_says_where_its_time_went_only_when_asked(api):
    memory = api.remember("ana", "Ana drinks green tea every morning.")
    assert "Server-Timing" not in api.get(f"memories/{memory['id']}")
    with override_settings(SERVER_TIMING=True):
        read = api.get(f"memories/{memory['id']}")
        search = api.post("memories/search", {"user_id": "ana", "query": "tea", "mode": "keyword"})
    phases = parse_server_timing(read["Server-Timing"])
    assert {"total", "auth", "ratelimit", "work", "serialize", "render", "log", "rest", "db"} <= set(phases)
    assert 'desc="' in read["Server-Timing"]
    parts = sum(value for name, value in phases.items() if name not in {"total", "db"})
    assert parts == pytest.approx(phases["total"], abs=0.5)  # the phases add up to the whole
    assert phases["db"] > 0  # the memory's own query at least
    searched = parse_server_timing(search["Server-Timing"])
    assert {"validate", "work", "serialize"} <= set(searched)


def test_a_context_reports_its_question_embedded_alongside_and_its_phases_still_add_up(api):
    api.remember("ana", "Ana drinks green tea every morning.")
    with override_settings(SERVER_TIMING=True):
        answer = api.post("context", {"user_id": "ana", "query": "what does Ana drink?"})
    phases = parse_server_timing(answer["Server-Timing"])
    assert phases["embed-alongside"] > 0  # the question's vector, made on a thread while the profile is read
    parts = sum(value for name, value in phases.items() if name not in {"total", "db", "embed-alongside"})
    assert parts == pytest.approx(phases["total"], abs=0.5)
