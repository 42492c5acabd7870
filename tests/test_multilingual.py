"""Chinese as a first language: the default local embedder (MiniLM and the multilingual
USE side by side, weighted by script), moving a store to it, and the context block's
language. The quality numbers come from the Chinese set the tests own
(tests/samples/zh_retrieval.json, bench/multilingual.py deals it)."""

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from django.apps import apps
from django.core.management import call_command

from memories.context import ContextLine, block_language
from memories.embedding import (
    DEFAULT_LOCAL_MODEL,
    MiniLMEmbedder,
    ScriptWeightedEmbedder,
    active_spec,
    build_embedder,
    minilm_share,
)
from memories.maintenance import spec_for_model
from memories.models import ActiveEmbedding, MemoryItem, MemoryVector
from memories.process_state import reset
from memories.search import SearchQuery, memory_search
from memories.text import han_share
from memories.vectors import embed_items
from memories.writing import MemorySpec, memory_create_batch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from multilingual import LANGUAGES, SET, deal, first_rank  # noqa: E402


@pytest.mark.parametrize(("text", "share"), [
    ("I always run before work.", 0.0),
    ("我对花生过敏", 1.0),
    ("", 0.0),
    ("12345 !!", 0.0),
    ("我在 Google 做 software engineer", 3 / (3 + 22 / 3)),
    ("他最 scared 什么？", 4 / (4 + 6 / 3)),
])
def test_han_share_counts_a_character_as_a_word_and_three_letters_as_one(text, share):
    assert han_share(text) == pytest.approx(share)


@pytest.mark.parametrize(("text", "share"), [
    ("Where does the user work?", 0.9),
    ("用户在哪里工作？", 0.05),
    ("", 0.9),
    ("他是做什么 job 的？", 0.05 * (6 / 7) + 0.9 * (1 / 7)),
])
def test_minilm_share_follows_the_script(text, share):
    assert minilm_share(text) == pytest.approx(share)


def _line(text: str) -> ContextLine:
    return ContextLine(section="memories", id="x", text=text, date="", kind="semantic")


@pytest.mark.parametrize(("setting", "query", "lines", "language"), [
    ("auto", "What does she eat?", ["Alice is vegetarian."], "en"),
    ("auto", "她吃什么？", ["用户吃素，已经三年了。"], "zh"),
    ("auto", "What does she eat?", ["用户吃素，已经三年了。", "用户对花生过敏。"], "zh"),
    ("auto", "", [], "en"),
    ("en", "她吃什么？", ["用户吃素。"], "en"),
    ("zh", "What does she eat?", ["Alice is vegetarian."], "zh"),
])
def test_the_block_language_follows_the_setting_or_what_the_agent_reads(setting, query, lines, language):
    assert block_language(setting, query, [_line(t) for t in lines]) == language


@pytest.fixture(scope="module")
def pair() -> ScriptWeightedEmbedder:
    embedder = build_embedder(spec_for_model(DEFAULT_LOCAL_MODEL))
    assert isinstance(embedder, ScriptWeightedEmbedder)
    return embedder


def test_the_pair_is_one_unit_vector_whose_english_part_is_minilm(pair):
    texts = ["Alice adopted a golden retriever.", "我对花生过敏，一碰就起疹子。", "我在 Google 做 software engineer"]
    vectors = pair.embed_documents(texts)
    assert vectors.shape == (3, 896) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    minilm = MiniLMEmbedder.dimensions
    english = vectors[0][:minilm] / np.linalg.norm(vectors[0][:minilm])
    assert float(english @ pair.minilm.embed_documents(texts[:1])[0]) == pytest.approx(1.0, abs=1e-5)
    assert float(np.linalg.norm(vectors[0][:minilm]) ** 2) == pytest.approx(0.9, abs=1e-4)
    assert float(np.linalg.norm(vectors[1][:minilm]) ** 2) == pytest.approx(0.05, abs=1e-4)
    single = pair.embed_query(texts[1])
    assert float(single @ vectors[1]) == pytest.approx(1.0, abs=1e-4)  # a query alone meets its stored self
    assert float(pair.embed_search_query(texts[1]) @ vectors[1]) > 0.98  # int8 MiniLM part for searches


def _dealt_user_scores(tenant, embedder, users: list[dict], modes: tuple[str, ...]) -> dict:
    """hit@3 by (language, mode) over the dealt users, through the service's write path and search."""
    hits: dict[tuple[str, str], list[bool]] = {(lang, mode): [] for lang in LANGUAGES for mode in modes}
    for user in users:
        results = memory_create_batch(tenant=tenant, actor="test", enqueue_embedding=False, specs=[
            MemorySpec(user_id=user["user_id"], text=m["text"]) for m in user["memories"]])
        embed_items([str(r.memory.id) for r in results], embedder=embedder)
        topic_of = {str(r.memory.id): m["topic"] for r, m in zip(results, user["memories"], strict=True)}
        for question in user["questions"]:
            for mode in modes:
                found = memory_search(tenant=tenant, embedder=embedder, query=SearchQuery(
                    query=question["text"], user_id=user["user_id"], mode=mode, limit=3))
                rank = first_rank([topic_of.get(str(r.memory.id), "") for r in found], {question["topic"]})
                hits[(question["language"], mode)].append(rank is not None)
    return {key: sum(values) / len(values) for key, values in hits.items()}


