#!/usr/bin/env python3
"""all-MiniLM-L6-v2 end to end on the CPU: hipdnn-rs's CPU engine against ONNX Runtime.

Builds the BERT encoder of all-MiniLM-L6-v2 as an ONNX model with `onnx.helper` from the same
`model.safetensors` the `minilm` example reads (word + position + token-type embeddings,
LayerNormalization, per layer: Q/K/V MatMul + bias, 12-head attention with the additive key
mask, Softmax, output dense + residual + LayerNormalization, MLP 384 -> 1536 -> 384 with the
exact erf GELU, mean pooling over the unmasked tokens, L2 normalization), and times it in
ONNX Runtime (CPU execution provider, graph optimization level ALL, intra-op threads =
--threads, inter-op 1) on the token ids and mask the example reports. Tokens in -> pooled,
normalized embeddings out, on both sides; tokenization is not timed on either side.

Rounds alternate: ours (one run of the example binary: `--device cpu --batch B --pad-to S
--repeat N --report FILE`, whose per-run wall times are the forward pass, with
RAYON_NUM_THREADS=--threads), then ORT (N `session.run` calls after one warm-up), each round's
median kept. Prints every round, the medians over the rounds of each side's round medians, and
ours/ORT (> 1 means ours is faster), and the load average before and after. The embeddings of
both sides must agree (max |difference| <= 1e-4, they are unit vectors) or the script fails.

`--ort-optimized` also times the model after `onnxruntime.transformers.optimizer` (model type
bert: fused Attention, SkipLayerNormalization, BiasGelu), the form a deployment would ship, and
reports ours/ORT against the faster of the two.

Needs: numpy, onnx, onnxruntime, and the model files from fetch.py (directory
$HIPDNN_MINILM_DIR or target/minilm/); the example built with
`cargo build --release -p hipdnn --no-default-features --example minilm`.

Usage:
  python3 hipdnn-rs/examples/minilm/ort_peer.py [--shape 1x16] [--shape 32x128] [--rounds 3]
      [--runs 20] [--threads 2] [--ort-optimized] [--bin target/release/examples/minilm]
Exit status: 0 on success, 1 when the embeddings disagree or a side fails, 2 when the model
files, the binary or a Python package are missing.
"""

import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
REPO = HERE.parents[3]
sys.path.insert(0, str(HERE.parent))

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    sys.exit(f"{e}; install with: python3 -m pip install numpy onnx onnxruntime")

from reference import HEADS, HEAD_DIM, LAYERS, model_dir, read_safetensors  # noqa: E402

SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
F = TensorProto.FLOAT
EPS = 1e-12


def build_model(w: dict, seq: int) -> bytes:
    """The encoder as an ONNX model (opset 17) for sequences of exactly `seq` tokens."""
    nodes, inits = [], []

    def init(name, arr, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    hidden = HEADS * HEAD_DIM
    p = "embeddings."
    init("word", w[p + "word_embeddings.weight"])
    # Position ids 0..seq-1 and token type 0: one constant row block, as an exporter folds it.
    init("pos_tt", (w[p + "position_embeddings.weight"][:seq] + w[p + "token_type_embeddings.weight"][0])[None])
    init("one", 1.0)
    init("neg", -10000.0)
    init("sqrt_d", math.sqrt(HEAD_DIM))
    init("half", 0.5)
    init("sqrt2", math.sqrt(2.0))
    init("eps_norm", 1e-12)
    init("heads_shape", [0, seq, HEADS, HEAD_DIM], np.int64)
    init("hidden_shape", [0, seq, hidden], np.int64)
    init("ax1", [1], np.int64)
    init("ax12", [1, 2], np.int64)
    init("axm1", [-1], np.int64)

    x = node("Gather", ["word", "input_ids"], "word_x")
    x = node("Add", [x, "pos_tt"], "emb")

    def layernorm(v, wname, bname, out):
        init(out + ".g", w[wname])
        init(out + ".b", w[bname])
        return node("LayerNormalization", [v, out + ".g", out + ".b"], out, axis=-1, epsilon=EPS)

    x = layernorm(x, p + "LayerNorm.weight", p + "LayerNorm.bias", "emb_ln")
    maskf = node("Cast", ["attention_mask"], "maskf", to=F)
    m4 = node("Unsqueeze", [maskf, "ax12"], "mask4")  # [B, 1, 1, S]
    inv = node("Sub", ["one", m4], "mask_inv")
    mask_add = node("Mul", [inv, "neg"], "mask_add")
    for i in range(LAYERS):
        L = f"encoder.layer.{i}."
        t = f"l{i}."

        def lin(v, name, out):
            init(out + ".w", w[L + name + ".weight"].T)
            init(out + ".b", w[L + name + ".bias"])
            mm = node("MatMul", [v, out + ".w"], out + ".mm")
            return node("Add", [mm, out + ".b"], out)

        def heads(v, out, perm):
            r = node("Reshape", [v, "heads_shape"], out + ".r")
            return node("Transpose", [r], out, perm=perm)

        q = heads(lin(x, "attention.self.query", t + "q"), t + "qh", [0, 2, 1, 3])
        k = heads(lin(x, "attention.self.key", t + "k"), t + "kh", [0, 2, 3, 1])
        v = heads(lin(x, "attention.self.value", t + "v"), t + "vh", [0, 2, 1, 3])
        s = node("MatMul", [q, k], t + "s")
        s = node("Div", [s, "sqrt_d"], t + "ss")
        s = node("Add", [s, mask_add], t + "sm")
        prob = node("Softmax", [s], t + "p", axis=-1)
        ctx = node("MatMul", [prob, v], t + "ctx")
        ctx = node("Transpose", [ctx], t + "ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "hidden_shape"], t + "ctxr")
        a = lin(ctx, "attention.output.dense", t + "o")
        a = node("Add", [a, x], t + "res1")
        x = layernorm(a, L + "attention.output.LayerNorm.weight", L + "attention.output.LayerNorm.bias", t + "ln1")
        h = lin(x, "intermediate.dense", t + "up")
        e = node("Div", [h, "sqrt2"], t + "g1")
        e = node("Erf", [e], t + "g2")
        e = node("Add", [e, "one"], t + "g3")
        e = node("Mul", [h, e], t + "g4")
        h = node("Mul", [e, "half"], t + "gelu")
        d = lin(h, "output.dense", t + "down")
        d = node("Add", [d, x], t + "res2")
        x = layernorm(d, L + "output.LayerNorm.weight", L + "output.LayerNorm.bias", t + "ln2")
    m3 = node("Unsqueeze", [maskf, "axm1"], "mask3")  # [B, S, 1]
    xs = node("Mul", [x, m3], "masked")
    total = node("ReduceSum", [xs, "ax1"], "sum", keepdims=0)
    count = node("ReduceSum", [m3, "ax1"], "count", keepdims=0)
    pooled = node("Div", [total, count], "pooled")
    norm = node("ReduceL2", [pooled], "norm", axes=[-1], keepdims=1)
    norm = node("Max", [norm, "eps_norm"], "norm_c")
    node("Div", [pooled, norm], "embeddings")
    g = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", seq]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", seq])],
        [helper.make_tensor_value_info("embeddings", F, ["B", hidden])],
        initializer=inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def session(model: bytes, threads: int):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def transformers_optimized(model: bytes) -> bytes:
    from onnxruntime.transformers import optimizer

    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "m.onnx"
        path.write_bytes(model)
        opt = optimizer.optimize_model(str(path), model_type="bert", num_heads=HEADS,
                                       hidden_size=HEADS * HEAD_DIM, opt_level=0)
        print(f"  transformers optimizer fused: {opt.get_fused_operator_statistics()}", flush=True)
        return opt.model.SerializeToString()


