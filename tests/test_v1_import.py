"""Importing a V1 store (issue 57 item 4; seed 004 §3, §7.1, §8.2): the `embeddings` table and the
key-value profile, from tests/samples/v1/, through the writer, with counts, progress and resume."""

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memories.models import MemoryHistory, MemoryItem
from memories.porting import ImportFailed, checkpoint_path, write_checkpoint
from traits.models import Trait
from traits.v1_import import PlannedTrait, plan_embedding_row, plan_profile_entry

V1 = Path(__file__).parent / "samples" / "v1"


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("profile/language", "pt-PT", None),
    ("ui/theme", "dark", None),
    ("profile/occupation", "nurse", [("fact", "Occupation: nurse")]),
    ("profile/identity", {"name": "Ann"}, [("fact", "Name: Ann")]),
    ("profile/relationships", {"sister": "Clara", "partner": "Ben"},
     [("fact", "Sister: Clara"), ("fact", "Partner: Ben")]),
    ("profile/interests", ["hiking", "film"], [("preference", "hiking"), ("preference", "film")]),
    ("profile/preferences", "short answers", [("preference", "short answers")]),
    ("profile/personality", "calm", [("core", "calm")]),
    ("profile/values", ["honesty"], [("core", "honesty")]),
    ("profile/pets", "a cat called Miso", [("fact", "Pets: a cat called Miso")]),
    ("profile/interests", [], []),
])
def test_each_profile_key_goes_where_seed_004_puts_it(key, value, expected):
    planned = plan_profile_entry({"user_id": "u", "key": key, "value": value}, 1)
    if expected is None:
        assert planned is None
        return
    assert [(p.subtype if isinstance(p, PlannedTrait) else p.memory_type, p.text) for p in planned] == expected
    for trait in (p for p in planned if isinstance(p, PlannedTrait)):
        assert (trait.stage, trait.confidence) == ("emerging", 0.4)


@pytest.mark.parametrize(("row", "expected"), [
    ({"memory_type": "general"}, ("fact", "active")),
    ({"memory_type": "fact", "superseded_by": "x"}, ("fact", "archived")),
    ({"memory_type": "fact", "valid_until": "2024-01-01T00:00:00Z"}, ("fact", "archived")),
    ({"memory_type": "episodic"}, ("episodic", "active")),
    ({"memory_type": "document"}, ("document", "active")),
    ({"memory_type": "insight"}, ("trait", "trend")),
    ({"memory_type": "trait", "metadata": {"trait_subtype": "core", "trait_stage": "core", "trait_confidence": 0.9}},
     ("trait", "core")),
    ({"memory_type": "trait", "superseded_by": "x", "metadata": {"trait_subtype": "core"}}, None),
])
def test_each_embeddings_row_goes_where_seed_004_puts_it(row, expected):
    planned = plan_embedding_row({"id": "1", "user_id": "u", "content": "Some words.", **row}, 1)
    if expected is None:
        assert planned is None
    elif isinstance(planned, PlannedTrait):
        assert ("trait", planned.stage) == expected
    else:
        assert (planned.spec.memory_type, planned.spec.status) == expected


@pytest.mark.parametrize(("row", "complaint"), [
    ({"memory_type": "memo"}, "not a V1 type"),
    ({"memory_type": "trait", "metadata": {"trait_subtype": "mood"}}, "trait_subtype"),
    ({"memory_type": "trait", "metadata": {"trait_subtype": "core", "trait_confidence": 3}}, "trait_confidence"),
    ({"memory_type": "fact", "content": " "}, "no text"),
    ({"memory_type": "fact", "user_id": ""}, "user_id"),
])
def test_a_bad_row_is_refused_naming_its_line(row, complaint):
    with pytest.raises(ImportFailed, match=f"line 7: .*{complaint}"):
        plan_embedding_row({"id": "1", "user_id": "u", "content": "Some words.", **row}, 7)


def _import(tenant, directory: Path, *extra: str) -> str:
    out = io.StringIO()
    call_command("import_v1", "--tenant", tenant.name, "--dir", str(directory), *extra, stdout=out,
                 stderr=io.StringIO())
    return out.getvalue()


def test_a_v1_export_is_imported_through_the_writer_and_a_second_run_changes_nothing(tenant_a, api):
    first = _import(tenant_a, V1)
    assert "memories: read 12, added 12, unchanged 0" in first, first
    assert "traits: read 7, added 7, unchanged 0" in first, first
    assert "profile keys kept as configuration (not memories): 2" in first
    ann = MemoryItem.objects.filter(tenant=tenant_a, user_id="u-ann")
    assert ann.get(text="Ann lives in Lisbon.").status == "archived"  # replaced in V1
    assert ann.get(text="Ann moved to Porto in 2024.").memory_type == "fact"  # general -> fact
    assert ann.get(text="Occupation: nurse at Santo António hospital").data["v1_key"] == "profile/occupation"
    assert MemoryItem.objects.get(tenant=tenant_a, user_id="u-bo", memory_type="document").data["file_name"] == "q3.pdf"
    traits = {t.memory.text: t for t in Trait.objects.filter(tenant=tenant_a, user_id="u-ann")}
    assert (traits["Ann tends to plan trips weeks ahead."].stage) == "trend"  # insight -> trend
    kept = traits["Ann prefers short, direct answers."]
    assert (kept.subtype, kept.stage, kept.confidence, kept.context) == ("preference", "established", 0.72, "work")
    assert (traits["calm under pressure"].subtype, traits["hiking"].subtype) == ("core", "preference")
    assert not MemoryItem.objects.filter(text__icontains="pt-PT").exists()  # language is configuration
    # every memory came through the writer: an ADD in its history naming the import
    assert set(MemoryHistory.objects.filter(tenant=tenant_a, event="ADD").values_list("actor", flat=True)) \
        == {"import:v1"}
    second = _import(tenant_a, V1)
    assert "added 0, unchanged 12" in second and "traits: read 7, added 0, unchanged 7" in second, second


def test_an_interrupted_import_resumes_after_its_last_batch(tenant_a, tmp_path, api):
    directory = tmp_path / "v1"
    shutil.copytree(V1, directory)
    # as if a run with batches of 4 had committed two batches of memories and then stopped
    _import(tenant_a, directory, "--batch-size", "4")
    MemoryItem.objects.filter(tenant=tenant_a).delete()
    write_checkpoint(checkpoint_path(tenant_a.name, "v1-memories", str(directory.resolve())), 8)
    write_checkpoint(checkpoint_path(tenant_a.name, "v1-traits", str(directory.resolve())), 8)
    resumed = _import(tenant_a, directory, "--batch-size", "4")
    assert "memories: read 12, added 4" in resumed and "skipped (already imported) 8" in resumed, resumed
    assert MemoryItem.objects.filter(tenant=tenant_a).count() == 4
    restarted = _import(tenant_a, directory, "--restart")
    assert "memories: read 12, added 8, unchanged 4" in restarted, restarted


def test_a_missing_export_is_refused(tenant_a, tmp_path):
    with pytest.raises(CommandError, match="embeddings.jsonl"):
        _import(tenant_a, tmp_path)
