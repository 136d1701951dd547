"""CPU check of pointwise_fused.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no
torch.

Usage: `PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3
engines/kernels/triton/interpret_pointwise_fused.py` (triton==3.9.0 from the pack venv and a
system python 3.11 with numpy, as for interpret_norm_fwd.py).

Runs both kernels (flat `spec` and strided `generic`) on every pointwise mode (one node),
f32/f16/bf16 entries, broadcast 5-D shapes with odd extents (strides 0 on broadcast dims, a
transposed input, a strided output), one-element inputs of the flat kernel, f32 and byte
(BOOLEAN) tensors behind a 16-bit entry, and chains of 2-4 nodes whose intermediates are rounded
to f16/bf16, against a numpy float32 transcription of the CPU reference engine
(engines/src/reference/ops/pointwise.rs; float64 for its erf fit). Exact modes must match bit
for bit; modes through the device library (exp, log, sin, tan, tanh and those built on them) to
4 f32 ulps relative, or one ulp of a 16-bit output. Prints one line per case and exits 1 on any
failure.

The interpreter runs the programs one after the other on the host with numpy: it checks the
indexing, the broadcast strides, the node program (slot selection, parameters, rounding codes),
the type codes and masking, not the device code generation. `libdevice` has no interpreter
implementation, so its functions are replaced here by numpy's (float32). Not part of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.runtime.interpreter as interp  # noqa: E402
from triton.runtime.interpreter import TensorHandle  # noqa: E402

import pointwise_fused as pf  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits, to_bf16_bits  # noqa: E402


class _NumpyLibdevice:
    """libdevice functions for the interpreter: numpy float32 over the tensor's data."""

    def __getattr__(self, name):
        fn = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "sin": np.sin, "tan": np.tan,
              "tanh": np.tanh}[name]

        def call(x, _semantic=None):
            d = fn(x.handle.data.astype(np.float32)).astype(np.float32)
            return tl.core.tensor(TensorHandle(d, x.handle.dtype), x.type)
        return call


pf.libdevice = _NumpyLibdevice()

# The interpreter narrows f32 to bf16 by truncation whatever the rounding mode says; the device
# (and the kernel's explicit "rtne") rounds to nearest even.
_convert_float = interp._convert_float


def _convert_float_rne(data, src, dst, rounding_mode):
    if src == tl.float32 and dst == tl.bfloat16:
        return to_bf16_bits(data.view(np.float32))
    return _convert_float(data, src, dst, rounding_mode)


interp._convert_float = _convert_float_rne

F = np.float32
EXACT = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 22, 23, 25, 26, 27, 28, 29, 30, 31, 32, 33,
         34, 35, 41, 42}
UNARY = [1, 5, 14, 15, 16, 17, 19, 21, 22, 23, 24, 26, 31, 32, 34, 35, 37, 38, 40, 41, 44, 45, 47]
BINARY = [2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 18, 20, 25, 27, 28, 29, 30, 33, 36, 39, 42, 43, 46]


def erf_ref(x):
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    p = -0.82215223 + t * 0.17087277
    for c in [1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
              1.00002368]:
        p = c + t * p
    e = 1.0 - t * np.exp(-z * z - 1.26551223 + t * p)
    return np.where(x >= 0, e, -e).astype(F)


def sig(x):
    return (F(1) / (F(1) + np.exp(-x))).astype(F)


