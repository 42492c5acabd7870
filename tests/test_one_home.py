"""One home for each rule that used to be copied (issue 44, item 2), and a check that its users agree:
the stages shown to agents (the traits API, context, the search's boost and filter, the decay refresh's
SQL), who reads conversations (the extractor and the reflector), the merged text offered and the merged
text written, and the walk up a trait's parents."""

import html
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from memories import context, vocabulary
from memories.extraction import LLMExtractor, MeaningExtractor, get_extractor, habits, load_prompt, rules
from memories.models import MemoryItem
from memories.search import SearchPlan, SearchQuery, memory_search, scoring
from memories.writing import MemorySpec, memory_create, memory_merge, merged_text_of
from reflection import reflectors
from reflection.llm_reflector import LLMReflector, get_reflector
from reflection.reflectors import MeaningReflector
from traits import selectors, services
from traits.lifecycle import MAX_PARENT_DEPTH
from traits.models import Trait, TraitStage

ALL_STAGES = (TraitStage.TREND, TraitStage.CANDIDATE, TraitStage.EMERGING, TraitStage.ESTABLISHED, TraitStage.CORE,
              TraitStage.DISSOLVED)


def test_the_stages_shown_to_agents_are_one_list():
    shown = vocabulary.TRAIT_STAGES_SHOWN
    assert selectors.ACTIVE_STAGES is shown and scoring.ACTIVE_TRAIT_STAGES is shown
    assert context.TRAIT_STAGES_SHOWN is shown and set(scoring.STAGE_BOOST) == set(shown)
    assert set(shown) < set(TraitStage.values) and TraitStage.DISSOLVED == vocabulary.DISSOLVED
    assert list(TraitStage.values) == [*vocabulary.TRAIT_STAGE_ORDER, vocabulary.DISSOLVED]


def _a_trait_at_every_stage(tenant) -> dict[str, Trait]:
    return {stage: services.trait_create(tenant=tenant, user_id="alice", text=f"Alice drinks oolong tea ({stage})",
                                         subtype="preference", actor="test", stage=stage, confidence=0.9)
            for stage in ALL_STAGES}


def test_the_api_the_context_and_the_search_show_the_same_stages(tenant_a):
    traits = _a_trait_at_every_stage(tenant_a)
    shown = set(vocabulary.TRAIT_STAGES_SHOWN)
    by_api = {t.stage for group in selectors.traits_of_user(tenant=tenant_a, user_id="alice").values() for t in group}
    by_context = {line.stage for line in context.trait_lines(tenant_a, "alice", limit=20)}
    found = memory_search(tenant=tenant_a, plan=SearchPlan(), query=SearchQuery(
        query="oolong tea", user_id="alice", limit=20, memory_types=["trait"]))
    by_search = {traits_by_memory.stage for r in found
                 for traits_by_memory in [Trait.objects.get(memory_id=r.memory.id)]}
    assert by_api == by_context == by_search == shown, (by_api, by_context, by_search)
    assert {t.stage for t in traits.values()} == set(ALL_STAGES)


def test_the_decay_refresh_leaves_only_the_dissolved_alone(tenant_a):
    traits = _a_trait_at_every_stage(tenant_a)
    Trait.objects.update(decayed_at=None)
    assert services.traits_refresh_decay() == len(ALL_STAGES) - 1
    left = {t.stage for t in Trait.objects.filter(pk__in=[t.pk for t in traits.values()], decayed_at=None)}
    assert left == {TraitStage.DISSOLVED}


@pytest.mark.parametrize(("provider", "llm_url"), [
    ("", ""), ("", "http://127.0.0.1:9/v1"), ("llm", "http://127.0.0.1:9/v1"), ("meaning", ""), ("rules", ""),
    ("meaning", "http://127.0.0.1:9/v1"), ("rules", "http://127.0.0.1:9/v1"),
])
def test_the_extractor_and_the_reflector_read_with_the_same_provider(settings, provider, llm_url):
    settings.EXTRACTION_PROVIDER, settings.LLM_BASE_URL = provider, llm_url
    extractor, reflector = get_extractor(), get_reflector()
    pairs = {LLMExtractor: LLMReflector, MeaningExtractor: MeaningReflector}
    assert type(extractor) in pairs and isinstance(reflector, pairs[type(extractor)]), (extractor, reflector)


