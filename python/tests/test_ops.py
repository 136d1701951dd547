"""Every bound op builds and executes on the CPU from Python and gives the Rust SDK's output
bytes (python/examples/rust_reference.rs builds the same graphs with the SDK directly)."""

import numpy as np
import pytest

import hipdnn_rs as hd
from common import input_array, rust_reference, sha


def graph():
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    return g


def out(g, t, uid):
    g.set_output(t).set_uid(t, uid)


CONV = dict(pre_padding=[1, 1], post_padding=[1, 1], stride=[1, 1], dilation=[1, 1])


def case_graphs():
    """name -> Graph, the same cases as rust_reference.rs's cases()."""
    c = {}
    g = graph()
    a, b = g.tensor("a", [2, 3, 4], uid=1), g.tensor("b", [2, 4, 5], uid=2)
    out(g, g.matmul(a, b), 3)
    c["matmul"] = g

    g = graph()
    x, w = g.tensor("x", [1, 3, 8, 8], uid=1), g.tensor("w", [4, 3, 3, 3], uid=2)
    out(g, g.conv_fprop(x, w, **CONV), 3)
    c["conv_fprop"] = g

    g = graph()
    dy, w = g.tensor("dy", [1, 4, 8, 8], uid=1), g.tensor("w", [4, 3, 3, 3], uid=2)
    dx = g.conv_dgrad(dy, w, **CONV)
    g.set_dims(dx, [1, 3, 8, 8])
    out(g, dx, 3)
    c["conv_dgrad"] = g

    g = graph()
    dy, x = g.tensor("dy", [1, 4, 8, 8], uid=1), g.tensor("x", [1, 3, 8, 8], uid=2)
    dw = g.conv_wgrad(dy, x, **CONV)
    g.set_dims(dw, [4, 3, 3, 3])
    out(g, dw, 3)
    c["conv_wgrad"] = g

    for mode in hd.POINTWISE_MODES:
        arity = hd.POINTWISE_ARITY[mode]
        g = graph()
        a = g.tensor("a", [2, 8], uid=1)
        if arity == 1:
            y = g.pointwise_unary(a, mode)
        elif arity == 2:
            y = g.pointwise(a, g.tensor("b", [1, 8], uid=2), mode)
        elif arity == 3:
            b = g.tensor("b", [2, 8], uid=2)
            cc = g.tensor("c", [2, 8], uid=4, data_type="BOOLEAN")
            y = g.pointwise_ternary(a, b, cc, mode)
        else:
            continue
        out(g, y, 3)
        c[f"pointwise_{mode}"] = g

    g = graph()
    x, s, b = g.tensor("x", [4, 16], uid=1), g.tensor("scale", [1, 16], uid=2), g.tensor("bias", [1, 16], uid=4)
    eps = g.scalar("eps", 1e-5)
    y, m, iv = g.layernorm(x, s, b, epsilon=eps, forward_phase="TRAINING")
    out(g, y, 5), out(g, m, 6), out(g, iv, 7)
    c["layernorm"] = g

    g = graph()
    x, s, b = g.tensor("x", [4, 16], uid=1), g.tensor("scale", [1, 16], uid=2), g.tensor("bias", [1, 16], uid=4)
    out(g, g.layernorm_inference(x, s, b, 1e-5), 5)
    c["layernorm_inference"] = g

    g = graph()
    x, s = g.tensor("x", [4, 16], uid=1), g.tensor("scale", [1, 16], uid=2)
    eps = g.scalar("eps", 1e-6)
    y, r = g.rmsnorm(x, s, epsilon=eps, forward_phase="TRAINING")
    out(g, y, 5), out(g, r, 6)
    c["rmsnorm"] = g

    g = graph()
    x, s = g.tensor("x", [4, 16], uid=1), g.tensor("scale", [1, 16], uid=2)
    out(g, g.rmsnorm_inference(x, s, 1e-6), 5)
    c["rmsnorm_inference"] = g

    for name in ["softmax", "log_softmax"]:
        g = graph()
        x = g.tensor("x", [3, 4, 10], uid=1)
        out(g, getattr(g, name)(x, 2), 2)
        c[name] = g

    for mode in hd.REDUCTION_MODES:
        if mode == "NOT_SET":
            continue
        g = graph()
        x = g.tensor("x", [3, 5, 7], uid=1)
        out(g, g.reduction(x, [3, 1, 7], mode=mode), 2)
        c[f"reduction_{mode}"] = g

    for name in ["global_avg_pool", "global_max_pool"]:
        g = graph()
        x = g.tensor("x", [2, 3, 5, 5], uid=1)
        out(g, getattr(g, name)(x), 2)
        c[name] = g

    for causal in [False, True]:
        g = graph()
        q, k, v = (g.tensor(n, [1, 2, 6, 8], uid=u) for n, u in [("q", 1), ("k", 2), ("v", 4)])
        o, _ = g.sdpa(q, k, v, attn_scale_value=0.35, causal_mask=causal)
        out(g, o, 5)
        c[f"sdpa_causal_{str(causal).lower()}"] = g

    g = graph()
    table = g.tensor("table", [10, 6], uid=1)
    index = g.tensor("index", [3, 4], uid=2, data_type="INT32")
    out(g, g.gather(table, index), 3)
    c["gather"] = g

    for act in ["none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"]:
        g = graph()
        x, w, b = g.tensor("x", [4, 8], uid=1), g.tensor("w", [8, 5], uid=2), g.tensor("b", [1, 5], uid=4)
        out(g, g.linear(x, w, b, act), 5)
        c[f"linear_{act}"] = g

    for name, mode in [("maxpool", "MAXPOOL"), ("avgpool", "AVGPOOL_INCLUDE_PADDING")]:
        g = graph()
        x = g.tensor("x", [1, 2, 6, 6], uid=1)
        y, _ = g.resample(x, resample_mode=mode, window=[2, 2], stride=[2, 2], pre_padding=[0, 0], post_padding=[0, 0])
        out(g, y, 2)
        c[f"resample_{name}"] = g

    g = graph()
    x = g.tensor("x", [2, 3, 4, 4], uid=1)
    ts = [g.tensor(n, [1, 3, 1, 1], uid=u) for n, u in [("mean", 2), ("inv_var", 4), ("scale", 5), ("bias", 6)]]
    out(g, g.batchnorm_inference(x, *ts), 7)
    c["batchnorm_inference"] = g
    return c


