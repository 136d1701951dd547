"""Per-call overhead of `Graph.execute` from Python, for a tiny graph (y = a + b, FLOAT).

Times `rounds` rounds of `calls` executes on the handle given (the tensors dict made anew each
call, the output passed preallocated; on a GPU handle the inputs and output are torch CUDA
tensors and the round ends with torch.cuda.synchronize()), and prints one JSON line: each
round's per-call microseconds and their median. The Rust twin times the SDK's Graph::execute of
the same graph the same way:

    python python/examples/overhead.py --device cpu --elements 64 --calls 2000 --rounds 7
    target/release/examples/rust_reference overhead cpu 64 2000 7

(build both in release: `maturin build --release -m python/Cargo.toml`, `cargo build --release
-p hipdnn-py --example rust_reference`); docs/python.md has the numbers measured.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import hipdnn_rs as hd


def values(n, uid):
    """The tests' deterministic inputs (python/tests/common.py, rust_reference.rs)."""
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919 + uid * 104729) % 2003 - 1001).astype(np.float32) / np.float32(1000)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--elements", type=int, default=64)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    n = args.elements

    h = hd.Handle.gpu() if args.device == "gpu" else hd.Handle.cpu()
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    a, b = g.tensor("a", [n], uid=1), g.tensor("b", [n], uid=2)
    y = g.pointwise(a, b, "ADD")
    g.set_output(y).set_uid(y, 3)
    g.build(h)

    av, bv = values(n, 1), values(n, 2)
    if args.device == "gpu":
        import torch  # the GPU side binds torch CUDA tensors

        dev = torch.device("cuda", torch.cuda.current_device())
        A, B = torch.from_numpy(av).to(dev), torch.from_numpy(bv).to(dev)
        Y = torch.empty(n, device=dev)
        sync = torch.cuda.synchronize
    else:
        A, B, Y = av, bv, np.zeros(n, np.float32)
        sync = lambda: None  # noqa: E731 (CPU executes return when done)

    for _ in range(min(args.calls, 100)):  # warm-up
        g.execute(h, {1: A, 2: B, 3: Y})
    sync()
    per_call = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        for _ in range(args.calls):
            g.execute(h, {1: A, 2: B, 3: Y})
        sync()
        per_call.append((time.perf_counter() - t) * 1e6 / args.calls)
    got = Y.cpu().numpy() if args.device == "gpu" else Y
    if not np.array_equal(got, av + bv):
        print("overhead: y != a + b", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {
                "side": "python",
                "device": args.device,
                "arch": h.device_arch,
                "elements": n,
                "calls": args.calls,
                "rounds": args.rounds,
                "per_call_us_median": round(statistics.median(per_call), 3),
                "per_call_us_rounds": [round(v, 3) for v in per_call],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