def ours(binary: str, batch: int, seq: int, runs: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        report = pathlib.Path(d) / "report.json"
        cmd = [binary, *SENTENCES, "--device", "cpu", "--batch", str(batch), "--pad-to", str(seq),
               "--repeat", str(runs), "--report", str(report)]
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return json.loads(report.read_text())


def time_ort(sess, feeds: dict, runs: int):
    out = sess.run(None, feeds)[0]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), out


def loadavg() -> str:
    try:
        return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", action="append", help="BxS, e.g. 1x16 (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ort-optimized", action="store_true")
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "examples" / "minilm"))
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in (a.shape or ["1x16", "32x128"])]
    d = model_dir()
    if not (d / "model.safetensors").is_file():
        print(f"{d / 'model.safetensors'} is missing: run python3 hipdnn-rs/examples/minilm/fetch.py", file=sys.stderr)
        return 2
    if not pathlib.Path(a.bin).is_file():
        print(f"{a.bin} is missing: cargo build --release -p hipdnn --no-default-features --example minilm", file=sys.stderr)
        return 2
    w = read_safetensors(d / "model.safetensors")
    print(f"ONNX Runtime {ort.__version__} (CPU EP, intra-op threads {a.threads}), onnx {onnx.__version__}, "
          f"numpy {np.__version__}; ours: {a.bin} with RAYON_NUM_THREADS={a.threads}")
    print(f"load average at start: {loadavg()}")
    failed = False
    for batch, seq in shapes:
        model = build_model(w, seq)
        peers = {"ORT": session(model, a.threads)}
        if a.ort_optimized:
            peers["ORT+bert-opt"] = session(transformers_optimized(model), a.threads)
        rows = {"ours": []} | {k: [] for k in peers}
        for r in range(a.rounds):
            rep = ours(a.bin, batch, seq, a.runs, a.threads)
            rows["ours"].append(statistics.median(rep["runs_ms"]))
            ids = np.asarray(rep["ids"], dtype=np.int64).reshape(batch, seq)
            mask = np.asarray(rep["mask"], dtype=np.int64).reshape(batch, seq)
            emb = np.asarray(rep["embeddings"], dtype=np.float32).reshape(batch, -1)
            for name, sess in peers.items():
                ms, out = time_ort(sess, {"input_ids": ids, "attention_mask": mask}, a.runs)
                rows[name].append(ms)
                diff = float(np.abs(out - emb).max())
                if diff > 1e-4:
                    print(f"  {name}: embeddings differ from ours by {diff:.3g} (> 1e-4)")
                    failed = True
            print(f"  {batch}x{seq} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} ms" for k, v in rows.items())
                  + f"  (max |ours - ORT| {float(np.abs(out - emb).max()):.2g})", flush=True)
        med = {k: statistics.median(v) for k, v in rows.items()}
        best = min(med[k] for k in peers)
        print(f"{batch}x{seq}: median of round medians: " + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items())
              + "; ours/ORT (time ratio ORT/ours, > 1 = ours faster): "
              + ", ".join(f"vs {k} {med[k] / med['ours']:.2f}x" for k in peers)
              + f"; vs the fastest peer {best / med['ours']:.2f}x", flush=True)
    print(f"load average at end: {loadavg()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
