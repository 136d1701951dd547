"""Error paths raise HipdnnError with the SDK's code and message (the Rust reference prints the
SDK's own error for the same misuse)."""

import numpy as np
import pytest

import hipdnn_rs as hd
from common import rust_reference, values


@pytest.fixture(scope="module")
def sdk_errors():
    lines = rust_reference("errors").strip().splitlines()
    return dict(line.split("\t", 1) for line in lines)


def one_line(e):
    return str(e).replace("\\", "\\\\").replace("\n", "\\n")


def matmul():
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    a, b = g.tensor("a", [2, 3, 4], uid=1), g.tensor("b", [2, 4, 5], uid=2)
    c = g.matmul(a, b)
    g.set_output(c).set_uid(c, 3)
    return g


A = values(24, 1).reshape(2, 3, 4)
B = values(40, 2).reshape(2, 4, 5)


def check(excinfo, sdk_errors, case):
    e = excinfo.value
    code, message = sdk_errors[case].split(": ", 1)
    assert e.code == code
    assert one_line(e.message) == message
    assert one_line(e) == sdk_errors[case]
    assert str(e) == f"{e.code}: {e.message}"


def test_execute_unbuilt(sdk_errors):
    with pytest.raises(hd.HipdnnError) as ei:
        matmul().execute(hd.Handle.cpu(), {1: A, 2: B, 3: np.zeros((2, 3, 5), np.float32)})
    check(ei, sdk_errors, "execute_unbuilt")


def test_execute_missing_input(sdk_errors):
    g, h = matmul(), hd.Handle.cpu()
    g.build(h)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: A})
    check(ei, sdk_errors, "execute_missing_input")


def test_validation_error(sdk_errors):
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    x = g.tensor("x", [3, 5], uid=1)
    y = g.reduction(x, [3, 1], mode="NOT_SET")
    g.set_output(y).set_uid(y, 2)
    with pytest.raises(hd.HipdnnError) as ei:
        g.build(hd.Handle.cpu())
    check(ei, sdk_errors, "reduction_mode_not_set")


def test_load_errors(sdk_errors):
    h = hd.Handle.cpu()
    with pytest.raises(hd.HipdnnError) as ei:
        hd.Graph.from_binary(h, b"not a graph")
    check(ei, sdk_errors, "from_binary_garbage")
    with pytest.raises(hd.HipdnnError) as ei:
        hd.Graph.from_json("{")
    check(ei, sdk_errors, "from_json_garbage")
    g = matmul()
    g.build(h)
    with pytest.raises(hd.HipdnnError) as ei:
        hd.Graph.from_binary(h, g.to_compiled_plan_binary())
    check(ei, sdk_errors, "from_binary_plan_only")


def test_wrong_shape_array_names_uid():
    g, h = matmul(), hd.Handle.cpu()
    g.build(h)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: A.reshape(2, 4, 3), 2: B})
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message.startswith("execute: tensor uid 1: dims [2, 4, 3] do not match the graph tensor 'a' (dims [2, 3, 4])")


def test_binding_errors_are_hipdnn_errors():
    g = hd.Graph()
    x = g.tensor("x", [2])
    with pytest.raises(hd.HipdnnError) as ei:
        g.pointwise_unary(x, "NOT_A_MODE")
    assert ei.value.code == "INVALID_VALUE" and "RELU_FWD" in ei.value.message
    with pytest.raises(hd.HipdnnError) as ei:
        hd.Graph().pointwise_unary(x, "EXP")
    assert ei.value.code == "INVALID_VALUE" and "another graph" in ei.value.message
    assert ei.value.backend_status is None
    assert issubclass(hd.HipdnnError, Exception)
