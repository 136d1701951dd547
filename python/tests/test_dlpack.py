"""DLPack binding on the CPU: no copy (outputs written in place, strided and offset views),
the capsule protocol (consumed, deleter called), and refusals of mismatched arrays."""

import ctypes
import sys

import numpy as np
import pytest

import hipdnn_rs as hd
from common import values


def add_graph(dims=(4, 8), strides=None):
    """y(uid 3) = a(uid 1) + b(uid 2), FLOAT; y with the given strides."""
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    a, b = g.tensor("a", list(dims), uid=1), g.tensor("b", list(dims), uid=2)
    y = g.pointwise(a, b, "ADD")
    g.set_output(y).set_uid(y, 3)
    if strides is not None:
        g.set_strides(y, list(strides))
    h = hd.Handle.cpu()
    g.build(h)
    return g, h


A = values(32, 1).reshape(4, 8)
B = values(32, 2).reshape(4, 8)


def test_output_written_in_place():
    g, h = add_graph()
    y = np.full((4, 8), -7.0, np.float32)
    ptr = y.ctypes.data
    res = g.execute(h, {1: A, 2: B, 3: y})
    assert res[3] is y and y.ctypes.data == ptr
    np.testing.assert_array_equal(y, A + B)


def test_output_strided_view_into_larger_array():
    g, h = add_graph(strides=(16, 1))
    big = np.zeros((4, 16), np.float32)
    view = big[:, :8]
    assert np.shares_memory(view, big)
    g.execute(h, {1: A, 2: B, 3: view})
    np.testing.assert_array_equal(big[:, :8], A + B)
    assert not big[:, 8:].any(), "bytes outside the tensor's extent were written"


def test_output_with_byte_offset():
    g, h = add_graph()
    flat = np.zeros(32 + 4, np.float32)
    view = flat[4:].reshape(4, 8)  # 16 bytes in: the tensor's default alignment holds
    g.execute(h, {1: A, 2: B, 3: view})
    assert not flat[:4].any()
    np.testing.assert_array_equal(flat[4:].reshape(4, 8), A + B)
    # 20 bytes in breaks the 16-byte alignment: the backend's refusal, with its status.
    flat = np.zeros(32 + 5, np.float32)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: A, 2: B, 3: flat[5:].reshape(4, 8)})
    assert ei.value.code == "HIPDNN_BACKEND_ERROR"
    assert ei.value.backend_status == "BAD_PARAM"
    assert "uid 3" in ei.value.message and "not aligned to 16 bytes" in ei.value.message


def test_allocated_output_round_trip_shares_memory():
    g, h = add_graph()
    res = g.execute(h, {1: A, 2: B})
    y = res[3]
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (4, 8)
    np.testing.assert_array_equal(y, A + B)
    # Bind the returned array again: the same memory gets the new result.
    ptr = y.ctypes.data
    alias = y.reshape(-1)  # a second NumPy view of the same memory
    assert np.shares_memory(alias, y)
    g.execute(h, {1: B, 2: B, 3: y})
    assert y.ctypes.data == ptr
    np.testing.assert_array_equal(alias.reshape(4, 8), B + B)
    # And an input is read where it lies: write through a view, execute again.
    a = A.copy()
    a_view = a.reshape(-1)
    a_view[0] = 1000.0
    g.execute(h, {1: a, 2: B, 3: y})
    assert y[0, 0] == np.float32(1000.0) + B[0, 0]


class Producer:
    """An object with __dlpack__ that keeps the capsule it handed out."""

    def __init__(self, arr):
        self.arr = arr
        self.capsules = []

    def __dlpack__(self, stream=None):
        c = self.arr.__dlpack__()
        self.capsules.append(c)
        return c

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def capsule_named(c, name):
    f = ctypes.pythonapi.PyCapsule_IsValid
    f.restype, f.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    return f(c, name) == 1


def test_capsule_consumed_and_deleter_called():
    g, h = add_graph()
    a = A.copy()
    p = Producer(a)
    base = sys.getrefcount(a)
    y = np.zeros((4, 8), np.float32)
    g.execute(h, {1: p, 2: B, 3: y})
    (c,) = p.capsules
    assert capsule_named(c, b"used_dltensor") and not capsule_named(c, b"dltensor")
    del c
    p.capsules.clear()
    # NumPy's deleter releases the reference the export took: no leak.
    assert sys.getrefcount(a) == base
    np.testing.assert_array_equal(y, A + B)


