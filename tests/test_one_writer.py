"""Every change to a memory leaves a history row; traits are made by the trait
service only, keep their trait when edited, and dissolve one way. Every change, a trait's pin and stage
included, is the writer's one versioned change: each UPDATE row carries the next version."""

from memories.models import MemoryHistory, MemoryItem
from tests.conftest import converse
from traits import services
from traits.models import EvidenceKind, Trait, TraitStage


def test_a_trait_memory_cannot_be_posted(api):
    response = api.post("memories", {"user_id": "alice", "text": "Likes tea", "memory_type": "trait"})
    assert response.status_code == 400 and "reflect" in str(response.json()["memory_type"])
    batch = api.post("memories/batch", {"memories": [{"user_id": "alice", "text": "x", "memory_type": "trait"}]})
    assert batch.status_code == 400 and not MemoryItem.objects.exists()


def test_editing_a_trait_memory_keeps_its_trait(api, tenant_a):
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="test", stage="established", confidence=0.8)
    response = api.patch(f"memories/{trait.pk}", {"text": "Likes green tea"})
    assert response.status_code == 200, response.content
    trait.refresh_from_db()
    assert trait.memory.text == "Likes green tea" and trait.stage == "established"
    assert api.get(f"traits/{trait.pk}").json()["text"] == "Likes green tea"
    edit = MemoryHistory.objects.filter(memory_id=trait.pk, event="UPDATE").last()
    assert edit.old_text == "Likes tea" and edit.new_text == "Likes green tea"


def test_evidence_changes_are_in_the_history(tenant_a):
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="test")
    memory = MemoryItem.objects.create(tenant=tenant_a, user_id="alice", text="Alice drank tea.",
                                       content_hash="x", created_at=trait.memory.created_at,
                                       updated_at=trait.memory.updated_at)
    before = trait.memory.version
    services.trait_add_evidence(trait_id=trait.pk, memory=memory, kind=EvidenceKind.SUPPORTING, quality="A",
                                actor="reflection")
    trait.refresh_from_db()
    assert trait.memory.version == before + 1
    step = MemoryHistory.objects.filter(memory_id=trait.pk, event="UPDATE", actor="reflection").get()
    assert step.old_data["version"] == before and step.new_data["confidence"] == round(trait.memory.confidence, 4)


def test_a_trait_dissolved_by_evidence_archives_its_memory_like_every_other_dissolution(tenant_a):
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="behavior",
                                  actor="test", stage="candidate", confidence=0.35)
    for number in range(30):
        memory = MemoryItem.objects.create(tenant=tenant_a, user_id="alice", text=f"Alice refused tea {number}.",
                                           content_hash=f"h{number}", created_at=trait.memory.created_at,
                                           updated_at=trait.memory.updated_at)
        services.trait_add_evidence(trait_id=trait.pk, memory=memory, kind=EvidenceKind.CONTRADICTING,
                                    quality="A", actor="reflection")
        if Trait.objects.get(pk=trait.pk).stage == TraitStage.DISSOLVED:
            break
    trait.refresh_from_db()
    assert trait.stage == TraitStage.DISSOLVED
    assert trait.memory.status == "archived" and trait.memory.archived_at is not None
    assert MemoryHistory.objects.filter(memory_id=trait.pk, event="DELETE").exists()


def _versioned_rows(memory_id) -> list[MemoryHistory]:
    """The history rows of a memory that record a version step (creation rows aside)."""
    return [row for row in MemoryHistory.objects.filter(memory_id=memory_id).exclude(event="ADD")
            .order_by("created_at", "id") if row.new_data and "version" in row.new_data]