def ref(m, a, b, c, p, idx):
    """One node of the reference engine in float32 (p = (p0, p1, p2))."""
    one, zero = F(1), F(0)
    p0, p1, p2 = F(p[0]), F(p[1]), F(p[2])
    s2p, gc, r2 = F(0.7978846), F(0.044715), F(0.70710677)
    with np.errstate(all="ignore"):
        r = {
            1: lambda: np.abs(a), 5: lambda: np.ceil(a), 15: lambda: erf_ref(a),
            16: lambda: np.exp(a), 17: lambda: np.floor(a),
            22: lambda: ((idx // int(p0)) % int(p1)).astype(F), 23: lambda: a,
            24: lambda: np.log(a), 26: lambda: np.where(a == 0, one, zero), 31: lambda: -a,
            32: lambda: one / a,
            34: lambda: np.where(a <= p0, p2 * (a - p0) + p0, np.where(a >= p1, p1, a)),
            35: lambda: one / np.sqrt(a), 37: lambda: sig(a), 38: lambda: np.sin(a),
            40: lambda: np.where(p0 * a > 20, a, np.log1p(np.exp(p0 * a)) / p0),
            41: lambda: np.sqrt(a), 45: lambda: np.tan(a), 47: lambda: np.tanh(a),
            14: lambda: np.where(a > 0, a, p0 * (np.exp(a) - one)),
            21: lambda: F(0.5) * a * (one + erf_ref(a * r2)),
            19: lambda: F(0.5) * a * (one + np.tanh(s2p * (a + gc * a * a * a))),
            44: lambda: a * sig(p0 * a),
            2: lambda: a + b, 3: lambda: a + b * b, 6: lambda: (a == b).astype(F),
            7: lambda: (a >= b).astype(F), 8: lambda: (a > b).astype(F),
            9: lambda: (a <= b).astype(F), 10: lambda: (a < b).astype(F),
            11: lambda: (a != b).astype(F), 12: lambda: a / b, 28: lambda: np.fmax(a, b),
            29: lambda: np.fmin(a, b), 30: lambda: a * b, 42: lambda: a - b,
            25: lambda: ((a != 0) & (b != 0)).astype(F), 27: lambda: ((a != 0) | (b != 0)).astype(F),
            33: lambda: a * np.where(b <= p0, p2, np.where(b >= p1, zero, one)),
            36: lambda: a * sig(b) * (one - sig(b)),
            46: lambda: a * (one - np.tanh(b) * np.tanh(b)),
            13: lambda: a * np.where(b > 0, one, p0 * np.exp(b)),
            20: lambda: a * (F(0.5) * (one + erf_ref(b * r2)) + b * (np.exp(F(-0.5) * b * b)
                                                                     * F(0.3989423))),
            18: lambda: a * (F(0.5) * (one + np.tanh(s2p * (b + gc * b * b * b)))
                             + F(0.5) * b * (one - np.tanh(s2p * (b + gc * b * b * b)) ** 2)
                             * (s2p * (one + F(3.0) * gc * b * b))),
            39: lambda: a * sig(p0 * b),
            43: lambda: a * (sig(p0 * b) + p0 * b * sig(p0 * b) * (one - sig(p0 * b))),
            4: lambda: np.where(c != 0, a, b),
        }[m]()
    return np.asarray(r, dtype=F)


def quant(v, dt):
    """f32 values rounded to dt and widened back (the reference's virtual tensors)."""
    if dt == "f16":
        return v.astype(np.float16).astype(F)
    if dt == "bf16":
        return from_bf16_bits(to_bf16_bits(v))
    if dt == "bool":
        return (v != 0).astype(F)
    return v.astype(F)


def device(values, dt):
    """Memory holding `values` (already representable) in dt, wrapped for the kernel."""
    if dt == "f16":
        return values.astype(np.float16)
    if dt == "bf16":
        return to_bf16_bits(values)
    if dt == "bool":
        return (values != 0).astype(np.uint8)
    return values.astype(F)


def as_entry(arr, entry):
    """The array as the kernel's entry-typed pointer (f32/byte memory behind a 16-bit entry)."""
    if entry == "bf16":
        return Arr(arr.view(np.uint16), dtype=tl.bfloat16)
    if entry == "f16":
        return Arr(arr.view(np.float16) if arr.dtype != np.uint8 else arr)
    return Arr(arr)


CODE = {"f32": 1, "bool": 2}


LIGHT = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 22, 23, 25, 26, 27, 28, 29, 30, 31, 32, 33,
         34, 35, 41, 42}


def run(entry, variant, out_dims, inputs, nodes, out_dt=None, out_strides=None, seed=0,
        block=64):
    """inputs: list of (dims, dt, transposed); nodes: list of (mode, a, b, c, params, rnd_dt).
    Returns (ok, message)."""
    rng = np.random.default_rng(seed)
    out_dt = out_dt or entry
    nd = len(out_dims)
    n = int(np.prod(out_dims))
    vals, mems, strides = [], [], []
    for dims, dt, transposed in inputs:
        v = quant((rng.standard_normal(dims) * 2.0).astype(F), dt)
        if dt == "bool":
            v = (rng.random(dims) < 0.5).astype(F)
        vals.append(v)
        full = [1] * (nd - len(dims)) + list(dims)
        if transposed:
            mem = device(np.ascontiguousarray(v.reshape(full).T), dt).reshape(-1)
            st = [int(np.prod(full[:k])) for k in range(nd)]
        else:
            mem = device(v, dt).reshape(-1)
            st = [int(np.prod(full[k + 1:])) for k in range(nd)]
        st = [0 if full[k] == 1 else st[k] for k in range(nd)]
        mems.append(mem)
        strides.append([0] * (5 - nd) + st)
    # Reference: the nodes in order on broadcast views, each result rounded to its type.
    slots = [np.broadcast_to(v.reshape([1] * (nd - v.ndim) + list(v.shape)), out_dims)
             for v in vals]
    slots += [None] * (4 - len(slots))
    idx = np.arange(n).reshape(out_dims)
    for (m, a, b, c, p, rdt) in nodes:
        r = ref(m, slots[a], slots[b] if b < len(slots) and slots[b] is not None else slots[a],
                slots[c] if slots[c] is not None else slots[a], p, idx)
        slots.append(quant(np.broadcast_to(r, out_dims), rdt or "f32"))
    want = quant(slots[-1], out_dt)
    # Output memory (NaN-filled) and its strides.
    if out_strides is None:
        ys = [int(np.prod(out_dims[k + 1:])) for k in range(nd)]
        ylen = n
    else:
        ys = list(out_strides)
        ylen = sum((d - 1) * s for d, s in zip(out_dims, ys)) + 1
    ymem = device(np.full(ylen, np.nan, dtype=F), out_dt)
    flags = (len(inputs) << 16) | (len(nodes) << 20) | (CODE.get(out_dt, 0) << 8)
    for t, (dims, dt, _) in enumerate(inputs):
        flags |= CODE.get(dt, 0) << (2 * t)
        if variant == "spec" and int(np.prod(dims)) == 1:
            flags |= 1 << (12 + t)
    ops, ps = [], []
    for (m, a, b, c, p, rdt) in nodes:
        rnd = {"f16": 1, "bf16": 2}.get(rdt, 0)
        ops.append(m | a << 8 | b << 12 | c << 16 | rnd << 20)
        ps += list(p)
    ops += [0] * (4 - len(ops))
    ps += [0.0] * (12 - len(ps))
    xs = [as_entry(m_, entry) for m_ in mems] + [as_entry(mems[0], entry)] * (4 - len(mems))
    grid = (triton.cdiv(n, block),)
    # The light group (GROUP_M 2) serves one node of a light mode; the full group the rest.
    group = 2 if len(nodes) == 1 and nodes[0][0] in LIGHT else 1
    if variant == "spec":
        pf.hipdnn_pointwise_flat[grid](*xs, as_entry(ymem, entry), n, flags, *ops, *ps,
                                       BLOCK_M=block, GROUP_M=group)
    else:
        d = [1] * (5 - nd) + list(out_dims)
        st = [s for t in range(4) for s in (strides[t] if t < len(strides) else [0] * 5)]
        sy = [0] * (5 - nd) + ys
        pf.hipdnn_pointwise[grid](*xs, as_entry(ymem, entry), n, *d[1:], *st, *sy, flags,
                                  *ops, *ps, BLOCK_M=block, GROUP_M=group)
    if out_dt == "bf16":
        got_flat = from_bf16_bits(ymem)
    else:
        got_flat = ymem.astype(F)
    offs = sum(np.indices(out_dims)[k] * ys[k] for k in range(nd))
    got = got_flat[offs]
    exact = all(nd_[0] in EXACT for nd_ in nodes)
    if exact:
        ok = np.array_equal(got, want, equal_nan=True)
        err = 0.0 if ok else float(np.nanmax(np.abs(got - want)))
    else:
        tol = {"f32": 4 * 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7, "bool": 0.0}[out_dt]
        d = np.abs(got.astype(np.float64) - want) / (1.0 + np.abs(want))
        d = np.where(np.isnan(got) & np.isnan(want), 0.0, d)
        err = float(np.nanmax(d)) if d.size else 0.0
        ok = err <= tol and not np.isnan(d).any()
    return ok, f"group {group} err {err:.2e}"


def params(m):
    if m in (34, 33):
        return (-0.5, 1.5, 0.1)
    if m in (14, 13, 40, 39, 44, 43):
        return (1.3, 0.0, 0.0)
    return (0.0, 0.0, 0.0)


def main():
    cases = []
    entries = ["f32", "f16", "bf16"]
    # Every mode, one node; spec (dense, 16-multiple extents) and generic (5-D broadcast).
    for i, m in enumerate(UNARY + BINARY + [4]):
        e = entries[i % 3]
        arity = 1 if m in UNARY else (2 if m in BINARY else 3)
        p = params(m)
        if m == 22:
            p = (7.0, 3.0, 0.0)  # axis 3 of (2, 3, 5, 3, 7): inner 7, extent 3
        ins_spec = [([4, 48], e, False)] * arity
        ins_gen = [([2, 3, 5, 1, 7], e, False), ([3, 1, 3, 1], e, True),
                   ([2, 1, 5, 3, 7], "f32" if e != "f32" else e, False)][:arity]
        node = [(m, 0, 1 if arity > 1 else 0, 2 if arity > 2 else 0, p, None)]
        if m != 22:
            cases.append((f"mode {m:2} {e:4} spec", e, "spec", [4, 48], ins_spec, node, {}))
        cases.append((f"mode {m:2} {e:4} generic", e, "generic", [2, 3, 5, 3, 7], ins_gen, node,
                      {}))
    # Chains: bias + ReLU + scale (3 nodes, f16 intermediate), a DAG of 4 nodes, one-element
    # inputs (spec), a BOOLEAN select condition and a BOOLEAN comparison output, a strided
    # output.
    cases.append(("chain add-relu-mul f16 spec", "f16", "spec", [3, 64],
                  [([3, 64], "f16", False), ([1, 1], "f16", False), ([1], "f32", False)],
                  [(2, 0, 1, 0, (0, 0, 0), "f16"), (34, 4, 0, 0, (0.0, 3.4e38, 0.0), "f16"),
                   (30, 5, 2, 0, (0, 0, 0), None)], {}))
    cases.append(("dag of 4 bf16 generic", "bf16", "generic", [5, 1, 9],
                  [([5, 1, 9], "bf16", False), ([9], "bf16", False), ([5, 1, 1], "f32", False),
                   ([1, 1, 9], "bf16", True)],
                  [(30, 0, 1, 0, (0, 0, 0), "f32"), (37, 4, 0, 0, (0, 0, 0), "bf16"),
                   (4, 5, 3, 2, (0, 0, 0), "bf16"), (42, 6, 4, 0, (0, 0, 0), None)], {}))
    cases.append(("chain gelu_bwd*x f32 spec", "f32", "spec", [2, 32],
                  [([2, 32], "f32", False), ([2, 32], "f32", False)],
                  [(20, 0, 1, 0, (0, 0, 0), None), (30, 4, 1, 0, (0, 0, 0), None)], {}))
    cases.append(("select bool cond f16 generic", "f16", "generic", [4, 5],
                  [([4, 5], "f16", False), ([5], "f16", False), ([4, 1], "bool", False)],
                  [(4, 0, 1, 2, (0, 0, 0), None)], {}))
    cases.append(("cmp_gt to bool f32 generic", "f32", "generic", [3, 7],
                  [([3, 7], "f32", False), ([1], "f32", False)],
                  [(8, 0, 1, 0, (0, 0, 0), None)], {"out_dt": "bool"}))
    cases.append(("add strided y f32 generic", "f32", "generic", [3, 5],
                  [([3, 5], "f32", False), ([3, 1], "f32", False)],
                  [(2, 0, 1, 0, (0, 0, 0), None)], {"out_strides": [1, 4]}))
    cases.append(("add f16 spec two blocks + tail", "f16", "spec", [208],
                  [([208], "f16", False), ([208], "f16", False)],
                  [(2, 0, 1, 0, (0, 0, 0), None)], {"block": 128}))
    ok_all = True
    for k, (name, e, v, dims, ins, nodes, kw) in enumerate(cases):
        ok, msg = run(e, v, dims, ins, nodes, seed=k, **kw)
        ok_all &= ok
        print(f"{'ok ' if ok else 'BAD'} {name:40} dims {dims} {msg}")
    print("all ok" if ok_all else "FAILURES")
    sys.exit(0 if ok_all else 1)


if __name__ == "__main__":
    main()