@pytest.mark.parametrize(
    "bad, fragment",
    [
        (A.astype(np.float64), "data type DOUBLE does not match the graph tensor 'a' (FLOAT)"),
        (A.reshape(8, 4), "dims [8, 4] do not match the graph tensor 'a' (dims [4, 8])"),
        (np.ascontiguousarray(A.T).T, "strides [1, 4] (elements) do not match the graph tensor 'a' (strides [8, 1])"),
        (A[::-1], "strides [-8, 1] (elements) do not match"),
    ],
)
def test_mismatched_input_refused(bad, fragment):
    g, h = add_graph()
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: bad, 2: B})
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message.startswith("execute: tensor uid 1: "), ei.value.message
    assert fragment in ei.value.message, ei.value.message


def test_shared_memory_with_an_output_refused():
    g, h = add_graph()
    y = A.copy()
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: y, 2: B, 3: y})
    assert ei.value.code == "INVALID_VALUE" and "share memory" in ei.value.message


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeDevice:
    """A DLPack producer claiming device type 2 (CUDA) over host memory."""

    def __init__(self, arr, device_type=2):
        self.arr, self.shape = arr, (ctypes.c_int64 * arr.ndim)(*arr.shape)
        self.m = DLManagedTensor()
        self.m.dl_tensor = DLTensor(arr.ctypes.data, DLDevice(device_type, 0), arr.ndim, DLDataType(2, 32, 1), self.shape, None, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.m), b"dltensor", None)

    def __dlpack_device__(self):
        return (self.m.dl_tensor.device.device_type, 0)


def test_non_cpu_device_refused():
    g, h = add_graph()
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: FakeDevice(A.copy()), 2: B})
    assert ei.value.code == "INVALID_VALUE"
    assert "device type 2" in ei.value.message and "uid 1" in ei.value.message
    # The same producer on device type 1 (CPU) binds.
    y = g.execute(h, {1: FakeDevice(A.copy(), 1), 2: B})[3]
    np.testing.assert_array_equal(y, A + B)


class CountingFake(FakeDevice):
    """FakeDevice counting its __dlpack__ calls and the stream each was given."""

    def __init__(self, arr, device_type=2):
        super().__init__(arr, device_type)
        self.calls = []
        self.capsules = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        c = super().__dlpack__(stream)
        self.capsules.append(c)
        return c


class NoDeviceMethod:
    """A producer without __dlpack_device__ (the device is only in its capsule)."""

    def __init__(self, fake):
        self.fake = fake

    def __dlpack__(self, stream=None):
        return self.fake.__dlpack__(stream)


@pytest.mark.parametrize("device_type, named", [(2, "CUDA device 0"), (10, "ROCm device 0"), (3, "CUDA pinned host memory")])
def test_device_tensor_on_cpu_handle_refused_before_export(device_type, named):
    g, h = add_graph()
    p = CountingFake(A.copy(), device_type)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: B, 2: p})
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message == (
        f"execute: tensor uid 2: the tensor is on {named} (DLPack device type {device_type}, id 0) but execute "
        "runs on a CPU handle, which binds CPU tensors (device type 1) only"
    )
    # __dlpack_device__ was enough: no capsule was made, none consumed.
    assert p.calls == []


def test_device_type_checked_on_the_capsule_too():
    g, h = add_graph()
    fake = CountingFake(A.copy(), 2)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(h, {1: NoDeviceMethod(fake), 2: B})
    assert "uid 1: the tensor is on CUDA device 0 (DLPack device type 2, id 0)" in ei.value.message
    # Consumed (renamed) and released: the capsule's destructor will not free it again.
    (c,) = fake.capsules
    assert capsule_named(c, b"used_dltensor")


def test_cpu_tensors_exported_without_a_stream():
    g, h = add_graph()
    p = CountingFake(A.copy(), 1)
    y = g.execute(h, {1: p, 2: B})[3]
    np.testing.assert_array_equal(y, A + B)
    assert p.calls == [None]  # CPU: __dlpack__() without a stream (the spec allows only None)