@pytest.mark.slow
def test_the_chinese_set_is_found_in_chinese_in_english_and_mixed(tenant_a, pair):
    """Four users of the set (120 memories, 720 questions). The full set's numbers, and the
    English-only model's beside them, are in bench/README.md (make bench-multilingual)."""
    users = deal(json.loads(SET.read_text())["topics"], 4)
    scores = _dealt_user_scores(tenant_a, pair, users, ("semantic", "hybrid"))
    assert scores[("zh", "semantic")] >= 0.70, scores  # English-only MiniLM: 0.20
    assert scores[("en", "semantic")] >= 0.78, scores  # 0.25
    assert scores[("mix", "semantic")] >= 0.85, scores  # 0.29
    for lang in LANGUAGES:  # the keyword side adds little here (the questions share no words by design)
        assert scores[(lang, "hybrid")] >= scores[(lang, "semantic")] - 0.04, scores


@pytest.fixture
def local_default(settings):
    settings.EMBEDDING_PROVIDER, settings.EMBEDDING_MODEL = "local", ""
    reset()
    yield
    reset()


CHINESE_FACTS = ["我对花生过敏，一碰就起疹子。", "我在上海瑞金医院当护士。", "我养了一只柯基犬，每天都要遛。",
                 "我每天早上六点去公园跑步。", "我最喜欢听爵士乐。"]


@pytest.mark.slow
def test_an_english_question_finds_a_chinese_memory_through_the_api(api, local_default):
    for text in CHINESE_FACTS:
        api.remember("li", text)
    assert active_spec().model == DEFAULT_LOCAL_MODEL
    assert set(MemoryVector.objects.values_list("model", flat=True)) == {DEFAULT_LOCAL_MODEL}
    for question, expected in [("Does the user have a pet?", 2), ("What music does the user like?", 4),
                               ("Does the user work out in the morning?", 3), ("他有没有养宠物？", 2)]:
        found = api.search("li", question, mode="semantic", limit=1)
        assert found[0]["memory"]["text"] == CHINESE_FACTS[expected], (question, found[0]["memory"]["text"])


@pytest.mark.slow
def test_a_store_of_the_old_default_keeps_searching_until_reembed_moves_it(api, tenant_a, local_default):
    """Vectors written under all-MiniLM-L6-v2 (the default before): migration 0019's rule pins it, search
    keeps working, and `reembed --activate` moves the store to the pair, after which Chinese is understood."""
    from importlib import import_module

    minilm = build_embedder(spec_for_model("all-MiniLM-L6-v2"))
    results = memory_create_batch(tenant=tenant_a, actor="test", enqueue_embedding=False,
                                  specs=[MemorySpec(user_id="li", text=t) for t in CHINESE_FACTS])
    embed_items([str(r.memory.id) for r in results], embedder=minilm)
    ActiveEmbedding.objects.all().delete()
    reset()

    import_module("memories.migrations.0019_keep_serving_stored_model").pin_stored_model(apps, None)
    reset()
    assert active_spec().model == "all-MiniLM-L6-v2"
    assert api.search("li", "爵士乐", mode="hybrid")[0]["memory"]["text"] == CHINESE_FACTS[4]  # still served

    call_command("reembed", "--model", DEFAULT_LOCAL_MODEL, "--activate", stdout=io.StringIO())
    reset()
    assert active_spec().model == DEFAULT_LOCAL_MODEL
    found = api.search("li", "Does the user have a pet?", mode="semantic", limit=1)
    assert found[0]["memory"]["text"] == CHINESE_FACTS[2]
    assert MemoryItem.objects.filter(user_id="li").count() == len(CHINESE_FACTS)


def test_the_context_block_speaks_the_users_language(api, settings):
    for text in ["用户吃素，已经三年了。", "用户对花生过敏。", "用户每天早上六点跑步。"]:
        api.remember("li", text)
    chinese = api.post("context", {"user_id": "li", "query": "晚饭给他做什么？"}).json()
    assert chinese["status"]["language"] == "zh"
    assert chinese["context"].startswith("## 关于 li 你所知道的\n### 记忆\n"), chinese["context"]
    asked = api.post("context", {"user_id": "li", "query": "晚饭给他做什么？", "language": "en"}).json()
    assert asked["context"].startswith("## What you know about li\n### Memories\n"), asked["context"]
    plain = api.post("context", {"user_id": "li", "query": "What should I cook?", "format": "plain"}).json()
    assert plain["context"].startswith("关于 li 你所知道的：\n记忆：\n"), plain["context"]  # the lines are Chinese
    settings.CONTEXT_LANGUAGE = "en"
    forced = api.post("context", {"user_id": "li", "query": "晚饭给他做什么？"}).json()
    assert forced["status"]["language"] == "en" and forced["context"].startswith("## What you know about li")
    bad = api.post("context", {"user_id": "li", "query": "x", "language": "fr"})
    assert bad.status_code == 400 and "language" in bad.json()


@pytest.mark.parametrize(("question", "expected"), [
    ("Where does Maria work?", 0.25),      # Latin script: the weight LoCoMo chose
    ("小林在哪里工作？", 1.0),               # Chinese: the Han weight
    ("", 0.25),
])
def test_the_semantic_weight_follows_the_questions_script(question, expected):
    from memories.search.scoring import semantic_weight

    assert semantic_weight(question, latin=0.25, han=1.0) == pytest.approx(expected)
    mixed = semantic_weight("他平时有 workout 的习惯吗？", latin=0.25, han=1.0)
    assert 0.25 < mixed < 1.0
