"""A first start serves before its embedding model is ready (memories/model_warmup.py): while a gunicorn
worker prepares the model on a thread, health answers 200 "degraded" with the embedder `preparing`,
/api/v1/ready answers 503, and a search answers from keywords and says so; the other embeddings wait for
the model, then go to it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from django.test import Client

from memories import model_warmup
from memories.embedding import get_embedder, reset_embedders
from memories.keys import api_key_create
from tests.conftest import Api


class Failed(Exception):
    pass


class Model:
    name, dimensions = "fake", 2

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(2, dtype=np.float32)

    def embed_search_query(self, text: str) -> np.ndarray:
        return np.zeros(2, dtype=np.float32)


def _preparation() -> tuple[threading.Event, threading.Thread]:
    release = threading.Event()
    return release, model_warmup.start_in_background(lambda: release.wait(60))


def test_the_stand_in_refuses_a_search_at_once_and_lets_other_embeddings_wait(monkeypatch):
    monkeypatch.setattr(model_warmup, "WAIT_FOR_MODEL", 0.2)
    release, thread = _preparation()
    stand_in = model_warmup.Preparing("fake", 2, load=Model, error=Failed)
    assert model_warmup.preparing() and stand_in.preparing
    started = time.monotonic()
    with pytest.raises(Failed, match="search answers from keywords"):
        stand_in.embed_search_query("tea")
    assert time.monotonic() - started < 0.1, "a search does not wait for the model"
    with pytest.raises(Failed, match="still being prepared after"):
        stand_in.embed_documents(["tea"])  # waited WAIT_FOR_MODEL, then gave up
    threading.Timer(0.05, release.set).start()
    monkeypatch.setattr(model_warmup, "WAIT_FOR_MODEL", 5.0)
    assert stand_in.embed_query("tea").tolist() == [1.0, 1.0]  # waited for the model, then used it
    thread.join(5)
    assert not model_warmup.preparing()
    assert stand_in.embed_search_query("tea").tolist() == [0.0, 0.0]  # ready since it was handed out


def test_a_failed_preparation_ends_the_wait():
    thread = model_warmup.start_in_background(lambda: (_ for _ in ()).throw(RuntimeError("no model files")))
    thread.join(5)
    assert not model_warmup.preparing() and model_warmup.wait_until_prepared(0)


def test_a_model_is_loaded_once_whichever_thread_asks_first():
    made: list[int] = []

    def make() -> object:
        time.sleep(0.05)
        made.append(1)
        return object()

    once = model_warmup.LoadedOnce(make)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(once())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len({id(s) for s in seen}) == 1
    once.cache_clear()
    assert once() is not seen[0] and len(made) == 2


def test_one_preparation_at_a_time_leaves_its_marker(tmp_path):
    with model_warmup.one_preparation(tmp_path, "all-MiniLM-L6-v2+use-multilingual-v3"):
        assert not model_warmup.marker(tmp_path, "all-MiniLM-L6-v2+use-multilingual-v3").exists()
    assert model_warmup.marker(tmp_path, "all-MiniLM-L6-v2+use-multilingual-v3").exists()
    with pytest.raises(RuntimeError), model_warmup.one_preparation(tmp_path, "other"):
        raise RuntimeError("the export failed")
    assert not model_warmup.marker(tmp_path, "other").exists()
    with model_warmup.one_preparation(tmp_path / "hash", ""):  # not a local model: nothing made, no marker
        pass
    assert not (tmp_path / "hash").exists()


@pytest.fixture
def memory_saved_then_preparing(db, django_capture_on_commit_callbacks, settings):
    agent = Api(api_key_create(tenant_name="acme").raw_key, django_capture_on_commit_callbacks)
    agent.remember("alice", "Alice is allergic to peanuts.")  # embedded by the test's hash model
    settings.EMBEDDING_PROVIDER = "local"
    reset_embedders()
    release, thread = _preparation()
    yield agent
    release.set()
    thread.join(10)
    settings.EMBEDDING_PROVIDER = "hash"
    reset_embedders()


def test_the_service_answers_while_the_model_is_prepared(memory_saved_then_preparing):
    agent = memory_saved_then_preparing
    assert getattr(get_embedder(), "preparing", False)
    public = Client().get("/api/v1/health")
    assert public.status_code == 200 and public.json() == {"status": "degraded"}
    checks = agent.get("health").json()["checks"]
    assert checks["embedder"]["preparing"] is True and checks["embedder"]["ok"] is False
    assert checks["embedder"]["model"] == "all-MiniLM-L6-v2+use-multilingual-v3"
    ready = Client().get("/api/v1/ready")
    assert ready.status_code == 503 and ready.json()["checks"]["model"] == {
        "ok": False, "preparing": True, "name": "all-MiniLM-L6-v2+use-multilingual-v3"}
    started = time.monotonic()
    found = agent.post("memories/search", {"user_id": "alice", "query": "peanuts allergy"})
    assert found.status_code == 200 and time.monotonic() - started < 10, "a search does not wait for the model"
    assert found.json()["degraded"] == ["semantic"] and "being prepared" in found.json()["degraded_reason"]
    assert [r["memory"]["text"] for r in found.json()["results"]] == ["Alice is allergic to peanuts."]
