#!/usr/bin/env python3
"""The `train` example's models trained in float64 numpy: the peer their loss curves are checked against.

`--model cnn` (default):

Reads, from the example's output directory: `init.safetensors` (the initial parameters, momentum
buffers and running statistics), `batches.json` (image indices per step), and the digits from
`$HIPDNN_DIGITS_DIR/digits.csv` (default `target/digits/`). Trains the same model (conv 3x3 pad 1
(8) -> batchnorm (batch statistics) -> ReLU -> max pool 2x2 -> conv 3x3 pad 1 (16) -> batchnorm ->
ReLU -> max pool 2x2 -> linear 64 -> 10, softmax cross-entropy, SGD with momentum) for every step
of `batches.json`, with the gradients written out by hand (the PyTorch autograd formulas), and
writes `peer_losses.json` (the loss of each step, before its update).

`--model transformer`: the one-block pre-LN transformer of `transformer.rs` (one-hot tokens times
the embedding plus positions -> layernorm -> 2-head SDPA with per-head Q/K/V/O weights ->
residual -> layernorm -> erf-GELU MLP -> residual -> mean over tokens -> linear -> softmax
cross-entropy) on the training sequences of `sequences.json` (`{"tokens", "labels"}`), the
gradients written out by hand in the same way.

`--optimizer sgd` (default: PyTorch's SGD with momentum) or `adamw` (PyTorch's AdamW: betas
(0.9, 0.999), eps 1e-8, weight decay 0.01, bias correction with beta**t).

Usage: python3 numpy_peer.py OUT_DIR [--model cnn|transformer] [--optimizer sgd|adamw]
       [--lr 0.05] [--momentum 0.9]
"""

import math

import argparse
import json
import os
import pathlib
import struct
import sys

import numpy as np

EPS = 1e-5
BN_MOMENTUM = 0.1


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        dt = {"F32": np.float32, "U64": np.uint64}[t["dtype"]]
        out[name] = np.frombuffer(data[a:b], dtype=dt).reshape(t["shape"])
    return out


def im2col(x, pad=1):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((n, c, 3, 3, h, w))
    for i in range(3):
        for j in range(3):
            cols[:, :, i, j] = xp[:, :, i : i + h, j : j + w]
    return cols.reshape(n, c * 9, h * w)


def conv(x, w):
    n, _, h, wd = x.shape
    return np.einsum("kc,ncp->nkp", w.reshape(w.shape[0], -1), im2col(x)).reshape(n, w.shape[0], h, wd)


def conv_wgrad(x, dy, wshape):
    n, k, h, w = dy.shape
    return np.einsum("nkp,ncp->kc", dy.reshape(n, k, h * w), im2col(x)).reshape(wshape)


def conv_dgrad(dy, w):
    # Full correlation with the flipped, transposed filter (stride 1, pad 1, 3x3).
    wf = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    return conv(dy, wf)


def bn_forward(x, g, b, rm, rv):
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    inv = 1.0 / np.sqrt(var + EPS)
    xhat = (x - mean) * inv
    rm = (1 - BN_MOMENTUM) * rm + BN_MOMENTUM * mean
    rv = (1 - BN_MOMENTUM) * rv + BN_MOMENTUM * var * n / (n - 1)
    return xhat * g + b, (xhat, inv, g), rm, rv


def bn_backward(dy, cache):
    xhat, inv, g = cache
    n = dy.shape[0] * dy.shape[2] * dy.shape[3]
    dbeta = dy.sum(axis=(0, 2, 3), keepdims=True)
    dgamma = (dy * xhat).sum(axis=(0, 2, 3), keepdims=True)
    dx = g * inv / n * (n * dy - dbeta - xhat * dgamma)
    return dx, dgamma, dbeta


