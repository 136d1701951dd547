#!/usr/bin/env python3
"""Independent numpy reference for all-MiniLM-L6-v2 sentence embeddings.

Shares no code with hipdnn-rs: reads `model.safetensors` by parsing its header (8-byte
little-endian header length, JSON header, raw little-endian tensors) with json + numpy,
tokenizes with the `tokenizers` PyPI package from `tokenizer.json`, and runs the BERT encoder
in float64: embeddings (word + position + token type 0, layernorm eps 1e-12), 6 layers of
12-head self-attention (head dim 32, softmax(q k^T / sqrt(32)) v), output dense + residual +
layernorm, MLP 384 -> 1536 -> 384 with exact (erf) GELU + residual + layernorm, mean pooling
over the tokens, L2 normalization. Each sentence runs alone, unpadded (no attention mask
needed), so padding in the implementation under test is checked too.

Needs: numpy, tokenizers (`python3 -m pip install numpy tokenizers`), and the files from
`fetch.py` (directory: $HIPDNN_MINILM_DIR or target/minilm/).

Usage:
  python3 hipdnn-rs/examples/minilm/reference.py "sentence one" "sentence two"
      prints the cosine similarity of each pair against the first sentence
  python3 hipdnn-rs/examples/minilm/reference.py --golden
      rewrites hipdnn-rs/tests/vectors/minilm_reference.json: the fixed test sentences,
      their token ids, embeddings (float64 printed with 9 significant digits) and cosines
"""

import json
import math
import os
import pathlib
import struct
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve()
REPO = HERE.parents[3]
GOLDEN = REPO / "hipdnn-rs" / "tests" / "vectors" / "minilm_reference.json"
# The fixed test set: the three sentences of sentence-transformers' usage example (published
# similarities 0.6660, 0.1046, 0.1411), then two paraphrase pairs; pairs (0,1), (3,4), (5,6)
# are paraphrases, every other pair is unrelated.
SENTENCES = [
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
    "A man is playing a guitar.",
    "Someone is strumming a guitar on stage.",
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
]
LAYERS, HEADS, HEAD_DIM, EPS = 6, 12, 32, 1e-12


def model_dir() -> pathlib.Path:
    env = os.environ.get("HIPDNN_MINILM_DIR")
    return pathlib.Path(env) if env else REPO / "target" / "minilm"


def read_safetensors(path: pathlib.Path) -> dict:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype="<f4").reshape(meta["shape"]).astype(np.float64)
    return out


def layernorm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


ERF = np.vectorize(math.erf)


def encode(w: dict, ids: list) -> np.ndarray:
    """Normalized embedding (384,) of one unpadded token sequence."""
    s = len(ids)
    p = "embeddings."
    x = (w[p + "word_embeddings.weight"][ids] + w[p + "position_embeddings.weight"][:s]
         + w[p + "token_type_embeddings.weight"][0])
    x = layernorm(x, w[p + "LayerNorm.weight"], w[p + "LayerNorm.bias"])
    for i in range(LAYERS):
        L = f"encoder.layer.{i}."

        def lin(name, v):
            return v @ w[L + name + ".weight"].T + w[L + name + ".bias"]

        def heads(v):
            return v.reshape(s, HEADS, HEAD_DIM).transpose(1, 0, 2)

        q = heads(lin("attention.self.query", x))
        k = heads(lin("attention.self.key", x))
        v = heads(lin("attention.self.value", x))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_DIM)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(s, HEADS * HEAD_DIM)
        x = layernorm(lin("attention.output.dense", ctx) + x,
                      w[L + "attention.output.LayerNorm.weight"],
                      w[L + "attention.output.LayerNorm.bias"])
        h = lin("intermediate.dense", x)
        h = 0.5 * h * (1.0 + ERF(h / math.sqrt(2.0)))
        x = layernorm(lin("output.dense", h) + x,
                      w[L + "output.LayerNorm.weight"], w[L + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / max(np.linalg.norm(pooled), 1e-12)


def load():
    from tokenizers import Tokenizer  # here, so importers that need no tokenizer need no package

    d = model_dir()
    for f in ("model.safetensors", "tokenizer.json"):
        if not (d / f).is_file():
            sys.exit(f"{d / f} is missing: run python3 hipdnn-rs/examples/minilm/fetch.py")
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)  # sentence-transformers' max_seq_length for this model
    return read_safetensors(d / "model.safetensors"), tok


def main() -> int:
    args = sys.argv[1:]
    weights, tok = load()
    if args == ["--golden"]:
        ids = [tok.encode(s).ids for s in SENTENCES]
        emb = np.stack([encode(weights, i) for i in ids])
        doc = {
            "about": "all-MiniLM-L6-v2 embeddings from hipdnn-rs/examples/minilm/reference.py "
                     "(numpy float64, each sentence unpadded); regenerate with --golden",
            "model_sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "tokenizer_sha256": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            "sentences": SENTENCES,
            "token_ids": ids,
            "cosine": [[float(f"{c:.9g}") for c in row] for row in emb @ emb.T],
            "embeddings": [[float(f"{v:.9g}") for v in row] for row in emb],
        }
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    if len(args) < 2 or any(a.startswith("--") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    emb = [encode(weights, tok.encode(s).ids) for s in args]
    for i in range(1, len(args)):
        print(f"cosine(1, {i + 1}) = {float(emb[0] @ emb[i]):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
