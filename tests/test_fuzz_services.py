"""Property tests of the service functions: arbitrary Unicode, empty and huge
strings, odd JSON, edge timestamps. A valid call never raises anything but a
domain error, and what is saved reads back as saved."""

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.errors import ServiceError
from memories.models import MemoryItem
from memories.search import SearchQuery, memory_search
from memories.writing import MemorySpec, memory_create, memory_merge, memory_supersede

pytestmark = pytest.mark.slow
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

texts = st.text(min_size=1, max_size=300).filter(lambda t: t.strip())
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(scalars, lambda children: st.lists(children, max_size=3)
                           | st.dictionaries(st.text(max_size=8), children, max_size=3), max_leaves=10)
moments = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))


@FAST
@given(text=texts, data=st.dictionaries(st.text(max_size=10), json_values, max_size=4), valid_at=moments,
       importance=st.floats(0, 1), tags=st.lists(st.text(min_size=1, max_size=20), max_size=5))
def test_save_reads_back_what_was_saved(tenant_a, text, data, valid_at, importance, tags):
    import json

    spec = MemorySpec(user_id="fuzz", text=text, data=data, valid_at=valid_at, importance=importance, tags=tags)
    try:
        encoded, finite = json.dumps(data, allow_nan=False), True
    except ValueError:
        encoded, finite = json.dumps(data), False
    # what PostgreSQL cannot store: NUL characters, and NaN/Infinity in JSON
    has_nul = "\x00" in text or any("\x00" in t for t in tags) or "\\u0000" in encoded or not finite
    try:
        result = memory_create(tenant=tenant_a, actor="t", spec=spec)
    except ServiceError:
        assert has_nul  # refused as bad input, and only for the one thing PostgreSQL cannot store
        return
    assert not has_nul
    stored = MemoryItem.objects.get(id=result.memory.id)
    assert stored.text == result.memory.text and stored.valid_at == result.memory.valid_at


@FAST
@given(query=st.text(max_size=200), mode=st.sampled_from(["semantic", "keyword", "hybrid"]), as_of=st.none() | moments)
def test_search_never_crashes(tenant_a, query, mode, as_of):
    memory_create(tenant=tenant_a, actor="t", spec=MemorySpec(user_id="fuzz", text="Alice likes 绿茶 and émigré tea."))
    results = memory_search(tenant=tenant_a, query=SearchQuery(query=query or " ", user_id="fuzz", mode=mode,
                                                               as_of=as_of))
    assert all(r.memory.user_id == "fuzz" for r in results)


def test_a_huge_text_is_chunked_and_searchable(tenant_a, django_capture_on_commit_callbacks):
    text = "word " * 1590 + "needle"
    with django_capture_on_commit_callbacks(execute=True):
        memory = memory_create(tenant=tenant_a, actor="t", spec=MemorySpec(user_id="fuzz", text=text)).memory
    assert memory.vectors.count() > 10
    assert memory_search(tenant=tenant_a, query=SearchQuery(query="needle", user_id="fuzz", mode="keyword"))


@FAST
@given(first=texts, second=texts, replacement=texts)
def test_supersede_and_merge_keep_one_current_version(tenant_a, first, second, replacement):
    try:
        a = memory_create(tenant=tenant_a, actor="t", spec=MemorySpec(user_id="fz", text=first)).memory
        b = memory_create(tenant=tenant_a, actor="t", spec=MemorySpec(user_id="fz", text=second)).memory
        new = memory_supersede(tenant=tenant_a, memory_id=a.id, new_text=replacement, actor="t")
        merged = memory_merge(tenant=tenant_a, memory_ids=[new.id, b.id], merged_text=first + " " + second,
                              actor="t") if new.id != b.id else None
    except ServiceError:
        return  # a domain refusal (e.g. the text already exists) is a valid outcome, never a crash
    current = MemoryItem.objects.filter(user_id="fz", expired_at__isnull=True)
    assert len({m.content_hash for m in current}) == current.count()
    if merged:
        assert MemoryItem.objects.get(id=b.id).superseded_by_id == merged.id