def pool_forward(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    idx = win.argmax(axis=-1)  # first maximum, row-major inside the window
    return np.take_along_axis(win, idx[..., None], axis=-1)[..., 0], idx


def pool_backward(dy, idx):
    n, c, h2, w2 = dy.shape
    win = np.zeros((n, c, h2, w2, 4))
    np.put_along_axis(win, idx[..., None], dy[..., None], axis=-1)
    return win.reshape(n, c, h2, w2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h2 * 2, w2 * 2)


def digits():
    d = pathlib.Path(os.environ.get("HIPDNN_DIGITS_DIR", pathlib.Path(__file__).resolve().parents[3] / "target" / "digits"))
    a = np.loadtxt(d / "digits.csv", delimiter=",")
    return a[:, :64] / 16.0, a[:, 64].astype(int)


CNN_PARAMS = ["conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight", "bn2.bias", "fc.weight", "fc.bias"]


class Cnn:
    names = CNN_PARAMS

    def __init__(self, st):
        self.run = {k: st[k].astype(np.float64).reshape(1, -1, 1, 1) for k in ["bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"]}
        self.xs, self.ys = digits()

    def loss_and_grads(self, p, idx):
        run = self.run
        x = self.xs[idx].reshape(-1, 1, 8, 8)
        y = self.ys[idx]
        bsz = len(idx)
        c1 = conv(x, p["conv1.weight"])
        a1, bn1, run["bn1.running_mean"], run["bn1.running_var"] = bn_forward(c1, p["bn1.weight"], p["bn1.bias"], run["bn1.running_mean"], run["bn1.running_var"])
        r1 = np.maximum(a1, 0)
        p1, i1 = pool_forward(r1)
        c2 = conv(p1, p["conv2.weight"])
        a2, bn2, run["bn2.running_mean"], run["bn2.running_var"] = bn_forward(c2, p["bn2.weight"], p["bn2.bias"], run["bn2.running_mean"], run["bn2.running_var"])
        r2 = np.maximum(a2, 0)
        p2, i2 = pool_forward(r2)
        h = p2.reshape(bsz, -1)
        wfc = p["fc.weight"].reshape(64, 10)
        logits = h @ wfc + p["fc.bias"].reshape(1, 10)
        loss, dlogits = softmax_ce(logits, y)
        g = {}
        g["fc.weight"] = (h.T @ dlogits).reshape(p["fc.weight"].shape)
        g["fc.bias"] = dlogits.sum(axis=0).reshape(p["fc.bias"].shape)
        dp2 = (dlogits @ wfc.T).reshape(p2.shape)
        da2 = pool_backward(dp2, i2) * (a2 > 0)
        dc2, g["bn2.weight"], g["bn2.bias"] = bn_backward(da2, bn2)
        g["conv2.weight"] = conv_wgrad(p1, dc2, p["conv2.weight"].shape)
        dp1 = conv_dgrad(dc2, p["conv2.weight"])
        da1 = pool_backward(dp1, i1) * (a1 > 0)
        dc1, g["bn1.weight"], g["bn1.bias"] = bn_backward(da1, bn1)
        g["conv1.weight"] = conv_wgrad(x, dc1, p["conv1.weight"].shape)
        return loss, g


def softmax_ce(logits, y):
    """Mean cross-entropy of the rows of `logits` and its gradient (softmax - onehot) / B."""
    bsz, k = logits.shape
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    logp = logits - m - np.log(s)
    loss = float(-logp[np.arange(bsz), y].mean())
    return loss, (e / s - np.eye(k)[y]) / bsz


TF_PARAMS = ["tok_emb", "pos_emb", "ln1.weight", "ln1.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.k.bias",
             "attn.v.weight", "attn.v.bias", "attn.o.weight", "attn.o.bias", "ln2.weight", "ln2.bias", "mlp.fc1.weight",
             "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias", "head.weight", "head.bias"]
LN_EPS = 1e-5
_erf = np.vectorize(math.erf)


def ln_forward(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(x.var(axis=-1, keepdims=True) + LN_EPS)
    xhat = (x - mean) * inv
    return xhat * g + b, (xhat, inv, g)


def ln_backward(dy, cache):
    xhat, inv, g = cache
    dxhat = dy * g
    dx = inv * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, (dy * xhat).sum(axis=(0, 1)), dy.sum(axis=(0, 1))


class Transformer:
    names = TF_PARAMS

    def __init__(self, st, out):
        seqs = json.loads((out / "sequences.json").read_text())
        self.tokens = np.array(seqs["tokens"], dtype=int)
        self.labels = np.array(seqs["labels"], dtype=int)

    def loss_and_grads(self, p, idx):
        tok, y = self.tokens[idx], self.labels[idx]
        bsz, t = tok.shape
        v_, d = p["tok_emb"].shape[-2:]
        nh, _, dh = p["attn.q.weight"].shape[1:]
        q2 = lambda k: p[k].reshape(p[k].shape[1:])  # drop the leading 1
        onehot = np.eye(v_)[tok]  # (B, T, V)
        x0 = onehot @ q2("tok_emb")[0] + q2("pos_emb")[0]
        h1, c1 = ln_forward(x0, p["ln1.weight"].reshape(d), p["ln1.bias"].reshape(d))
        proj = {}
        for n in "qkv":
            proj[n] = np.einsum("btd,hde->bhte", h1, q2(f"attn.{n}.weight")) + q2(f"attn.{n}.bias")[None]
        q, k, v = proj["q"], proj["k"], proj["v"]
        scale = 1.0 / math.sqrt(dh)
        s = scale * q @ k.transpose(0, 1, 3, 2)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        pr = e / e.sum(axis=-1, keepdims=True)
        o = pr @ v
        wo = q2("attn.o.weight")  # (H, DH, D)
        x1 = x0 + np.einsum("bhte,hed->btd", o, wo) + p["attn.o.bias"].reshape(d)
        h2, c2 = ln_forward(x1, p["ln2.weight"].reshape(d), p["ln2.bias"].reshape(d))
        w1, w2 = q2("mlp.fc1.weight")[0], q2("mlp.fc2.weight")[0]
        u = h2 @ w1 + p["mlp.fc1.bias"].reshape(-1)
        cdf = 0.5 * (1.0 + _erf(u / math.sqrt(2.0)))
        gact = u * cdf
        x2 = x1 + gact @ w2 + p["mlp.fc2.bias"].reshape(d)
        pooled = x2.mean(axis=1)
        wc = q2("head.weight")[0]
        logits = pooled @ wc + p["head.bias"].reshape(-1)
        loss, dl = softmax_ce(logits, y)
        g = {}
        g["head.weight"] = pooled.T @ dl
        g["head.bias"] = dl.sum(axis=0)
        dx2 = np.repeat((dl @ wc.T)[:, None, :] / t, t, axis=1)
        g["mlp.fc2.weight"] = np.einsum("btf,btd->fd", gact, dx2)
        g["mlp.fc2.bias"] = dx2.sum(axis=(0, 1))
        du = (dx2 @ w2.T) * (cdf + u * np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi))
        g["mlp.fc1.weight"] = np.einsum("btd,btf->df", h2, du)
        g["mlp.fc1.bias"] = du.sum(axis=(0, 1))
        dx1n, g["ln2.weight"], g["ln2.bias"] = ln_backward(du @ w1.T, c2)
        dx1 = dx2 + dx1n
        g["attn.o.bias"] = dx1.sum(axis=(0, 1))
        g["attn.o.weight"] = np.einsum("bhte,btd->hed", o, dx1)
        do = np.einsum("btd,hed->bhte", dx1, wo)
        dv = pr.transpose(0, 1, 3, 2) @ do
        dp = do @ v.transpose(0, 1, 3, 2)
        ds = pr * (dp - (dp * pr).sum(axis=-1, keepdims=True))
        grads = {"q": scale * ds @ k, "k": scale * ds.transpose(0, 1, 3, 2) @ q, "v": dv}
        dh1 = np.zeros_like(h1)
        for n in "qkv":
            dn = grads[n]
            g[f"attn.{n}.weight"] = np.einsum("btd,bhte->hde", h1, dn)
            g[f"attn.{n}.bias"] = dn.sum(axis=(0, 2))
            dh1 += np.einsum("bhte,hde->btd", dn, q2(f"attn.{n}.weight"))
        dx0n, g["ln1.weight"], g["ln1.bias"] = ln_backward(dh1, c1)
        dx0 = dx1 + dx0n
        g["pos_emb"] = dx0.sum(axis=0)
        g["tok_emb"] = np.einsum("btv,btd->vd", onehot, dx0)
        return loss, {k: g[k].reshape(p[k].shape) for k in g}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model", choices=["cnn", "transformer"], default="cnn")
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    st = read_safetensors(out / "init.safetensors")
    model = Cnn(st) if a.model == "cnn" else Transformer(st, out)
    names = model.names
    p = {k: st[k].astype(np.float64) for k in names}
    if a.optimizer == "sgd":
        v = {k: st["v." + k].astype(np.float64) for k in names}
    else:
        m = {k: st["exp_avg." + k].astype(np.float64) for k in names}
        v = {k: st["exp_avg_sq." + k].astype(np.float64) for k in names}
        b1, b2, eps, wd = 0.9, 0.999, 1e-8, 0.01
        t = int(st["step"][0])
    batches = json.loads((out / "batches.json").read_text())
    losses = []
    for idx in batches:
        loss, g = model.loss_and_grads(p, idx)
        losses.append(loss)
        if a.optimizer == "sgd":
            for k in names:
                v[k] = a.momentum * v[k] + g[k].reshape(v[k].shape)
                p[k] = p[k] - a.lr * v[k]
        else:
            t += 1
            for k in names:
                p[k] = p[k] * (1 - a.lr * wd)
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
                denom = np.sqrt(v[k]) / math.sqrt(1 - b2**t) + eps
                p[k] = p[k] - (a.lr / (1 - b1**t)) * m[k] / denom
    (out / "peer_losses.json").write_text(json.dumps(losses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
