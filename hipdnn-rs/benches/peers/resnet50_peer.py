#!/usr/bin/env python3
"""ONNX Runtime peer of the ResNet-50 v1.5 bench (hipdnn-rs/benches/cpu_resnet50.rs, issue 30).

Two commands:

  resnet50_peer.py weights PATH
      Writes the random, deterministic weights (numpy seed 30) and the input images to PATH in
      safetensors format (8-byte little-endian header length, JSON header, raw little-endian
      data), names and shapes as torchvision's `resnet50().state_dict()` (conv weights
      `(K, C, R, S)`, batchnorm `weight`/`bias`/`running_mean`/`running_var`, `fc.weight`
      `(1000, 2048)`, `fc.bias`) plus `input` `(8, 3, 224, 224)`. Batchnorm parameters are
      NOT folded here: each side folds them itself, as a deployment does (the bench into its
      conv weights and a per-channel bias; ONNX Runtime's optimizer into its Conv nodes).

  resnet50_peer.py serve PATH THREADS
      A long-lived subprocess of the bench. Reads PATH, builds ResNet-50 v1.5 with
      `onnx.helper` as the unfolded graph Conv (no bias) + BatchNormalization (epsilon 1e-5)
      + Relu, MaxPool 3x3 s2 p1, Add, GlobalAveragePool, Flatten, Gemm (transB=1), every
      weight an initializer, and runs it with ONNX Runtime (CPU execution provider, graph
      optimization ALL, intra-op threads THREADS, inter-op threads 1). First line written:
      {"info": {...}} or {"error": "..."}. Then one JSON request per line on stdin:
        {"cmd": "logits", "batch": B}          -> {"logits": [B*1000 floats]}
        {"cmd": "time", "batch": B, "reps": R} -> {"times_s": [R seconds, one per forward]}
      The first request of a batch size creates its session and runs one warm-up forward.

Install: python3 -m pip install numpy onnx onnxruntime
"""
import json
import struct
import sys
import time

INSTALL = "python3 -m pip install numpy onnx onnxruntime"

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - reported to the bench
    print(json.dumps({"error": f"{e}; install with: {INSTALL}"}), flush=True)
    sys.exit(0)

# torchvision resnet50: bottleneck stages (blocks, width); expansion 4.
STAGES = [(3, 64), (4, 128), (6, 256), (3, 512)]
EXPANSION = 4
BN_EPS = 1e-5
MAX_BATCH = 8


def layer_specs():
    """(prefix, in_ch, out_ch, kernel, stride, pad, relu_after) of every conv+bn, in order,
    plus the block structure; the same walk as the Rust bench's."""
    convs = [("conv1", "bn1", 3, 64, 7)]
    c_in = 64
    for s, (blocks, width) in enumerate(STAGES):
        for b in range(blocks):
            p = f"layer{s + 1}.{b}"
            convs.append((f"{p}.conv1", f"{p}.bn1", c_in, width, 1))
            convs.append((f"{p}.conv2", f"{p}.bn2", width, width, 3))
            convs.append((f"{p}.conv3", f"{p}.bn3", width, width * EXPANSION, 1))
            if b == 0:
                convs.append((f"{p}.downsample.0", f"{p}.downsample.1", c_in, width * EXPANSION, 1))
            c_in = width * EXPANSION
    return convs


def make_weights(path):
    rng = np.random.default_rng(30)
    tensors = {}
    for conv, bn, c, k, r in layer_specs():
        fan_in = c * r * r
        # He-normal conv weights; batchnorm statistics and affine terms chosen so activations
        # stay O(1) through 16 residual blocks (the last BN of each block and the projection
        # BN scale the residual branch down, as torchvision's zero-init-residual does fully).
        tensors[f"{conv}.weight"] = rng.normal(0, np.sqrt(2.0 / fan_in), (k, c, r, r))
        last = bn.endswith(".bn3") or bn.endswith("downsample.1")
        lo, hi = (0.1, 0.3) if last else (0.5, 1.0)
        tensors[f"{bn}.weight"] = rng.uniform(lo, hi, k)
        tensors[f"{bn}.bias"] = rng.normal(0, 0.1, k)
        tensors[f"{bn}.running_mean"] = rng.normal(0, 0.1, k)
        tensors[f"{bn}.running_var"] = rng.uniform(0.5, 1.5, k)
    tensors["fc.weight"] = rng.normal(0, np.sqrt(1.0 / 2048), (1000, 2048))
    tensors["fc.bias"] = rng.normal(0, 0.01, 1000)
    tensors["input"] = rng.normal(0, 1, (MAX_BATCH, 3, 224, 224))
    write_safetensors(path, {k: v.astype(np.float32) for k, v in tensors.items()})


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        out[name] = np.frombuffer(data[base + lo : base + hi], dtype="<f4").reshape(meta["shape"])
    return out