def _assert_one_row_per_version(memory: MemoryItem) -> None:
    """Every UPDATE row carries the next version, and every version after the first has exactly one row:
    a change that bumped the version without its row, or wrote a row without a bump, breaks the count."""
    memory.refresh_from_db()
    updates = MemoryHistory.objects.filter(memory_id=memory.id, event="UPDATE")
    assert updates.exists()
    for row in updates:
        assert row.old_data and row.new_data, (row.reason, row.old_data, row.new_data)
        assert row.new_data["version"] == row.old_data["version"] + 1, (row.reason, row.old_data, row.new_data)
    steps = [(row.old_data["version"], row.new_data["version"]) for row in _versioned_rows(memory.id)]
    assert steps == [(v, v + 1) for v in range(1, memory.version)], (memory.version, steps)


def test_every_change_to_a_trait_is_one_versioned_change(tenant_a):
    trait = services.trait_create(tenant=tenant_a, user_id="alice", text="Likes tea", subtype="preference",
                                  actor="test", stage="emerging", confidence=0.5)
    fact = MemoryItem.objects.create(tenant=tenant_a, user_id="alice", text="Alice drank tea.", content_hash="x",
                                     created_at=trait.memory.created_at, updated_at=trait.memory.updated_at)
    services.trait_add_evidence(trait_id=trait.pk, memory=fact, kind=EvidenceKind.SUPPORTING, quality="A",
                                actor="reflection")
    services.trait_pin(trait=trait, pinned=True, actor="operator")
    pin = MemoryHistory.objects.filter(memory_id=trait.pk, event="UPDATE", actor="operator").get()
    assert pin.old_data["pinned"] is False and pin.new_data["pinned"] is True
    services.trait_pin(trait=trait, pinned=False, actor="operator")
    services.trait_set_stage(trait=Trait.objects.get(pk=trait.pk), stage=TraitStage.ESTABLISHED, actor="operator",
                             reason="confirmed with the user")
    stage = MemoryHistory.objects.filter(memory_id=trait.pk, event="STAGE_CHANGE", actor="operator").get()
    assert stage.old_data["stage"] == "emerging" and stage.new_data["stage"] == "established"
    newer = MemoryItem.objects.create(tenant=tenant_a, user_id="alice", text="Alice drinks tea.", content_hash="y",
                                      created_at=trait.memory.created_at, updated_at=trait.memory.updated_at)
    services.trait_carry_support(trait_id=trait.pk, from_memory_ids=[str(fact.id)], to=[newer], actor="reflection",
                                 cycle_id=1)
    _assert_one_row_per_version(trait.memory)


def test_every_change_to_a_memory_is_one_versioned_change(api, settings):
    settings.CONVERSATION_EPISODES = True
    memory = api.remember("alice", "Alice has a cat.")
    assert api.patch(f"memories/{memory['id']}", {"importance": 0.9}).status_code == 200
    assert api.patch(f"memories/{memory['id']}", {"tags": ["pets"]}).status_code == 200
    assert api.patch(f"memories/{memory['id']}", {"expires_at": "2099-01-01T00:00:00Z"}).status_code == 200
    _assert_one_row_per_version(MemoryItem.objects.get(id=memory["id"]))
    # A new text and a new expiry together: the new version is written with its expiry, and its row says so.
    changed = api.patch(f"memories/{memory['id']}", {"text": "Alice has two cats.",
                                                     "expires_at": "2098-01-01T00:00:00Z"})
    assert changed.status_code == 200, changed.content
    new = MemoryItem.objects.get(text="Alice has two cats.")
    assert new.expires_at.year == 2098 and new.version == MemoryItem.objects.get(id=memory["id"]).version + 1
    added = MemoryHistory.objects.get(memory_id=new.id, event="ADD")
    assert added.new_data["expires_at"].startswith("2098-01-01") and added.new_data["version"] == new.version
    converse(api, ["I adopted a beagle called Pixel."], session_id="walks")
    converse(api, ["Pixel loves the beach."], session_id="walks")
    episode = MemoryItem.objects.get(tags__contains=["episode"])
    _assert_one_row_per_version(episode)  # an episode's growth records its version, not its words twice
