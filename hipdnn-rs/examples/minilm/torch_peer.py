"""all-MiniLM-L6-v2 in PyTorch (eager, f32, TF32 off) on the tokens of a `minilm --report`
run: the side-by-side peer of the example's forward pass (issue 15, MiniLM end to end).

Usage (on a machine with PyTorch and a GPU):
    minilm "..." "..." --device gpu --batch 32 --pad-to 128 --repeat 20 --report r.json
    python3 torch_peer.py --report r.json --model-dir DIR [--repeat 20] [--compile]
        [--reduce-overhead] [--cuda-graph]

Reads `model.safetensors` directly (header JSON + little-endian f32 data; no `safetensors`
package needed), runs the same forward pass as `model.rs` (embeddings, 6 BERT layers with
`scaled_dot_product_attention` and a boolean key mask, mean pooling, L2 normalization) on the
report's token ids and mask, and prints one JSON line: the median and fastest wall time of the
whole pass (ids and mask uploaded from the host, embeddings downloaded: what the example's
timed runs include), the example's median from the report and the ratio, and the largest
|torch - ours| over the embeddings. `--compile` also times `torch.compile` of the same
function (after its compilation), when it works; `--reduce-overhead` times
`torch.compile(mode="reduce-overhead")` (PyTorch's own CUDA-graph path); `--cuda-graph` times
the eager forward captured once into a `torch.cuda.CUDAGraph` and replayed (ids and mask copied
into its static inputs, the output copied out: kernels without Python dispatch). When the
report holds the example's `--graph` runs (`graph_runs_ms`), each ratio is also given against
them.
"""
import argparse
import json
import os
import statistics
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

HIDDEN, HEADS, HEAD_DIM, LAYERS = 384, 12, 32, 6
EPS = 1e-12


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue  # position_ids (I64): a buffer, not a weight
        a, b = meta["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=base + a)
        out[name] = torch.from_numpy(arr.reshape(meta["shape"]).copy()).cuda()
    return out


def make_forward(w):
    def lin(x, name):
        return F.linear(x, w[name + ".weight"], w[name + ".bias"])

    def ln(x, name):
        return F.layer_norm(x, (HIDDEN,), w[name + ".weight"], w[name + ".bias"], EPS)

    def forward(ids, mask):
        b, s = ids.shape
        e = "embeddings."
        x = (w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][:s]
             + w[e + "token_type_embeddings.weight"][0])
        x = ln(x, e + "LayerNorm")
        keep = (mask != 0)[:, None, None, :]
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            heads = lambda t: t.view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
            q, k, v = (heads(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            o = o.transpose(1, 2).reshape(b, s, HIDDEN)
            h1 = ln(lin(o, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            up = F.gelu(lin(h1, p + "intermediate.dense"))
            x = ln(lin(up, p + "output.dense") + h1, p + "output.LayerNorm")
        m = mask.to(x.dtype)[:, :, None]
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1, eps=EPS)

    return forward


def timed_runs(fn, ids_host, mask_host, repeat):
    def once():
        t = time.perf_counter()
        ids, mask = ids_host.cuda(), mask_host.cuda()
        out = fn(ids, mask).cpu()
        return (time.perf_counter() - t) * 1e3, out

    for _ in range(3):
        _, out = once()
    runs = [once()[0] for _ in range(repeat)]
    return runs, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--model-dir", default=os.environ.get("HIPDNN_MINILM_DIR", "target/minilm"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--reduce-overhead", action="store_true")
    ap.add_argument("--cuda-graph", action="store_true")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    r = json.load(open(a.report))
    b, s = r["batch"], r["seq"]
    ids = torch.tensor(r["ids"], dtype=torch.int64).view(b, s)
    mask = torch.tensor(r["mask"], dtype=torch.int64).view(b, s)
    w = read_safetensors(os.path.join(a.model_dir, "model.safetensors"))
    fwd = make_forward(w)
    with torch.no_grad():
        runs, out = timed_runs(fwd, ids, mask, a.repeat)
        ours = np.array(r["embeddings"], dtype=np.float32).reshape(b, HIDDEN)
        diff = float(np.abs(out.numpy().astype(np.float64) - ours).max())
        res = {"batch": b, "seq": s, "torch": torch.__version__,
               "torch_eager_median_ms": statistics.median(runs), "torch_eager_min_ms": min(runs),
               "max_abs_diff_vs_ours": diff}
        if r.get("runs_ms"):
            ours_ms = statistics.median(r["runs_ms"])
            res["ours_median_ms"] = ours_ms
            res["ours_speed_vs_eager"] = statistics.median(runs) / ours_ms
        ours_graph = statistics.median(r["graph_runs_ms"]) if r.get("graph_runs_ms") else None
        if ours_graph:
            res["ours_graph_median_ms"] = ours_graph
            res["ours_graph_speed_vs_eager"] = statistics.median(runs) / ours_graph

        def peer(key, fn):
            cruns, cout = timed_runs(fn, ids, mask, a.repeat)
            res[f"{key}_median_ms"] = statistics.median(cruns)
            res[f"{key}_max_abs_diff_vs_ours"] = float(
                np.abs(cout.numpy().astype(np.float64) - ours).max())
            if r.get("runs_ms"):
                res[f"ours_speed_vs_{key}"] = statistics.median(cruns) / res["ours_median_ms"]
            if ours_graph:
                res[f"ours_graph_speed_vs_{key}"] = statistics.median(cruns) / ours_graph

        for flag, key, mode in ((a.compile, "torch_compile", None),
                                (a.reduce_overhead, "torch_compile_reduce_overhead",
                                 "reduce-overhead")):
            if not flag:
                continue
            try:
                t = time.perf_counter()
                cf = torch.compile(fwd, mode=mode) if mode else torch.compile(fwd)
                for _ in range(3):  # reduce-overhead records its CUDA graph on a later call
                    cf(ids.cuda(), mask.cuda())
                res[f"{key}_compile_s"] = time.perf_counter() - t
                peer(key, cf)
            except Exception as e:  # noqa: BLE001 - report why compile did not work
                res[f"{key}_error"] = f"{type(e).__name__}: {e}"[:300]
        if a.cuda_graph:
            static_ids, static_mask = ids.cuda(), mask.cuda()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fwd(static_ids, static_mask)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = fwd(static_ids, static_mask)

            def replay(i, m):
                static_ids.copy_(i)
                static_mask.copy_(m)
                g.replay()
                return static_out

            peer("torch_cuda_graph", replay)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
