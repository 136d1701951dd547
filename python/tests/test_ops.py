"""Every bound op builds and executes on the CPU from Python and gives the Rust SDK's output
bytes (python/examples/rust_reference.rs builds the same graphs with the SDK directly)."""

import hashlib

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

    # Training-side ops (odd sizes, batch 1).
    for running in [True, False]:
        g = graph()
        x = g.tensor("x", [1, 3, 5, 7], uid=1)
        s, b = g.tensor("scale", [1, 3, 1, 1], uid=2), g.tensor("bias", [1, 3, 1, 1], uid=4)
        eps = g.scalar("eps", 1e-5)
        kw = {}
        if running:
            kw = dict(
                prev_running_mean=g.tensor("prev_running_mean", [1, 3, 1, 1], uid=5),
                prev_running_variance=g.tensor("prev_running_variance", [1, 3, 1, 1], uid=6),
                momentum=g.scalar("momentum", 0.1),
            )
        y, mean, iv, nm, nv = g.batchnorm(x, s, b, epsilon=eps, **kw)
        out(g, y, 10), out(g, mean, 11), out(g, iv, 12)
        assert (nm is None) == (nv is None) == (not running)
        if running:
            out(g, nm, 13), out(g, nv, 14)
        c[f"batchnorm_running_{str(running).lower()}"] = g

    g = graph()
    dy, x = g.tensor("dy", [1, 3, 5, 7], uid=1), g.tensor("x", [1, 3, 5, 7], uid=2)
    s, m, iv = (g.tensor(n, [1, 3, 1, 1], uid=u) for n, u in [("scale", 4), ("mean", 5), ("inv_variance", 6)])
    dx, ds, db = g.batchnorm_backward(dy, x, s, mean=m, inv_variance=iv)
    out(g, dx, 7), out(g, ds, 8), out(g, db, 9)
    c["batchnorm_backward"] = g

    g = graph()
    x = g.tensor("x", [1, 3, 5, 7], uid=1)
    m, var, s, b = (g.tensor(n, [1, 3, 1, 1], uid=u) for n, u in [("mean", 2), ("variance", 4), ("scale", 5), ("bias", 6)])
    out(g, g.batchnorm_inference_variance_ext(x, m, var, s, b, g.scalar("eps", 1.5)), 7)
    c["batchnorm_inference_variance_ext"] = g

    for saved in [True, False]:
        g = graph()
        dy, x = g.tensor("dy", [3, 13], uid=1), g.tensor("x", [3, 13], uid=2)
        s = g.tensor("scale", [1, 13], uid=4)
        if saved:
            kw = dict(mean=g.tensor("mean", [3, 1], uid=5), inv_variance=g.tensor("inv_variance", [3, 1], uid=6))
        else:
            kw = dict(epsilon=g.scalar("eps", 1e-5))
        dx, ds, db = g.layernorm_backward(dy, x, s, **kw)
        out(g, dx, 7), out(g, ds, 8), out(g, db, 9)
        c[f"layernorm_backward_{'saved_stats' if saved else 'epsilon'}"] = g

    for dbias in [True, False]:
        g = graph()
        dy, x = g.tensor("dy", [3, 13], uid=1), g.tensor("x", [3, 13], uid=2)
        s, r = g.tensor("scale", [1, 13], uid=4), g.tensor("inv_rms", [3, 1], uid=5)
        dx, ds, db = g.rmsnorm_backward(dy, x, s, r, dbias)
        out(g, dx, 6), out(g, ds, 7)
        assert (db is None) == (not dbias)
        if dbias:
            out(g, db, 8)
        c[f"rmsnorm_backward_dbias_{str(dbias).lower()}"] = g

    for causal in [False, True]:
        g = graph()
        q, k, v, o, d_o = (g.tensor(n, [1, 2, 5, 7], uid=u) for n, u in [("q", 1), ("k", 2), ("v", 4), ("o", 5), ("do", 6)])
        stats = g.tensor("stats", [1, 2, 5, 1], uid=8)
        dq, dk, dv = g.sdpa_backward(q, k, v, o, d_o, stats, attn_scale_value=0.35, causal_mask=causal)
        out(g, dq, 9), out(g, dk, 10), out(g, dv, 11)
        c[f"sdpa_backward_causal_{str(causal).lower()}"] = g

    POOL = dict(window=[2, 2], stride=[2, 2], pre_padding=[0, 0], post_padding=[0, 0])
    g = graph()
    x = g.tensor("x", [1, 2, 7, 5], uid=1)
    out(g, g.resample_fwd(x, resample_mode="MAXPOOL", **POOL), 2)
    c["resample_fwd"] = g

    for name, mode in [("maxpool", "MAXPOOL"), ("avgpool", "AVGPOOL_INCLUDE_PADDING")]:
        g = graph()
        dy = g.tensor("dy", [1, 2, 3, 2], uid=1)
        index = g.tensor("index", [1, 2, 3, 2], uid=2, data_type="INT32") if mode == "MAXPOOL" else None
        dx = g.resample_bwd(dy, index, resample_mode=mode, **POOL)
        g.set_dims(dx, [1, 2, 7, 5])
        out(g, dx, 3)
        c[f"resample_bwd_{name}"] = g

    g = graph()
    x = g.tensor("x", [3, 5], uid=1)
    y = g.tensor_like(x, "y")
    assert (y.dims, y.strides, y.uid, y.name) == ([3, 5], [5, 1], None, "y")
    g.set_uid(y, 2)
    out(g, g.pointwise(x, y, "SUB"), 3)
    c["tensor_like"] = g

    g = graph()
    x = g.tensor("x", [4, 64], uid=1)
    y, s = g.block_scale_quantize(x, block_size=32)
    out(g, y, 2), out(g, s, 3)
    g.set_data_type(y, "FP8_E4M3").set_data_type(s, "FP8_E8M0")
    out(g, g.block_scale_dequantize(y, s, block_size=[1, 32]), 4)
    c["block_scale_mxfp8"] = g
    return c