def build_model(w):
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    names = set()

    def init(name):
        if name not in names:
            names.add(name)
            inits.append(numpy_helper.from_array(np.ascontiguousarray(w[name]), name))
        return name

    def conv_bn(x, conv, bn, stride, pad, relu):
        k = w[f"{conv}.weight"].shape[2]
        nodes.append(
            helper.make_node(
                "Conv", [x, init(f"{conv}.weight")], [f"{conv}.out"],
                kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
            )
        )
        bn_in = [f"{conv}.out"] + [init(f"{bn}.{p}") for p in ("weight", "bias", "running_mean", "running_var")]
        nodes.append(helper.make_node("BatchNormalization", bn_in, [f"{bn}.out"], epsilon=BN_EPS))
        if not relu:
            return f"{bn}.out"
        nodes.append(helper.make_node("Relu", [f"{bn}.out"], [f"{bn}.relu"]))
        return f"{bn}.relu"

    y = conv_bn("x", "conv1", "bn1", 2, 3, True)
    nodes.append(helper.make_node("MaxPool", [y], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    y = "pool"
    for s, (blocks, _width) in enumerate(STAGES):
        for b in range(blocks):
            p = f"layer{s + 1}.{b}"
            stride = 2 if (b == 0 and s > 0) else 1  # v1.5: the stride is on the 3x3 conv
            t = conv_bn(y, f"{p}.conv1", f"{p}.bn1", 1, 0, True)
            t = conv_bn(t, f"{p}.conv2", f"{p}.bn2", stride, 1, True)
            t = conv_bn(t, f"{p}.conv3", f"{p}.bn3", 1, 0, False)
            short = conv_bn(y, f"{p}.downsample.0", f"{p}.downsample.1", stride, 0, False) if b == 0 else y
            nodes.append(helper.make_node("Add", [t, short], [f"{p}.add"]))
            nodes.append(helper.make_node("Relu", [f"{p}.add"], [f"{p}.out"]))
            y = f"{p}.out"
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", init("fc.weight"), init("fc.bias")], ["logits"], transB=1))
    F = TensorProto.FLOAT
    g = helper.make_graph(
        nodes, "resnet50_v1_5",
        [helper.make_tensor_value_info("x", F, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", F, ["N", 1000])],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def serve(path, threads):
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:  # pragma: no cover - reported to the bench
        print(json.dumps({"error": f"{e}; install with: {INSTALL}"}), flush=True)
        return
    w = read_safetensors(path)
    model = build_model(w).SerializeToString()
    print(json.dumps({"info": {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": np.__version__, "ort_threads": threads}}), flush=True)
    sessions = {}

    def session(batch):
        if batch not in sessions:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            x = np.ascontiguousarray(w["input"][:batch])
            s.run(None, {"x": x})  # warm-up
            sessions[batch] = (s, x)
        return sessions[batch]

    for line in sys.stdin:
        r = json.loads(line)
        s, x = session(r["batch"])
        if r["cmd"] == "logits":
            (y,) = s.run(None, {"x": x})
            print(json.dumps({"logits": [float(v) for v in y.ravel()]}), flush=True)
        elif r["cmd"] == "time":
            times = []
            for _ in range(r["reps"]):
                t = time.perf_counter()
                s.run(None, {"x": x})
                times.append(time.perf_counter() - t)
            print(json.dumps({"times_s": times}), flush=True)
        else:
            print(json.dumps({"error": f"unknown cmd {r['cmd']}"}), flush=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "weights":
        make_weights(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
