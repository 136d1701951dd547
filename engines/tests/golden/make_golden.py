#!/usr/bin/env python3
"""Golden outputs for the CPU reference engine tests (provider/tests/reference_golden.rs).

Computed once with numpy (float64 accumulation, stored as float32). Every array is written as
little-endian float32 raw bytes (<name>.bin), row-major over the logical dims; shapes and
parameters are in golden.json. Run from this directory: python3 make_golden.py
"""
import json
import numpy as np

rng = np.random.RandomState(20240531)
meta = {}


def save(name, a):
    np.asarray(a, dtype="<f4").tofile(f"{name}.bin")


def rand(*shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


# conv fprop: x (1, 4, 7, 6), w (6, 2, 3, 3) -> groups 2; pre (1, 2), post (0, 1),
# stride (2, 1), dilation (1, 2); cross-correlation.
x = rand(1, 4, 7, 6)
w = rand(6, 2, 3, 3)
pre, post, stride, dil = (1, 2), (0, 1), (2, 1), (1, 2)
g = x.shape[1] // w.shape[1]
xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pre[0], post[0]), (pre[1], post[1])))
oh = (xp.shape[2] - dil[0] * (w.shape[2] - 1) - 1) // stride[0] + 1
ow = (xp.shape[3] - dil[1] * (w.shape[3] - 1) - 1) // stride[1] + 1
kg, cg = w.shape[0] // g, w.shape[1]
y = np.zeros((1, w.shape[0], oh, ow))
for k in range(w.shape[0]):
    gi = k // kg
    for i in range(oh):
        for j in range(ow):
            patch = xp[0, gi * cg:(gi + 1) * cg,
                       i * stride[0]:i * stride[0] + dil[0] * (w.shape[2] - 1) + 1:dil[0],
                       j * stride[1]:j * stride[1] + dil[1] * (w.shape[3] - 1) + 1:dil[1]]
            y[0, k, i, j] = np.sum(patch * w[k].astype(np.float64))
save("conv_x", x)
save("conv_w", w)
save("conv_y", y)
meta["conv"] = {"x": list(x.shape), "w": list(w.shape), "y": list(y.shape), "pre": pre,
                "post": post, "stride": stride, "dilation": dil}

# matmul with broadcast batch: a (2, 3, 5, 7) x b (3, 7, 4) -> c (2, 3, 5, 4)
a = rand(2, 3, 5, 7)
b = rand(3, 7, 4)
c = np.matmul(a.astype(np.float64), b.astype(np.float64))
save("matmul_a", a)
save("matmul_b", b)
save("matmul_c", c)
meta["matmul"] = {"a": list(a.shape), "b": list(b.shape), "c": list(c.shape)}

# sdpa: q (1, 4, 5, 8), k/v (1, 2, 6, 8) (grouped-query), scale 0.3, causal bottom-right,
# stats = logsumexp.
q = rand(1, 4, 5, 8)
k = rand(1, 2, 6, 8)
v = rand(1, 2, 6, 8)
scale = 0.3
s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64),
              np.repeat(k, 2, axis=1).astype(np.float64)) * scale
sq, skv = q.shape[2], k.shape[2]
mask = np.arange(skv)[None, :] > (np.arange(sq)[:, None] + (skv - sq))
s = np.where(mask, -np.inf, s)
m = s.max(-1, keepdims=True)
p = np.exp(s - m)
o = np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True),
              np.repeat(v, 2, axis=1).astype(np.float64))
stats = m + np.log(p.sum(-1, keepdims=True))
save("sdpa_q", q)
save("sdpa_k", k)
save("sdpa_v", v)
save("sdpa_o", o)
save("sdpa_stats", stats)
meta["sdpa"] = {"q": list(q.shape), "k": list(k.shape), "v": list(v.shape), "o": list(o.shape),
                "scale": scale, "causal": "bottom_right"}

with open("golden.json", "w") as f:
    json.dump(meta, f, indent=1, sort_keys=True)
    f.write("\n")