def graph_only_graphs():
    """name -> Graph of the ops no engine runs on the CPU (rust_reference.rs's
    graph_only_cases())."""
    c = {}
    g = graph()
    x = g.tensor("x", [4, 32], uid=1)
    y, s = g.block_scale_quantize(x, block_size=16, axis=1)
    assert s.dims == [4, 2]
    out(g, y, 2), out(g, s, 3)
    c["block_scale_quantize"] = g

    g = graph()
    x, s = g.tensor("x", [4, 32], uid=1), g.tensor("scale", [4, 2], uid=2)
    out(g, g.block_scale_dequantize(x, s, block_size=[1, 16]), 3)
    c["block_scale_dequantize"] = g

    g = graph()
    x = g.tensor("x", [3, 5], uid=1)
    outs = g.custom_op([x], 2, custom_op_id="example.plugin_op", data=b"\x01\x02\x03")
    assert [o.name for o in outs] == ["CustomOp_0::OUT_0", "CustomOp_0::OUT_1"] and outs[0].dims == []
    for i, o in enumerate(outs):
        g.set_dims(o, [3, 5])
        out(g, o, 2 + i)
    c["custom_op"] = g

    g = graph()
    t, w = g.tensor("token", [6, 8], uid=1), g.tensor("weight", [2, 8, 5], uid=2)
    f = g.tensor("first_token_offset", [2], uid=4, data_type="INT32")
    y = g.moe_grouped_matmul(t, w, f)
    assert y.dims == [6, 5]
    out(g, y, 5)
    c["moe_grouped_matmul"] = g

    g = graph()
    d, t = g.tensor("doutput", [6, 5], uid=1), g.tensor("token", [6, 8], uid=2)
    f = g.tensor("first_token_offset", [2], uid=4, data_type="INT32")
    dw = g.moe_grouped_matmul_bwd(d, t, f)
    assert dw.dims == [2, 8, 5]
    out(g, dw, 5)
    c["moe_grouped_matmul_bwd"] = g
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


def all_graphs():
    return {**case_graphs(), **graph_only_graphs()}


def test_graphs_equal_rust_sdk_graphs():
    """The graphs the bindings build are the SDK's graphs: upstream JSON text equal case by case."""
    rust = dict(line.split("\t", 1) for line in rust_reference("json").strip().splitlines())
    graphs = all_graphs()
    assert sorted(graphs) == sorted(rust)
    for name, g in graphs.items():
        assert g.to_json() == rust[name], name


def test_graph_binaries_equal_rust_sdk_binaries():
    """to_binary of every unbuilt graph (the graph-only ops included) is the SDK's bytes."""
    rust = dict(line.split(" ", 1) for line in rust_reference("binary").strip().splitlines())
    graphs = all_graphs()
    assert sorted(graphs) == sorted(rust)
    for name, g in graphs.items():
        assert hashlib.sha256(g.to_binary()).hexdigest() == rust[name], name
        # ... and loads back to the same graph.
        assert hd.Graph.from_binary(hd.Handle.cpu(), g.to_binary()).to_json() == g.to_json(), name


@pytest.mark.parametrize("name", sorted(graph_only_graphs()))
def test_graph_only_op_refused_on_cpu_with_sdk_error(name):
    """The CPU engine does not run these ops: build raises the SDK's error, code and message."""
    errors = dict(line.split("\t", 1) for line in rust_reference("errors").strip().splitlines())
    g, h = graph_only_graphs()[name], hd.Handle.cpu()
    with pytest.raises(hd.HipdnnError) as ei:
        g.build(h)
    code, message = errors[f"build_{name}"].split(": ", 1)
    assert (ei.value.code, ei.value.message) == (code, message)
    assert code == "GRAPH_NOT_SUPPORTED" and "not supported by the CPU reference engine" in message
    assert not g.has_plan()
    with pytest.raises(hd.HipdnnError) as ei:  # and so execute has no plan to run
        g.execute(h, {})
    assert str(ei.value) == errors["execute_unbuilt"]
