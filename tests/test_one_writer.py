"""Every change to a memory leaves a history row; traits are made by the trait
service only, keep their trait when edited, and dissolve one way."""

from memories.models import MemoryHistory, MemoryItem
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
