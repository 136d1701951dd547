"""A hipdnn_torch-style module: a 2-layer MLP (Linear + bias + GELU, Linear + bias) whose
forward runs through hipdnn_rs graphs built from the module's own weights, checked against
PyTorch's forward, then saved (to_binary), loaded in a fresh interpreter and run again.

    python python/examples/torch_module.py --device cpu    # torch CPU tensors on a CPU handle
    python python/examples/torch_module.py --device gpu    # torch CUDA tensors on a GPU handle
    python python/examples/torch_module.py --numpy         # no torch: NumPy weights and reference

Each layer is one graph (`Graph.linear`: matmul, bias add, activation), as hipdnn_torch routes
`F.linear` + activation: x [batch, in] (uid 1), w [in, out] with strides [1, in] (uid 2: the
module's `weight` [out, in] bound as `weight.t()`, no copy), b [1, out] (uid 3), y (uid 4).
On a GPU handle every tensor is a CUDA tensor of the module (bound by device address) and the
outputs are torch tensors allocated by the module. Tolerance against PyTorch's (or NumPy's)
forward: CPU |d| <= 1e-5 + 1e-4 |ref|; GPU |d| <= 1e-2 + 1e-2 |ref| (the GPU engine's f32
matmul may use TF32; torch's does not by default). The fresh interpreter's outputs must equal
this one's bit for bit (same plan, same engine, same inputs).

Prints one JSON line; exit status 0 when every check holds.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

import hipdnn_rs as hd

X, W1, B1, W2, B2, Y = 1, 2, 3, 4, 5, 6


def layer_graph(batch, n_in, n_out, activation):
    """act(x @ w.T + b) for a torch Linear weight w [n_out, n_in] bound as w.t()."""
    g = hd.Graph()
    g.set_name(f"linear_{n_in}x{n_out}_{activation}")
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    x = g.tensor("x", [batch, n_in], uid=1)
    w = g.tensor("w", [n_in, n_out], strides=[1, n_in], uid=2)
    b = g.tensor("b", [1, n_out], uid=3)
    y = g.linear(x, w, b, activation)
    g.set_output(y).set_uid(y, 4).set_tensor_name(y, "y")
    return g


class HipdnnMLP:
    """The forward of MLP below on hipdnn_rs graphs; weights are torch tensors (CPU or CUDA)
    or NumPy arrays, in torch's Linear layout (weight [out, in], bias [out])."""

    def __init__(self, handle, graphs, weights):
        self.h, self.graphs, self.weights = handle, graphs, weights

    @classmethod
    def build(cls, handle, weights, batch):
        (w1, _), (w2, _) = weights
        n_in, hidden, n_out = w1.shape[1], w1.shape[0], w2.shape[0]
        graphs = [layer_graph(batch, n_in, hidden, "gelu"), layer_graph(batch, hidden, n_out, "none")]
        for g in graphs:
            g.build(handle)
        return cls(handle, graphs, weights)

    def forward(self, x):
        for g, (w, b) in zip(self.graphs, self.weights):
            wt = w.t() if hasattr(w, "t") else w.T  # a view [in, out], strides [1, in]
            bias = b.reshape(1, -1)
            if hasattr(x, "new_empty"):  # torch: the output is a tensor of x's device
                y = x.new_empty((x.shape[0], w.shape[0]))
                g.execute(self.h, {1: x, 2: wt, 3: bias, 4: y})
            else:  # NumPy: execute allocates it
                y = g.execute(self.h, {1: x, 2: wt, 3: bias})[4]
            x = y
        return x

    def save(self, directory):
        for i, g in enumerate(self.graphs):
            with open(os.path.join(directory, f"layer{i}.hdgp"), "wb") as f:
                f.write(g.to_binary())

    @classmethod
    def load(cls, handle, directory, weights):
        """The saved graphs with their plans; a graph saved without a plan (an engine whose
        plans cannot be serialized) is built again (`plans_loaded` says which)."""
        graphs, loaded = [], []
        for i in range(2):
            with open(os.path.join(directory, f"layer{i}.hdgp"), "rb") as f:
                g = hd.Graph.from_binary(handle, f.read())
            loaded.append(g.has_plan())
            if not g.has_plan():
                g.build(handle)
            graphs.append(g)
        model = cls(handle, graphs, weights)
        model.plans_loaded = loaded
        return model


def numpy_weights(n_in=64, hidden=128, n_out=32, seed=0):
    rng = np.random.default_rng(seed)
    def lin(i, o):
        bound = 1 / math.sqrt(i)
        return (rng.uniform(-bound, bound, (o, i)).astype(np.float32), rng.uniform(-bound, bound, o).astype(np.float32))
    return [lin(n_in, hidden), lin(hidden, n_out)]


def numpy_forward(x, weights):
    erf = np.vectorize(math.erf)
    (w1, b1), (w2, b2) = weights
    h = x.astype(np.float64) @ w1.T.astype(np.float64) + b1
    h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
    return (h @ w2.T.astype(np.float64) + b2).astype(np.float32)


