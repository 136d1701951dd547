"""CPU check of gather.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_gather.py   (needs triton==3.9.0 and numpy; e.g.
`PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3 interpret_gather.py`
with a system python 3.11 that has numpy; engines/tests/triton_gather.rs runs it so)

Runs the kernel on random tables (f32, f16 and bf16 bit patterns, NaN and -0.0 included) with
row counts and widths that are not multiples of the tiles, INT32 and INT64 indices holding
negative and past-the-end values, strided (transposed) tables, index and output views, every
tile config of the family, against numpy's row gather with zero rows for the indices outside
the table. Every output element must equal the expected bits exactly. The interpreter runs the
programs one after the other on the host: it checks indexing and masking, not the device code
generation. Not part of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import gather  # noqa: E402
from interpret_norm_fwd import Arr  # noqa: E402

BITS = {"f32": np.uint32, "f16": np.uint16, "bf16": np.uint16}
VIEW = {"f32": np.float32, "f16": np.float16, "bf16": None}


def wrap(a, dt):
    """The interpreter takes the element type from `dtype`: bf16 bits are announced as such."""
    if dt == "bf16":
        return Arr(a, dtype=tl.bfloat16)
    if dt in VIEW:
        return Arr(a.view(VIEW[dt]))
    return Arr(a)


def run_case(n, h, v, dt, idx64, cfg, t_transposed, y_strided, seed):
    rng = np.random.default_rng(seed)
    bm, bn = cfg[0], cfg[1]
    bits = BITS[dt]
    # Random bit patterns of the type (NaNs and signed zeros among them).
    table_rows = rng.integers(0, np.iinfo(bits).max, size=(v, h), dtype=bits, endpoint=True)
    table_rows[0, 0] = 0x80000000 if bits == np.uint32 else 0x8000
    if t_transposed:
        store = np.ascontiguousarray(table_rows.T)  # column-major table: stv 1, sth v
        stv, sth = 1, v
    else:
        store = table_rows.copy()
        stv, sth = h, 1
    index = rng.integers(-3, v + 3, size=n, dtype=np.int64)
    index[0] = v  # one past the end
    if n > 1:
        index[1] = -1
    si = 2  # every other element of the index buffer
    ibuf = np.full(n * si, 7, dtype=np.int64 if idx64 else np.int32)
    ibuf[::si] = index
    syr = h + 5 if y_strided else h
    ybuf = np.full(n * syr, 0x5A5A5A5A if bits == np.uint32 else 0x5A5A, dtype=bits)
    want = ybuf.copy()
    for r in range(n):
        i = index[r]
        want[r * syr:r * syr + h] = table_rows[i] if 0 <= i < v else 0
    ip = ibuf if idx64 else ibuf
    grid = (triton.cdiv(n, bm), triton.cdiv(h, bn), 1)
    gather.hipdnn_gather[grid](wrap(store.reshape(-1), dt), Arr(ip.view(np.int32)),
                               wrap(ybuf, dt), n, h, v, stv, sth, si, syr, 1, 1 if idx64 else 0,
                               BLOCK_M=bm, BLOCK_N=bn)
    ok = np.array_equal(ybuf, want)
    bad = int(np.sum(ybuf != want))
    return ok, bad


def main():
    cases = 0
    failed = 0
    seed = 0
    for dt in ("f32", "f16", "bf16"):
        for cfg in gather.configs("cuda", dt)["generic"]:
            for n, h, v in ((1, 1, 1), (37, 19, 11), (129, 384, 50), (16, 128, 300)):
                for idx64 in (False, True):
                    for t_transposed, y_strided in ((False, False), (True, True)):
                        seed += 1
                        ok, bad = run_case(n, h, v, dt, idx64, cfg, t_transposed, y_strided,
                                           seed)
                        cases += 1
                        tag = "ok " if ok else "FAIL"
                        print(f"{tag} {dt} tile {cfg[0]}x{cfg[1]} n{n} h{h} v{v} "
                              f"idx{'64' if idx64 else '32'} "
                              f"{'transposed table, strided y' if t_transposed else 'dense'}"
                              f"{'' if ok else f': {bad} elements differ'}")
                        failed += 0 if ok else 1
    if failed:
        print(f"{failed} of {cases} cases failed")
        sys.exit(1)
    print("all ok")


if __name__ == "__main__":
    main()
