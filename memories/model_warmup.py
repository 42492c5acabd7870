"""A web worker that answers before its embedding model is ready, on a first start.

The first start of a fresh checkout makes the model files under var/models (MiniLM's ONNX export and
int8 copy, USE's int8 graph: about 30 s on two cores) and every worker then loads them. A gunicorn worker
that found no files prepared (no marker of a finished preparation) does that on a background thread and
takes requests at once (memories.embedding.prepare_local_embedder_for_a_worker): until the model is
ready, get_embedder() hands out a `Preparing` stand-in, so a search answers from keywords and says so
(`degraded: ["semantic"]`), a write's embedding waits for the model (up to WAIT_FOR_MODEL seconds), health
says "degraded" with the embedder `preparing`, and /api/v1/ready answers 503. Later starts find the
marker and load before serving, as always.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A write's embedding waits this long for a model still being prepared (below gunicorn's WEB_TIMEOUT of 60 s).
WAIT_FOR_MODEL = 30.0
MARKER_PREFIX = ".prepared-"


class LoadedOnce(Generic[T]):
    """A model the process loads once, whichever thread asks first (the others wait for that load);
    cache_clear() forgets it (and is safe after a fork: the lock is made anew)."""

    def __init__(self, make: Callable[[], T]):
        self._make, self._lock = make, threading.Lock()
        self._value: T | None = None
        self.__doc__, self.__name__ = make.__doc__, make.__name__

    def __call__(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._make()
        return value

    def cache_clear(self) -> None:
        self._value, self._lock = None, threading.Lock()


@contextmanager
def one_preparation(directory: Path, model: str) -> Iterator[None]:
    """Around the preparation of local model `model` ("": not a local model, nothing to guard): one process
    (or thread) at a time makes or loads its files, else the first start's four workers would each export
    MiniLM into the same directory; a preparation that finished leaves its marker."""
    if not model:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".prepare.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
            marker(directory, model).touch()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def marker(directory: Path, model: str) -> Path:
    """The file a finished preparation of `model` leaves (its files are made)."""
    return directory / f"{MARKER_PREFIX}{model.replace('/', '_')}"


class _State:
    def __init__(self) -> None:
        self.ready = threading.Event()
        self.running = False
        self.failure = ""


_state = _State()


def preparing() -> bool:
    """A background preparation runs in this process and has not finished."""
    return _state.running and not _state.ready.is_set()


def start_in_background(prepare: Callable[[], Any]) -> threading.Thread:
    """Run `prepare` (which loads the model) on a daemon thread; preparing() until it returns or fails."""
    _state.running, _state.failure = True, ""
    _state.ready.clear()

    def run() -> None:
        try:
            prepare()
            logger.info("the embedding model is ready: search is semantic again")
        except Exception as exc:  # noqa: BLE001 - the worker serves on (keywords), the reason is logged
            _state.failure = str(exc) or type(exc).__name__
            logger.warning("the embedder is not ready: %s (search answers from keywords)", _state.failure)
        finally:
            _state.running = False
            _state.ready.set()

    thread = threading.Thread(target=run, name="prepare-embedding-model", daemon=True)
    thread.start()
    return thread


def wait_until_prepared(timeout: float) -> bool:
    """Wait for a background preparation; True when none runs (any more)."""
    return _state.ready.wait(timeout) if _state.running else True


class Preparing:
    """The embedder while its model is prepared in the background: a search's query vector fails at once
    (the search answers from keywords), the other embeddings wait for the model (WAIT_FOR_MODEL) and then
    go to it. `load` gives the real embedder; `error` is the exception callers expect (EmbeddingError)."""

    preparing = True

    def __init__(self, name: str, dimensions: int, *, load: Callable[[], Any], error: type[Exception]):
        self.name, self.dimensions, self._load, self._error = name, dimensions, load, error

    def _ready(self) -> Any:
        if not wait_until_prepared(WAIT_FOR_MODEL):
            raise self._error(f"the embedding model is still being prepared after {WAIT_FOR_MODEL:.0f} s")
        return self._load()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._ready().embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._ready().embed_query(text)

    def embed_search_query(self, text: str) -> np.ndarray:
        if not preparing():  # it became ready since this stand-in was handed out
            real = self._load()
            return getattr(real, "embed_search_query", real.embed_query)(text)
        raise self._error("the embedding model is being prepared (first start); search answers from keywords "
                          "until it is")
