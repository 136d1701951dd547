#!/usr/bin/env python3
"""Peer timings for the CPU reference bench (engines/benches/reference_ops.rs).

Runs as a long-lived subprocess of the bench: reads one JSON request per line on stdin
(an op and its shape), times ONNX Runtime (CPU execution provider, a model built here with
`onnx`, intra-op threads = the bench's rayon threads) and numpy on that shape, and answers one
JSON line {"ort_s": seconds, "numpy_s": seconds}, each the fastest of >= 3 calls (>= min_time
in all) after one warm-up call. The first line it writes is
{"info": {...}} (versions, BLAS kernel numpy uses via threadpoolctl) or {"error": "..."} naming
the missing packages and how to install them.

The bench removes OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from this process's environment only.
Install: python3 -m pip install numpy onnx onnxruntime threadpoolctl
"""
import json
import sys
import time

INSTALL = "python3 -m pip install numpy onnx onnxruntime threadpoolctl"

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from threadpoolctl import threadpool_info
except ImportError as e:  # pragma: no cover - reported to the bench
    print(json.dumps({"error": f"{e}; install with: {INSTALL}"}), flush=True)
    sys.exit(0)

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def rand(*shape):
    return (RNG.random(shape, dtype=np.float32) * 2 - 1).astype(np.float32)


def timeit(f, min_time):
    f()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
        if len(times) >= 200:
            break
    return min(times)


def session(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, list(shape))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def case(r):
    """(ort callable, numpy callable) for one request."""
    op = r["op"]
    if op == "matmul":
        m, n, k = r["m"], r["n"], r["k"]
        a, b = rand(m, k), rand(k, n)
        s = session([helper.make_node("MatMul", ["a", "b"], ["c"])], [vi("a", a.shape), vi("b", b.shape)], [vi("c", (m, n))])
        return (lambda: s.run(None, {"a": a, "b": b})), (lambda: a @ b)
    if op == "conv":
        n, c, h, w, k, rr, st, pad = (r[x] for x in ("n", "c", "h", "w", "k", "r", "stride", "pad"))
        x, wt = rand(n, c, h, w), rand(k, c, rr, rr)
        oh = (h + 2 * pad - rr) // st + 1
        ow = (w + 2 * pad - rr) // st + 1
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[rr, rr], pads=[pad] * 4, strides=[st, st])
        s = session([node], [vi("x", x.shape)], [vi("y", (n, k, oh, ow))], [numpy_helper.from_array(wt, "w")])
        w2 = wt.reshape(k, -1)

        def np_conv():
            xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
            win = np.lib.stride_tricks.sliding_window_view(xp, (rr, rr), axis=(2, 3))[:, :, ::st, ::st]
            col = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * rr * rr, oh * ow)
            return np.matmul(w2, col)

        return (lambda: s.run(None, {"x": x})), np_conv
    if op == "layernorm":
        rows, cols = r["rows"], r["cols"]
        x, g, b = rand(rows, cols), rand(cols), rand(cols)
        node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)
        s = session([node], [vi("x", x.shape)], [vi("y", x.shape)], [numpy_helper.from_array(g, "g"), numpy_helper.from_array(b, "b")])

        def np_ln():
            mu = x.mean(axis=-1, keepdims=True)
            var = x.var(axis=-1, keepdims=True)
            return (x - mu) / np.sqrt(var + 1e-5) * g + b

        return (lambda: s.run(None, {"x": x})), np_ln
    if op == "softmax":
        rows, cols = r["rows"], r["cols"]
        x = rand(rows, cols)
        s = session([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", x.shape)], [vi("y", x.shape)])
        return (lambda: s.run(None, {"x": x})), (lambda: softmax(x))
    if op == "sdpa":
        b, h, sq, d = r["b"], r["h"], r["s"], r["d"]
        q, k, v = rand(b, h, sq, d), rand(b, h, sq, d), rand(b, h, sq, d)
        scale = np.array(1.0 / np.sqrt(d), dtype=np.float32)
        nodes = [
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["q", "kt"], ["s0"]),
            helper.make_node("Mul", ["s0", "scale"], ["s1"]),
            helper.make_node("Softmax", ["s1"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["o"]),
        ]
        s = session(nodes, [vi("q", q.shape), vi("k", k.shape), vi("v", v.shape)], [vi("o", q.shape)], [numpy_helper.from_array(scale, "scale")])
        return (lambda: s.run(None, {"q": q, "k": k, "v": v})), (lambda: softmax(q @ k.transpose(0, 1, 3, 2) * scale) @ v)
    if op == "gather":
        v, h, n = r["v"], r["h"], r["n"]
        table = rand(v, h)
        ids = ((np.arange(n) * 7919) % v).astype(np.int64)
        node = helper.make_node("Gather", ["t", "i"], ["y"], axis=0)
        s = session(
            [node],
            [vi("t", table.shape), helper.make_tensor_value_info("i", TensorProto.INT64, [n])],
            [vi("y", (n, h))],
        )
        return (lambda: s.run(None, {"t": table, "i": ids})), (lambda: np.take(table, ids, axis=0))
    raise ValueError(f"unknown op {op}")


def main():
    blas = [d for d in threadpool_info() if d.get("user_api") == "blas"]
    info = {
        "onnxruntime": ort.__version__,
        "onnx": onnx.__version__,
        "numpy": np.__version__,
        "ort_threads": THREADS,
        "blas": "; ".join(
            f"{d.get('internal_api')} {d.get('version')} ({d.get('architecture')}, {d.get('num_threads')} threads)" for d in blas
        )
        or "unknown",
    }
    print(json.dumps({"info": info}), flush=True)
    for line in sys.stdin:
        r = json.loads(line)
        f_ort, f_np = case(r)
        t_ort = timeit(f_ort, r.get("min_time", 0.2))
        t_np = timeit(f_np, r.get("min_time", 0.2))
        print(json.dumps({"ort_s": t_ort, "numpy_s": t_np}), flush=True)


if __name__ == "__main__":
    main()
