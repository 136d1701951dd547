"""Settings and engine choice from Python (handle settings, engine filters, build variants,
plan inspection, autotune) behave as the SDK does: python/examples/rust_reference.rs makes the
same calls in Rust (`settings`, `autotune <variant>`) and prints their outcomes."""

import json
import math

import numpy as np
import pytest

import hipdnn_rs as hd
from common import input_array, rust_reference, sha
from test_ops import case_graphs

CPU = "hipdnn.reference.cpu"


@pytest.fixture(scope="module")
def sdk():
    lines = rust_reference("settings").strip().split("\n")
    return dict(line.split("\t", 1) for line in lines)


def one_line(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def outcome(build, g):
    """rust_reference's outcome(): "ok <engine> <workspace>" or the error's str()."""
    try:
        build()
    except hd.HipdnnError as e:
        return one_line(str(e))
    return f"ok {g.engine_name()} {g.workspace_size()}"


def case(name):
    return case_graphs()[name]


def test_deselect_engines_then_clear(sdk):
    h, g = hd.Handle.cpu(), case("matmul")
    assert g.deselect_engines([CPU]) is g
    assert outcome(lambda: g.build(h), g) == sdk["deselect_engines"]
    assert sdk["deselect_engines"].startswith("GRAPH_NOT_SUPPORTED: No engine is left after the engine filters")
    with pytest.raises(hd.HipdnnError) as ei:
        g.build(h)
    assert ei.value.code == "GRAPH_NOT_SUPPORTED"
    g.clear_engine_filters()
    assert outcome(lambda: g.build(h), g) == sdk["deselect_engines_cleared"]


def test_deselect_workspace_greater_than(sdk):
    h, g = hd.Handle.cpu(), case("matmul")
    g.deselect_workspace_greater_than(0)
    assert outcome(lambda: g.build(h), g) == sdk["deselect_workspace_greater_than_0"]


@pytest.mark.parametrize("name", ["conv_fprop", "matmul"])
def test_numeric_note_filters_and_notes(sdk, name):
    h = hd.Handle.cpu()
    g = case(name)
    g.select_numeric_notes(["WINOGRAD"])
    assert outcome(lambda: g.build(h), g) == sdk[f"select_numeric_notes_{name}"]
    g = case(name)
    g.deselect_numeric_notes(["WINOGRAD"])
    assert outcome(lambda: g.build(h), g) == sdk[f"deselect_numeric_notes_{name}"]
    g = case(name)
    g.build(h)
    assert ",".join(g.numerical_notes()) == sdk[f"numerical_notes_{name}"]
    assert set(g.numerical_notes()) <= set(hd.NUMERICAL_NOTES)


def test_deselect_behavior_notes(sdk):
    h, g = hd.Handle.cpu(), case("matmul")
    g.deselect_behavior_notes(["SUPPORTS_EXECUTION_PLAN_SERIALIZATION"])
    assert outcome(lambda: g.build(h), g) == sdk["deselect_behavior_notes"]


def test_unknown_note_names_are_refused():
    g = case("matmul")
    with pytest.raises(hd.HipdnnError) as ei:
        g.select_numeric_notes(["FAST"])
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message.startswith("unknown numerical note 'FAST'; one of TENSOR_CORE, ")
    with pytest.raises(hd.HipdnnError) as ei:
        g.deselect_behavior_notes(["FAST"])
    assert ei.value.message.startswith("unknown behavior note 'FAST'; one of RUNTIME_COMPILATION, ")


def test_deterministic_only(sdk):
    h = hd.Handle.cpu()
    assert h.deterministic_only is False
    h.set_deterministic_only(True)
    assert h.deterministic_only is True
    g = case("matmul")
    assert outcome(lambda: g.build(h), g) == sdk["deterministic_only"]


def test_plan_inspection(sdk):
    g = case("matmul")
    for call, key in [(g.numerical_notes, "numerical_notes_unbuilt"), (g.execution_plan_engine_id, "execution_plan_engine_id_unbuilt")]:
        with pytest.raises(hd.HipdnnError) as ei:
            call()
        assert str(ei.value) == sdk[key]
    g.build(hd.Handle.cpu())
    assert str(g.execution_plan_engine_id()) == sdk["execution_plan_engine_id"]
    assert repr(g.execution_plan_knob_choices()) == sdk["execution_plan_knob_choices"]
    assert str(hd.engine_id_from_name(CPU)) == sdk["engine_id_from_name"]


def test_build_with_and_knobs(sdk):
    h = hd.Handle.cpu()
    g = case("matmul")
    assert outcome(lambda: g.build_with(h, ["FALLBACK"]), g) == sdk["build_with_fallback"]
    g = case("matmul")
    assert outcome(lambda: g.build_with(h, []), g) == sdk["build_with_empty"]
    g = case("matmul")
    assert outcome(lambda: g.build_with_knobs(h, [(1, 1)]), g) == sdk["build_with_knobs"]


def test_preferred_engine_id(sdk):
    g = case("matmul")
    assert g.preferred_engine_id is None
    g.set_preferred_engine_id(hd.engine_id_from_name(CPU))
    assert g.preferred_engine_id == hd.engine_id_from_name(CPU)
    assert outcome(lambda: g.build(hd.Handle.cpu()), g) == sdk["preferred_engine_id"]


def test_engine_override_file(sdk):
    h = hd.Handle.cpu()
    h.set_engine_override_file("/nonexistent/hipdnn-py-rules.json")
    assert str(h.engine_override_file) == "/nonexistent/hipdnn-py-rules.json"
    g = case("matmul")
    assert outcome(lambda: g.build(h), g) == sdk["engine_override_file"]
    h.set_engine_override_file(None)
    assert h.engine_override_file is None


# ---- autotune ----

RUST_NAMES = {"STANDARD": "Standard", "EXHAUSTIVE": "Exhaustive", "SINGLE_SHOT": "SingleShot",
              "FIXED_AVERAGE": "FixedAverage", "RUN_UNTIL_STABLE": "RunUntilStable"}


def line(r):
    """rust_reference's autotune_line() of a result dict."""
    b = lambda x: str(x).lower()  # noqa: E731
    s = json.dumps
    return (f"engine_id={r['engine_id']} engine_name={r['engine_name']} variant={s(r['variant'])} "
            f"knob_choices={r['knob_choices']!r} iterations_run={r['iterations_run']} "
            f"converged={b(r['converged'])} rank={r['rank']} succeeded={b(r['succeeded'])} "
            f"error_message={s(r['error_message'])} workspace_size={r['workspace_size']} "
            f"mode_used={RUST_NAMES[r['mode_used']]} supports_exhaustive={b(r['supports_exhaustive'])} "
            f"ran_exhaustive={b(r['ran_exhaustive'])} "
            f"exhaustive_not_run_reason={s(r['exhaustive_not_run_reason'])} "
            f"strategy_used={RUST_NAMES[r['strategy_used']]}")


def tune(config):
    g, h = case("matmul"), hd.Handle.cpu()
    inputs = {u: input_array(g.tensor_by_uid(u)) for u in (1, 2)}
    try:
        results = g.autotune(h, inputs, config)
    except hd.HipdnnError as e:
        return g, None, [one_line(str(e))]
    return g, results, [line(r) for r in results] + [f"plan {g.engine_name()}"]


@pytest.mark.parametrize("variant,config", [
    ("fixed", dict(strategy="FIXED_AVERAGE", timed_iterations=3)),
    ("single", dict(strategy="SINGLE_SHOT", timed_iterations=3)),
    ("bad_threshold", dict(stability_threshold=2.0, timed_iterations=3)),
    ("no_candidate", dict(engine_id_filter=[12345], timed_iterations=3)),
])
def test_autotune_matches_sdk(variant, config):
    g, results, lines = tune(config)
    assert lines == rust_reference("autotune", variant).strip().split("\n")
    if results is not None:
        # One result per candidate (the CPU handle has one engine, one variant), timed.
        assert len(results) == 1 and results[0]["succeeded"] and g.has_plan()
        r = results[0]
        assert 0 <= r["min_time_ms"] <= r["avg_time_ms"] and r["stddev_ms"] >= 0
        assert all(math.isfinite(r[k]) for k in ("min_time_ms", "avg_time_ms", "stddev_ms"))


def test_autotune_output_is_the_graph_output_and_plan_runs():
    g, h = case("matmul"), hd.Handle.cpu()
    inputs = {u: input_array(g.tensor_by_uid(u)) for u in (1, 2)}
    c = np.zeros((2, 3, 5), np.float32)
    g.autotune(h, {**inputs, 3: c}, {"strategy": "SINGLE_SHOT"})
    ref = dict(x.split(" ", 1) for x in rust_reference("ops").strip().splitlines())
    assert sha(c) == ref["matmul"]  # the caller's output holds the SDK's matmul bytes
    y = g.execute(h, inputs)[3]
    assert y.tobytes() == c.tobytes()  # and the kept plan gives them again


def test_autotune_config_errors():
    g, h = case("matmul"), hd.Handle.cpu()
    with pytest.raises(hd.HipdnnError) as ei:
        g.autotune(h, {}, {"iterations": 3})
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message.startswith("autotune: unknown config key 'iterations'; one of mode, ")
    with pytest.raises(hd.HipdnnError) as ei:
        g.autotune(h, {}, {"strategy": "FASTEST"})
    assert ei.value.message.startswith("unknown autotune strategy 'FASTEST'; one of SINGLE_SHOT, ")


def test_autotune_writes_the_override_file_later_builds_read(tmp_path):
    g, h = case("matmul"), hd.Handle.cpu()
    inputs = {u: input_array(g.tensor_by_uid(u)) for u in (1, 2)}
    f = tmp_path / "rules.json"
    results = g.autotune(h, inputs, {"strategy": "SINGLE_SHOT"}, storage=str(f))
    assert results[0]["succeeded"]
    rules = json.loads(f.read_text())
    assert CPU in f.read_text() and isinstance(rules, dict)
    h2 = hd.Handle.cpu()
    h2.set_engine_override_file(str(f))
    g2 = case("matmul")
    g2.build(h2)
    assert g2.engine_name() == CPU