def run_py(g):
    """Builds g on the CPU and runs it from Python: the sha256 of each output, in UID order,
    or "ERR <CODE>" (the reference's format)."""
    h = hd.Handle.cpu()
    try:
        g.build(h)
    except hd.HipdnnError as e:
        return f"ERR {e.code}"
    inputs = {}
    for t in g.tensors():
        if t.is_virtual or t.uid is None or t.value is not None or t.has_producer:
            continue
        inputs[t.uid] = input_array(t)
    try:
        res = g.execute(h, inputs)
    except hd.HipdnnError as e:
        return f"ERR {e.code}"
    return " ".join(sha(res[u]) for u in sorted(res))


@pytest.fixture(scope="module")
def reference():
    lines = rust_reference("ops").strip().splitlines()
    return dict(line.split(" ", 1) for line in lines)


CASES = case_graphs()


def test_same_cases(reference):
    assert sorted(CASES) == sorted(reference)


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_rust_sdk_bit_for_bit(name, reference):
    got = run_py(case_graphs()[name])
    assert not got.startswith("ERR"), f"{name}: {got} (Rust: {reference[name]})"
    assert got == reference[name], f"{name}: Python {got} != Rust {reference[name]}"


def test_graphs_equal_rust_sdk_graphs():
    """The graphs the bindings build are the SDK's graphs: upstream JSON text equal case by case."""
    rust = dict(line.split("\t", 1) for line in rust_reference("json").strip().splitlines())
    for name, g in case_graphs().items():
        assert g.to_json() == rust[name], name
