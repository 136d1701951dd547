"""GPU tensors through DLPack: torch CUDA (or ROCm) tensors bound by device address, outputs
written in place or returned as DeviceArrays that torch views without a copy, device
mismatches refused.

The GPU tests skip, with the reason printed, without torch, without a CUDA/ROCm torch, or
without a hipdnn_rs GPU handle. The DeviceArray logic has no CPU-side test: a DeviceArray only
exists on a GPU handle. The refusal of a CUDA tensor on a CPU handle needs torch with a GPU;
the same refusal for a fake producer runs everywhere (test_dlpack.py).
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hipdnn_rs as hd

from common import values

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def skip(reason):
    """Skips with the reason printed; fails instead when HIPDNN_PY_REQUIRE_GPU=1 (the GPU
    machine's run, where a skip would hide a broken setup)."""
    print(f"test_gpu: skipped: {reason}")
    if os.environ.get("HIPDNN_PY_REQUIRE_GPU") == "1":
        pytest.fail(f"HIPDNN_PY_REQUIRE_GPU=1 but: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def torch_gpu():
    try:
        import torch
    except ImportError as e:
        skip(f"torch is not importable ({e})")
    if not torch.cuda.is_available():
        skip(f"torch {torch.__version__} has no usable CUDA/ROCm device")
    return torch


@pytest.fixture(scope="module")
def gpu(torch_gpu):
    try:
        h = hd.Handle.gpu()
    except hd.HipdnnError as e:
        skip(f"no hipdnn_rs GPU handle: {e} (a wheel built --no-default-features reads the kernels from HIPDNN_KERNEL_DIR, e.g. engines/kernels/packed)")
    return h


def dl_type(torch):
    return 10 if torch.version.hip else 2


def add_graph(h, n=1000, dims=None):
    g = hd.Graph()
    g.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    dims = dims or [n]
    a, b = g.tensor("a", dims, uid=1), g.tensor("b", dims, uid=2)
    y = g.pointwise(a, b, "ADD")
    g.set_output(y).set_uid(y, 3)
    g.build(h)
    return g


def test_cuda_tensors_in_and_preallocated_output_in_place(torch_gpu, gpu):
    torch = torch_gpu
    dev = torch.device("cuda", torch.cuda.current_device())
    g = add_graph(gpu, dims=[8, 125])
    a = torch.from_numpy(values(1000, 1).reshape(8, 125)).to(dev)
    b = torch.from_numpy(values(1000, 2).reshape(8, 125)).to(dev)
    y = torch.empty(8, 125, device=dev)
    ptr = y.data_ptr()
    res = g.execute(gpu, {1: a, 2: b, 3: y})
    assert res[3] is y and y.data_ptr() == ptr
    torch.testing.assert_close(y, a + b, rtol=0, atol=0)
    # Device work queued on torch's (default) stream before execute is seen by it: the input
    # is rewritten on the device, then bound again.
    a.mul_(2)
    g.execute(gpu, {1: a, 2: b, 3: y})
    torch.testing.assert_close(y, a + b, rtol=0, atol=0)
    # A matmul with a bias and GELU epilogue (the GPU engine's fused Linear) against torch.
    g2 = hd.Graph()
    g2.set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT").set_compute_data_type("FLOAT")
    x, w, bias = g2.tensor("x", [16, 64], uid=1), g2.tensor("w", [64, 32], strides=[1, 64], uid=2), g2.tensor("b", [1, 32], uid=3)
    z = g2.linear(x, w, bias, "gelu")
    g2.set_output(z).set_uid(z, 4)
    g2.build(gpu)
    lin = torch.nn.Linear(64, 32).to(dev)
    xs = torch.from_numpy(values(16 * 64, 5).reshape(16, 64)).to(dev)
    out = torch.empty(16, 32, device=dev)
    with torch.no_grad():
        g2.execute(gpu, {1: xs, 2: lin.weight.detach().t(), 3: lin.bias.detach().reshape(1, 32), 4: out})
        ref = torch.nn.functional.gelu(lin(xs))
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)


class DlpackOnly:
    """A producer with the DLPack protocol only: execute must take it through a capsule."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_torch_tensors_read_directly_bind_like_their_dlpack_capsules(torch_gpu, gpu):
    """A plain torch CUDA tensor on torch's default stream is read through data_ptr()/shape/
    stride() (no capsule, ~15 us less per tensor); it must bind exactly as its capsule would:
    same outputs, same refusals. Views with a storage offset keep it; a tensor that requires
    grad still goes through __dlpack__, whose own error torch raises."""
    torch = torch_gpu
    dev = torch.device("cuda", torch.cuda.current_device())
    g = add_graph(gpu, dims=[8, 125])
    big = torch.from_numpy(values(1004 * 2, 7)).to(dev)
    a = big[4:1004].reshape(8, 125)  # a view whose first element is 16 bytes in
    b = torch.from_numpy(values(1000, 2).reshape(8, 125)).to(dev)
    y1, y2 = torch.empty(8, 125, device=dev), torch.empty(8, 125, device=dev)
    g.execute(gpu, {1: a, 2: b, 3: y1})
    g.execute(gpu, {1: DlpackOnly(a), 2: DlpackOnly(b), 3: DlpackOnly(y2)})
    torch.testing.assert_close(y1, a + b, rtol=0, atol=0)
    assert torch.equal(y1, y2)
    wide = torch.from_numpy(values(8 * 250, 3).reshape(8, 250)).to(dev)[:, ::2]
    msgs = []
    for x in (wide, DlpackOnly(wide)):
        with pytest.raises(hd.HipdnnError) as ei:
            g.execute(gpu, {1: x, 2: b, 3: y1})
        msgs.append(ei.value.message)
    assert msgs[0] == msgs[1] and "strides [250, 2] (elements) do not match" in msgs[0], msgs
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(gpu, {1: a.half(), 2: b, 3: y1})
    assert "data type HALF does not match" in ei.value.message, ei.value.message
    leaf = b.clone().requires_grad_(True)
    with pytest.raises(Exception) as ei:
        g.execute(gpu, {1: a, 2: leaf, 3: y1})
    assert not isinstance(ei.value, hd.HipdnnError), ei.value


def test_input_written_on_a_torch_side_stream_is_waited_for(torch_gpu, gpu):
    """execute exports with stream=1 (CUDA) / 0 (ROCm): torch makes the default stream, where
    execute runs, wait for the work queued on its current stream (a non-blocking side stream
    here, which the legacy default stream would not wait for by itself)."""
    torch = torch_gpu
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        skip("torch.cuda._sleep is missing: the side-stream ordering test needs it")
    dev = torch.device("cuda", torch.cuda.current_device())
    n = 1 << 20
    g = add_graph(gpu, n=n)
    a, b, y = torch.zeros(n, device=dev), torch.ones(n, device=dev), torch.empty(n, device=dev)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        sleep(100_000_000)  # ~50 ms of spinning on the side stream, then the write
        a.fill_(3.0)
        g.execute(gpu, {1: a, 2: b, 3: y})
    torch.cuda.synchronize()
    assert torch.all(y == 4.0), "execute ran before the side stream's write to its input"


def test_omitted_output_is_a_device_array_torch_views(torch_gpu, gpu):
    torch = torch_gpu
    dev = torch.device("cuda", torch.cuda.current_device())
    g = add_graph(gpu)
    a = torch.from_numpy(values(1000, 1)).to(dev)
    b = torch.from_numpy(values(1000, 2)).to(dev)
    y = g.execute(gpu, {1: a, 2: b})[3]
    assert isinstance(y, hd.DeviceArray)
    assert y.shape == (1000,) and y.strides == (1,) and y.dtype == "FLOAT" and y.nbytes == 4000
    assert y.__dlpack_device__() == (dl_type(torch), dev.index)
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.data_ptr() and t.device == dev  # a view, no copy
    torch.testing.assert_close(t, a + b, rtol=0, atol=0)
    np.testing.assert_array_equal(y.numpy(), (a + b).cpu().numpy())
    # Written through torch's view, read through the DeviceArray (same memory).
    t[0] = 12345.0
    assert y.numpy()[0] == np.float32(12345.0)
    # The view outlives the DeviceArray (the export holds the memory).
    del y
    torch.cuda.synchronize()
    assert t[1].item() == (a + b)[1].item()
    # A DeviceArray binds as an input of the next execute (device memory, no copy).
    y2 = g.execute(gpu, {1: a, 2: b})[3]
    z = g.execute(gpu, {1: y2, 2: b})[3]
    torch.testing.assert_close(torch.from_dlpack(z), a + b + b, rtol=0, atol=0)
    with pytest.raises(BufferError):
        y2.__dlpack__(copy=True)


def test_device_mismatches_refused(torch_gpu, gpu):
    torch = torch_gpu
    dev = torch.device("cuda", torch.cuda.current_device())
    cpu_handle = hd.Handle.cpu()
    g = add_graph(cpu_handle, n=4)
    a = torch.ones(4, device=dev)
    with pytest.raises(hd.HipdnnError) as ei:
        g.execute(cpu_handle, {1: a, 2: np.ones(4, np.float32)})
    m = ei.value.message
    assert ei.value.code == "INVALID_VALUE"
    assert m.startswith("execute: tensor uid 1: the tensor is on ")
    assert f"(DLPack device type {dl_type(torch)}, id {dev.index})" in m and "a CPU handle" in m
    # Another ordinal than the handle's (when torch sees a second device).
    if torch.cuda.device_count() > 1:
        other = torch.ones(1000, device=torch.device("cuda", (dev.index + 1) % torch.cuda.device_count()))
        gg = add_graph(gpu)
        with pytest.raises(hd.HipdnnError) as ei:
            gg.execute(gpu, {1: other, 2: other})
        assert "a GPU handle on" in ei.value.message
    else:
        print("test_gpu: one GPU visible: the wrong-ordinal refusal is not exercised")


def test_cpu_handle_from_a_gpu_process_still_binds_host_memory(torch_gpu, gpu):
    """A CPU tensor on the CPU handle in a process using the GPU: unchanged behaviour."""
    g = add_graph(hd.Handle.cpu(), n=4)
    y = g.execute(hd.Handle.cpu(), {1: np.ones(4, np.float32), 2: np.ones(4, np.float32)})[3]
    np.testing.assert_array_equal(y, np.full(4, 2, np.float32))


def test_torch_module_example_on_gpu(torch_gpu, gpu):
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / "torch_module.py"), "--device", "gpu"], capture_output=True, text=True, check=False, env=os.environ
    )
    print(r.stdout, r.stderr)
    assert r.returncode == 0 and '"ok": true' in r.stdout


def test_overhead_example_on_gpu(torch_gpu, gpu):
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / "overhead.py"), "--device", "gpu", "--calls", "200", "--rounds", "3"],
        capture_output=True, text=True, check=False,
    )
    print(r.stdout, r.stderr)
    assert r.returncode == 0 and '"side": "python"' in r.stdout
