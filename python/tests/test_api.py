"""Handles, tensor properties, build variants and module constants."""

import numpy as np
import pytest

import hipdnn_rs as hd
from common import values


def test_handles():
    cpu = hd.Handle.cpu()
    assert not cpu.is_gpu and cpu.device_arch == "cpu" and cpu.engine_names == ["hipdnn.reference.cpu"]
    default = hd.Handle()  # the GPU when usable, else the CPU
    assert default.engine_names[-1] == "hipdnn.reference.cpu"
    if not default.is_gpu:
        with pytest.raises(hd.HipdnnError) as ei:
            hd.Handle.gpu()
        assert ei.value.code == "GRAPH_NOT_SUPPORTED" and ei.value.message.startswith("no GPU")


def test_tensor_properties():
    g = hd.Graph().set_name("props").set_io_data_type("FLOAT")
    assert (g.name, g.io_data_type, g.intermediate_data_type) == ("props", "FLOAT", "UNSET")
    x = g.tensor("x", [2, 3, 4], uid=7)
    assert (x.name, x.dims, x.strides, x.data_type, x.context_data_type, x.uid) == ("x", [2, 3, 4], [12, 4, 1], "UNSET", "FLOAT", 7)
    assert not x.is_virtual and not x.has_producer and x.value is None and x.index == 0
    t = g.tensor("t", [2, 3], strides=[1, 2], data_type="HALF")
    assert (t.strides, t.data_type) == ([1, 2], "HALF")
    y = g.pointwise_unary(x, "EXP")
    assert y.is_virtual and y.has_producer and y.uid is None and y.name == "Pointwise_0::OUT_0"
    g.set_output(y).set_uid(y, 9).set_tensor_name(y, "y")
    assert (not y.is_virtual, y.uid, y.name) == (True, 9, "y")
    assert g.tensor_by_uid(9).index == y.index and [t.index for t in g.tensors_by_name("x")] == [0]
    eps = g.scalar("eps", 0.5)
    assert eps.value == 0.5 and eps.data_type == "FLOAT" and eps.dims == [1]
    assert len(g.tensors()) == 4 and g.node_count() == 1
    assert "RELU_FWD" in hd.POINTWISE_MODES and hd.POINTWISE_ARITY["ADD"] == 2 and "FLOAT" in hd.DATA_TYPES


def test_build_benchmarked_and_validate():
    h = hd.Handle.cpu()
    outs = []
    for bench in [False, True]:
        g = hd.Graph().set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT")
        a, b = g.tensor("a", [3, 4], uid=1), g.tensor("b", [4, 2], uid=2)
        c = g.matmul(a, b)
        g.set_output(c).set_uid(c, 3)
        g.validate()
        assert not g.has_plan()
        (g.build_benchmarked if bench else g.build)(h)
        assert g.has_plan() and g.engine_name() == "hipdnn.reference.cpu" and g.workspace_size() == 0
        outs.append(g.execute(h, {1: values(12, 1).reshape(3, 4), 2: values(8, 2).reshape(4, 2)})[3])
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_allclose(outs[0], values(12, 1).reshape(3, 4) @ values(8, 2).reshape(4, 2), rtol=1e-6)


def test_stubs_list_every_public_name():
    """hipdnn_rs.pyi names exactly what the module has (module level and each class)."""
    import ast
    import pathlib

    stub = ast.parse((pathlib.Path(__file__).resolve().parents[1] / "hipdnn_rs.pyi").read_text())

    def names(body):
        out = set()
        for n in body:
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.AnnAssign):
                out.add(n.target.id)
        return {x for x in out if not x.startswith("_")}

    assert names(stub.body) == {x for x in dir(hd) if not x.startswith("_")} - {"hipdnn_rs"}  # the native submodule
    for cls in [n for n in stub.body if isinstance(n, ast.ClassDef)]:
        real = {x for x in dir(getattr(hd, cls.name)) if not x.startswith("_")}
        if cls.name == "HipdnnError":
            real = {"code", "message", "backend_status"}  # instance attributes, set per error
        elif issubclass(getattr(hd, cls.name), BaseException):
            continue
        assert names(cls.body) == real, cls.name
