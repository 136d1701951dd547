"""Execute-time shape overrides from Python (issue 34 through issue 36's module): a graph built
once at its largest shape runs smaller shapes with the bits of a graph built at each shape."""

import numpy as np
import pytest

import hipdnn_rs as hd


def linear(rows, flag=False):
    g = hd.Graph().set_io_data_type("FLOAT").set_intermediate_data_type("FLOAT")
    g.set_override_shape_enabled(flag)
    x = g.tensor("x", [rows, 16], uid=1)
    w = g.tensor("w", [16, 8], uid=2)
    b = g.tensor("b", [1, 8], uid=3)
    y = g.pointwise_unary(g.pointwise(g.matmul(x, w), b, "ADD"), "GELU_FWD")
    g.set_output(y).set_uid(y, 4)
    return g


def inputs(rows):
    rng = np.random.default_rng(rows)
    return {
        1: rng.standard_normal((rows, 16), dtype=np.float32),
        2: rng.standard_normal((16, 8), dtype=np.float32),
        3: rng.standard_normal((1, 8), dtype=np.float32),
    }


def test_a_graph_built_for_8_rows_serves_fewer_with_the_bits_of_a_build_at_that_shape():
    h = hd.Handle.cpu()
    big = linear(8, flag=True)
    assert big.is_override_shape_enabled()
    big.build(h)
    for rows in (1, 3, 8):
        own = linear(rows)
        own.build(h)
        ov = big.shape_overrides_for(own)
        assert ov == ({} if rows == 8 else {1: ([rows, 16], [16, 1]), 4: ([rows, 8], [8, 1])})
        want = own.execute(h, inputs(rows))[4]
        got = big.execute(h, inputs(rows), overrides=ov)[4]  # output allocated at the override
        assert got.shape == (rows, 8)
        assert got.tobytes() == want.tobytes(), rows
        # A caller's output array of the override's shape is written in place.
        out = np.full((rows, 8), np.nan, np.float32)
        res = big.execute(h, {**inputs(rows), 4: out}, overrides=ov)
        assert res[4] is out and out.tobytes() == want.tobytes()


def test_overrides_are_refused_without_the_flag_or_beyond_the_built_shape():
    h = hd.Handle.cpu()
    plain = linear(8)
    plain.build(h)
    with pytest.raises(hd.HipdnnError) as e:
        plain.execute(h, inputs(3), overrides={1: ([3, 16], [16, 1]), 4: ([3, 8], [8, 1])})
    assert e.value.code == "INVALID_VALUE"
    assert e.value.message.startswith("shape overrides need a graph built with the override-shape flag")
    big = linear(8, flag=True)
    big.build(h)
    with pytest.raises(hd.HipdnnError) as e:
        big.execute(h, inputs(9), overrides={1: ([9, 16], [16, 1]), 4: ([9, 8], [8, 1])})
    assert e.value.message.startswith(
        "shape override of tensor uid 1: dim 0 is 9, larger than the built maximum 8"
    ), e.value.message
