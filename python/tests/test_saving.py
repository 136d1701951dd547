"""Saving and loading across the two implementations: a plan saved from Python loads in Rust
(and the reverse), runs there with the same output bytes, and re-saves byte-identically."""

import numpy as np
import pytest

import hipdnn_rs as hd
from common import input_array, rust_reference, sha
from test_ops import case_graphs, run_py


def execute_loaded(g, h):
    inputs = {t.uid: input_array(t) for t in g.tensors() if not t.is_virtual and t.value is None and not t.has_producer}
    res = g.execute(h, inputs)
    return " ".join(sha(res[u]) for u in sorted(res))


def test_python_plan_loads_in_rust(tmp_path):
    for case in ["conv_fprop", "layernorm", "sdpa_causal_true"]:
        g, h = case_graphs()[case], hd.Handle.cpu()
        expected = run_py(g)  # builds and executes
        saved = g.to_binary()
        # The same graph built by the SDK in Rust saves to the same bytes.
        rust_saved = tmp_path / f"{case}.rust-built.hdgp"
        rust_reference("save", case, str(rust_saved))
        assert rust_saved.read_bytes() == saved, f"{case}: Python's plan bytes differ from Rust's"
        src, dst = tmp_path / f"{case}.py.hdgp", tmp_path / f"{case}.rust.hdgp"
        src.write_bytes(saved)
        rust_out = rust_reference("resave", str(src), str(dst)).strip()
        assert rust_out == expected, case
        assert dst.read_bytes() == saved, f"{case}: Rust re-save differs"


def test_rust_plan_loads_in_python(tmp_path):
    for case in ["matmul", "gather", "softmax"]:
        f = tmp_path / f"{case}.hdgp"
        rust_reference("save", case, str(f))
        saved = f.read_bytes()
        h = hd.Handle.cpu()
        g = hd.Graph.from_binary(h, saved)
        assert g.has_plan() and g.engine_name() == "hipdnn.reference.cpu"
        ref = rust_reference("ops")
        expected = dict(line.split(" ", 1) for line in ref.strip().splitlines())[case]
        assert execute_loaded(g, h) == expected, case
        assert g.to_binary() == saved, f"{case}: Python re-save differs"


def test_compiled_plan_round_trip():
    g, h = case_graphs()["matmul"], hd.Handle.cpu()
    g.build(h)
    plan = g.to_compiled_plan_binary()
    p = hd.Graph.from_compiled_plan_binary(h, plan)
    assert p.to_compiled_plan_binary() == plan
    a = input_array(g.tensor_by_uid(1))
    b = input_array(g.tensor_by_uid(2))
    y1, y2 = np.zeros((2, 3, 5), np.float32), np.zeros((2, 3, 5), np.float32)
    g.execute(h, {1: a, 2: b, 3: y1})
    p.execute(h, {1: a, 2: b, 3: y2})  # a plan without its graph binds by UID only
    assert y1.tobytes() == y2.tobytes()


def test_json_round_trip():
    for name, g in case_graphs().items():
        text = g.to_json()
        assert hd.Graph.from_json(text).to_json() == text, name


def test_save_to_file_is_to_binary_and_loads(tmp_path):
    """save_to_file writes the SDK's bytes (to_binary / to_compiled_plan_binary) atomically,
    leaving no temporary file; load_from_file takes either form; Rust's save_to_file of the same
    graph writes the same bytes."""
    g, h = case_graphs()["conv_fprop"], hd.Handle.cpu()
    expected = run_py(g)
    for form, rust_form, to_bytes in [("GRAPH_AND_PLAN", "graph", g.to_binary), ("PLAN_ONLY", "plan", g.to_compiled_plan_binary)]:
        f = tmp_path / f"conv.{rust_form}"
        g.save_to_file(str(f), form)
        assert f.read_bytes() == to_bytes(), form
        rust_f = tmp_path / f"conv.rust.{rust_form}"
        rust_reference("save_file", "conv_fprop", rust_form, str(rust_f))
        assert rust_f.read_bytes() == f.read_bytes(), f"{form}: Rust's file differs"
        loaded = hd.Graph.load_from_file(h, str(rust_f))
        assert loaded.has_plan() and loaded.engine_name() == "hipdnn.reference.cpu"
        if form == "GRAPH_AND_PLAN":
            assert execute_loaded(loaded, h) == expected
        resaved = loaded.to_binary() if form == "GRAPH_AND_PLAN" else loaded.to_compiled_plan_binary()
        assert resaved == f.read_bytes(), f"{form}: re-save differs"
    g.save_to_file(str(tmp_path / "default.hdgp"))  # the default form is GRAPH_AND_PLAN
    assert (tmp_path / "default.hdgp").read_bytes() == g.to_binary()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_save_and_load_errors_are_the_sdk_errors(tmp_path):
    errors = dict(line.split("\t", 1) for line in rust_reference("errors").strip().splitlines())
    h = hd.Handle.cpu()
    with pytest.raises(hd.HipdnnError) as ei:
        hd.Graph.load_from_file(h, "/nonexistent/hipdnn-py/missing.hdgp")
    assert str(ei.value) == errors["load_from_file_missing"]
    assert ei.value.message.startswith("cannot read '/nonexistent/hipdnn-py/missing.hdgp': ")
    g = case_graphs()["matmul"]
    with pytest.raises(hd.HipdnnError) as ei:
        g.save_to_file("/nonexistent/hipdnn-py/out.hdgp")
    assert str(ei.value) == errors["save_to_file_bad_dir"]
    with pytest.raises(hd.HipdnnError) as ei:
        g.save_to_file(str(tmp_path / "x"), "JSON")
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message == "unknown save form 'JSON'; one of GRAPH_AND_PLAN, PLAN_ONLY"
    assert not (tmp_path / "x").exists()
