"""What the local models' ONNX Runtime paths share (MiniLM's in memories.embedding, the
multilingual USE's in memories.use_onnx): session options for a process that shares its
cores, and silence while a model is exported or quantized."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


def session_options(threads: int):
    """threads > 0: that many intra-op threads, without spinning — several processes on one
    machine (gunicorn and Celery workers) then share the cores instead of fighting for them."""
    import onnxruntime  # optional: requirements/local-embed.txt

    options = onnxruntime.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


@contextmanager
def quiet() -> Iterator[None]:
    """The one-time export and quantization talk a lot (a log line per tensor, tracer warnings,
    advice): only errors get through while they run (a few seconds, once per machine)."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)