def handle_for(device):
    return hd.Handle.gpu() if device == "gpu" else hd.Handle.cpu()


def child(args):
    """The fresh interpreter: load the graphs and weights, run, write the output."""
    data = np.load(os.path.join(args.load, "tensors.npz"))
    weights = [(data["w1"], data["b1"]), (data["w2"], data["b2"])]
    x = data["x"]
    h = handle_for(args.device)
    if not args.numpy:
        import torch

        dev = "cuda" if args.device == "gpu" else "cpu"
        weights = [(torch.from_numpy(w).to(dev), torch.from_numpy(b).to(dev)) for w, b in weights]
        x = torch.from_numpy(x).to(dev)
    model = HipdnnMLP.load(h, args.load, weights)
    y = model.forward(x)
    if not args.numpy:
        y = y.cpu().numpy()
    np.save(os.path.join(args.load, "y_child.npy"), y)
    with open(os.path.join(args.load, "child.json"), "w") as f:
        json.dump({"plans_loaded": model.plans_loaded, "engines": [g.engine_name() for g in model.graphs]}, f)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--numpy", action="store_true", help="NumPy weights and reference (no torch)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--load", help=argparse.SUPPRESS)  # the fresh interpreter's side
    args = p.parse_args()
    if args.load:
        return child(args)
    if not args.numpy:
        try:
            import torch
        except ImportError as e:
            print(f"torch_module: torch is not importable ({e}); run with --numpy", file=sys.stderr)
            return 2
    h = handle_for(args.device)
    if args.device == "gpu" and args.numpy:
        print("torch_module: --numpy runs on the CPU handle only", file=sys.stderr)
        return 2

    weights_np = numpy_weights()
    x_np = np.random.default_rng(1).standard_normal((args.batch, weights_np[0][0].shape[1])).astype(np.float32)
    if args.numpy:
        model = HipdnnMLP.build(h, weights_np, args.batch)
        y = model.forward(x_np)
        ref = numpy_forward(x_np, weights_np)
        reference = "numpy (float64)"
    else:
        import torch

        class MLP(torch.nn.Module):
            def __init__(self, n_in, hidden, n_out):
                super().__init__()
                self.fc1, self.act, self.fc2 = torch.nn.Linear(n_in, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, n_out)

            def forward(self, x):
                return self.fc2(self.act(self.fc1(x)))

        dev = torch.device("cuda", torch.cuda.current_device()) if args.device == "gpu" else torch.device("cpu")
        (w1, b1), (w2, b2) = weights_np
        module = MLP(w1.shape[1], w1.shape[0], w2.shape[0]).to(dev).eval()
        with torch.no_grad():
            for lin, (w, b) in [(module.fc1, (w1, b1)), (module.fc2, (w2, b2))]:
                lin.weight.copy_(torch.from_numpy(w))
                lin.bias.copy_(torch.from_numpy(b))
            x = torch.from_numpy(x_np).to(dev)
            weights = [(module.fc1.weight.detach(), module.fc1.bias.detach()), (module.fc2.weight.detach(), module.fc2.bias.detach())]
            model = HipdnnMLP.build(h, weights, args.batch)
            y_t = model.forward(x)
            assert y_t.device == x.device
            ref = module(x).cpu().numpy()
            y = y_t.cpu().numpy()
        reference = f"torch {torch.__version__} ({dev})"
    atol, rtol = (1e-2, 1e-2) if args.device == "gpu" else (1e-5, 1e-4)
    err = float(np.max(np.abs(y - ref)))
    close = bool(np.allclose(y, ref, atol=atol, rtol=rtol))

    with tempfile.TemporaryDirectory() as d:
        model.save(d)
        np.savez(os.path.join(d, "tensors.npz"), x=x_np, w1=weights_np[0][0], b1=weights_np[0][1], w2=weights_np[1][0], b2=weights_np[1][1])
        cmd = [sys.executable, os.path.abspath(__file__), "--device", args.device, "--load", d] + (["--numpy"] if args.numpy else [])
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"torch_module: the fresh interpreter failed:\n{r.stderr}", file=sys.stderr)
            return 1
        y_child = np.load(os.path.join(d, "y_child.npy"))
        with open(os.path.join(d, "child.json")) as f:
            child_info = json.load(f)
        sizes = {f: os.path.getsize(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".hdgp")}
    reloaded_equal = bool(np.array_equal(y_child, y))
    ok = close and reloaded_equal
    print(
        json.dumps(
            {
                "example": "torch_module",
                "device": args.device,
                "arch": h.device_arch,
                "engines": [g.engine_name() for g in model.graphs],
                "reference": reference,
                "shape": list(y.shape),
                "max_abs_diff": err,
                "tolerance": {"atol": atol, "rtol": rtol},
                "within_tolerance": close,
                "saved_bytes": sizes,
                "reloaded_plans_loaded": child_info["plans_loaded"],
                "reloaded_engines": child_info["engines"],
                "reloaded_bit_equal": reloaded_equal,
                "ok": ok,
            }
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