def test_device_array_is_not_constructible():
    assert hd.DeviceArray.__module__ == "hipdnn_rs"
    with pytest.raises(TypeError):
        hd.DeviceArray()


def test_torch_cpu_tensors_share_memory():
    try:
        import torch
    except ImportError as e:
        print(f"torch is not importable ({e}): torch CPU tests skipped")
        pytest.skip(f"torch is not importable: {e}")
    g, h = add_graph()
    a, b = torch.from_numpy(A.copy()), torch.from_numpy(B.copy())
    y = torch.zeros(4, 8)
    ptr = y.data_ptr()
    res = g.execute(h, {1: a, 2: b, 3: y})
    assert res[3] is y and y.data_ptr() == ptr
    assert torch.equal(y, a + b)
    y_np = y.numpy()  # shares memory with y
    g.execute(h, {1: b, 2: b, 3: y})
    np.testing.assert_array_equal(y_np, B + B)
    # bfloat16 binds (NumPy has no bfloat16; the output must be passed).
    g2 = hd.Graph()
    g2.set_io_data_type("BFLOAT16").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    x = g2.tensor("x", [4], uid=1)
    z = g2.pointwise_unary(x, "NEG")
    g2.set_output(z).set_uid(z, 2).set_data_type(z, "BFLOAT16")
    g2.build(h)
    xb = torch.tensor([1.0, -2.0, 3.5, 0.0], dtype=torch.bfloat16)
    zb = torch.empty(4, dtype=torch.bfloat16)
    g2.execute(h, {1: xb, 2: zb})
    assert torch.equal(zb, -xb)


def test_returned_outputs_are_dlpack_producers():
    """Outputs execute allocates are NumPy arrays: DLPack producers on the CPU that consumers
    (hipdnn_rs.from_dlpack, numpy.from_dlpack, torch.from_dlpack) view without a copy."""
    g, h = add_graph()
    y = g.execute(h, {1: A, 2: B})[3]
    assert hasattr(y, "__dlpack__") and y.__dlpack_device__() == (1, 0)
    for view in [hd.from_dlpack(y), np.from_dlpack(y)]:
        assert view.ctypes.data == y.ctypes.data and view.shape == y.shape and view.dtype == y.dtype
        view[0, 0] = 12345.0  # written through one, read through the other
        assert y[0, 0] == np.float32(12345.0)
        y[1, 1] = -7.0
        assert view[1, 1] == np.float32(-7.0)
    # And the view binds again: execute writes through it into y.
    g.execute(h, {1: A, 2: B, 3: hd.from_dlpack(y)})
    np.testing.assert_array_equal(y, A + B)


def test_from_dlpack_of_any_producer_and_device_check():
    a = A.copy()
    p = Producer(a)
    v = hd.from_dlpack(p)
    assert v.ctypes.data == a.ctypes.data and len(p.capsules) == 1
    a[0, 0] = 99.0  # written through the producer's array, read through the view
    assert v[0, 0] == np.float32(99.0)
    # NumPy marks a view of a legacy (unversioned) capsule read-only; the DLPack arrays of
    # execute's outputs (versioned, NumPy to NumPy) stay writable (test above).
    assert not v.flags.writeable
    with pytest.raises(hd.HipdnnError) as ei:
        hd.from_dlpack(FakeDevice(A.copy(), 2))
    assert ei.value.code == "INVALID_VALUE"
    assert ei.value.message.startswith("from_dlpack: the tensor is on DLPack device type 2, not the CPU (1)")


def test_from_dlpack_torch_cpu_shares_memory():
    try:
        import torch
    except ImportError as e:
        print(f"torch is not importable ({e}): torch CPU tests skipped")
        pytest.skip(f"torch is not importable: {e}")
    g, h = add_graph()
    y = g.execute(h, {1: A, 2: B})[3]
    t = torch.from_dlpack(y)  # torch consumes the array execute returned
    assert t.data_ptr() == y.ctypes.data
    t[0, 0] = 5.0
    assert y[0, 0] == np.float32(5.0)
    back = hd.from_dlpack(t)
    assert back.ctypes.data == t.data_ptr()
