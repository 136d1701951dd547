"""The examples run: torch_module.py (NumPy path here; torch CPU path when torch is
importable; the GPU path is in test_gpu.py) and the two sides of the overhead measurement."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from common import ROOT

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run_example(*args):
    r = subprocess.run([sys.executable, str(EXAMPLES / args[0]), *args[1:]], capture_output=True, text=True, check=False)
    assert r.returncode == 0, f"{args} failed:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_torch_module_numpy_path():
    out = run_example("torch_module.py", "--numpy")
    assert out["ok"] and out["within_tolerance"] and out["reloaded_bit_equal"]
    assert out["reloaded_plans_loaded"] == [True, True] and out["reloaded_engines"] == out["engines"]
    assert out["shape"] == [8, 32] and out["max_abs_diff"] <= 1e-4
    assert out["engines"] == [out["engines"][0]] * 2 and set(out["saved_bytes"]) == {"layer0.hdgp", "layer1.hdgp"}


def test_torch_module_torch_cpu():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"torch is not importable ({e}): torch_module.py --device cpu skipped")
        pytest.skip(f"torch is not importable: {e}")
    out = run_example("torch_module.py", "--device", "cpu")
    assert out["ok"] and out["reference"].startswith("torch ") and out["max_abs_diff"] <= 1e-4


def test_overhead_both_sides_cpu():
    py = run_example("overhead.py", "--device", "cpu", "--elements", "64", "--calls", "50", "--rounds", "3")
    assert py["side"] == "python" and py["device"] == "cpu" and py["elements"] == 64
    assert len(py["per_call_us_rounds"]) == 3 and py["per_call_us_median"] > 0
    exe = os.environ.get("HIPDNN_PY_RUST_REFERENCE")
    cmd = [exe] if exe else ["cargo", "run", "--quiet", "-p", "hipdnn-py", "--example", "rust_reference", "--"]
    r = subprocess.run(cmd + ["overhead", "cpu", "64", "50", "3"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    rs = json.loads(r.stdout)
    assert rs["side"] == "rust" and rs["arch"] == py["arch"] == "cpu"
    assert len(rs["per_call_us_rounds"]) == 3 and rs["per_call_us_median"] > 0
    # Bad arguments are refused.
    r = subprocess.run(cmd + ["overhead", "cpu", "0", "50", "3"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "positive integers" in r.stderr