def test_the_merged_text_offered_is_the_merged_text_written(tenant_a, operator):
    first = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="alice", text="Alice has a cat."),
                          actor="test").memory
    second = memory_create(tenant=tenant_a, spec=MemorySpec(user_id="alice", text="Alice's cat is named Miso"),
                           actor="test").memory
    offered = merged_text_of([second, first])
    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))
    form = reviewer.post(reverse("admin:memories_memoryitem_changelist"),
                         {"action": "merge_selected", "_selected_action": [first.id, second.id]})
    assert form.status_code == 200 and offered in html.unescape(form.content.decode())
    merged = memory_merge(tenant=tenant_a, memory_ids=[first.id, second.id], merged_text=None, actor="test")
    assert merged.text == offered == "Alice has a cat; Alice's cat is named Miso."
    assert MemoryItem.objects.get(id=first.id).superseded_by_id == merged.id


def test_the_depth_a_lift_counts_is_the_chain_the_api_shows(tenant_a):
    chain: list[Trait] = []
    for level in range(MAX_PARENT_DEPTH + 2):
        chain.append(services.trait_create(tenant=tenant_a, user_id="alice", text=f"Level {level} of a habit",
                                           subtype="behavior", actor="test", parent=chain[-1] if chain else None))
    for trait in chain:
        walked = selectors.trait_parent_chain(trait)
        assert services.trait_depth(trait) == len(walked) == min(chain.index(trait), MAX_PARENT_DEPTH)
        assert [t.pk for t in walked] == [t.pk for t in reversed(chain[:chain.index(trait)])][:MAX_PARENT_DEPTH]


def test_reflection_is_nudged_from_one_place():
    """Saves and conversation jobs ask reflection the same way (writing.reflection_nudge: after commit or
    at once, a broker fault swallowed): the task is named nowhere else in the apps."""
    root = Path(__file__).resolve().parent.parent
    naming = sorted(str(path.relative_to(root)) for app in ("memories", "traits", "reflection")
                    for path in (root / app).rglob("*.py")
                    if "TASK_REFLECT_IF_IMPORTANT" in path.read_text(encoding="utf-8"))
    assert naming == ["memories/vocabulary.py", "memories/writing/create.py"], naming


def test_habit_words_have_one_home_and_the_prompt_names_them():
    """The extractor, the reflector and the LLM's prompt read habits by the same words
    (memories/extraction/habits.py)."""
    assert rules.HABIT_OR_AGAIN_EN is habits.HABIT_OR_AGAIN_EN and rules.HABIT_OR_AGAIN_ZH is habits.HABIT_OR_AGAIN_ZH
    assert reflectors.HABIT_OR_AGAIN_EN is habits.HABIT_OR_AGAIN_EN
    assert reflectors.PLAIN_FREQUENCY is habits.PLAIN_FREQUENCY
    assert all(habits.HABIT_OR_AGAIN_EN.fullmatch(said) for said in habits.PLAIN_FREQUENCY)  # the words it reads
    for module in (rules, reflectors):  # no frequency words of their own beside habits.py
        words = set(habits.PLAIN_FREQUENCY) | {"always", "usually", "每天"}
        assert not words & set(re.findall(r'"([^"]+)"', Path(module.__file__).read_text())), module.__name__
    prompt = load_prompt("extract_system.md")
    for word in habits.PROMPT_EXAMPLES:
        assert word in prompt and (habits.HABIT_OR_AGAIN_EN.search(word) or habits.HABIT_OR_AGAIN_ZH.search(word))
