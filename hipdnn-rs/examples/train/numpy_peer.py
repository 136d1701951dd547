#!/usr/bin/env python3
"""The `train` example's CNN trained in float64 numpy: the peer its loss curve is checked against.

Reads, from the example's output directory: `init.safetensors` (the initial parameters, momentum
buffers and running statistics), `batches.json` (image indices per step), and the digits from
`$HIPDNN_DIGITS_DIR/digits.csv` (default `target/digits/`). Trains the same model (conv 3x3 pad 1
(8) -> batchnorm (batch statistics) -> ReLU -> max pool 2x2 -> conv 3x3 pad 1 (16) -> batchnorm ->
ReLU -> max pool 2x2 -> linear 64 -> 10, softmax cross-entropy, SGD with momentum) for every step
of `batches.json`, with the gradients written out by hand (the PyTorch autograd formulas), and
writes `peer_losses.json` (the loss of each step, before its update).

Usage: python3 numpy_peer.py OUT_DIR [--lr 0.05] [--momentum 0.9]
"""

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    st = read_safetensors(out / "init.safetensors")
    names = ["conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight", "bn2.bias", "fc.weight", "fc.bias"]
    p = {k: st[k].astype(np.float64) for k in names}
    v = {k: st["v." + k].astype(np.float64) for k in names}
    run = {k: st[k].astype(np.float64).reshape(1, -1, 1, 1) for k in ["bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"]}
    batches = json.loads((out / "batches.json").read_text())
    xs, ys = digits()
    losses = []
    for idx in batches:
        x = xs[idx].reshape(-1, 1, 8, 8)
        y = ys[idx]
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
        m = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(axis=1, keepdims=True)
        logp = logits - m - np.log(s)
        losses.append(float(-logp[np.arange(bsz), y].mean()))
        onehot = np.eye(10)[y]
        dlogits = (e / s - onehot) / bsz
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
        for k in names:
            v[k] = a.momentum * v[k] + g[k].reshape(v[k].shape)
            p[k] = p[k] - a.lr * v[k]
    (out / "peer_losses.json").write_text(json.dumps(losses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
