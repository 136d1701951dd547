#!/usr/bin/env python3
"""Writes the upstream-format JSON fixtures of the 7 node kinds added in issue 35 (deliverable 3).

Independent of the Rust writer: each node object is assembled from the key list of upstream's
per-op JSON writer (`to_json` in ROCm/rocm-libraries
`projects/hipdnn/flatbuffers_sdk/include/hipdnn_flatbuffers_sdk/utilities/json/<Table>.hpp`;
stored copies: tfalders/rocm-libraries @f6b59e29 for SdpaBackward, BlockScaleDequantize,
BlockScaleQuantize and CustomOp; tvy-amd/rocm-libraries @c1ceef0d for ResampleBwd, @49cebce1 for
MoeGroupedMatmul, @2cd1715c for MoeGroupedMatmulBwd), plus `name` / `type` /
`compute_data_type` from `to_json(Node)` in Graph.hpp (somayeh-rahimipour/rocm-libraries-fork
@7afa99c8), and printed as nlohmann's `dump()` does: compact, keys sorted bytewise, UTF-8 as
is, no trailing newline. Floats are chosen so Python's repr and nlohmann's spelling agree
(0.125, 0.25). Tensors as TensorAttributes.hpp (tvy-amd @4c94ac63) writes them.

Run from anywhere: python3 hipdnn-rs/tests/upstream_json/make.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def strides(dims):
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def tensor(uid, name, dims, dt="float"):
    return {
        "alignment": 16,
        "data_type": dt,
        "dims": dims,
        "is_runtime_pass_by_value": False,
        "name": name,
        "strides": strides(dims),
        "uid": uid,
        "virtual": False,
    }


def node(ty, name, body, compute="float"):
    body = dict(body)
    body.update({"compute_data_type": compute, "name": name, "type": ty})
    return body


def graph(name, tensors, nodes, io="float"):
    return {
        "compute_data_type": "float",
        "intermediate_data_type": "float",
        "io_data_type": io,
        "is_override_shape_enabled": False,
        "name": name,
        "nodes": nodes,
        "tensors": tensors,
    }


def sdpa_backward():
    qd = [1, 2, 8, 16]
    ts = [tensor(u, n, qd, "half") for u, n in enumerate(["q", "k", "v", "o", "do"], 1)]
    ts.append(tensor(6, "stats", [1, 2, 8, 1]))
    ts += [tensor(u, n, qd, "half") for u, n in [(7, "dq"), (8, "dk"), (9, "dv")]]
    ts += [
        tensor(10, "scale", [1, 1, 1, 1]),
        tensor(11, "attn_mask", [1, 1, 8, 8], "half"),
        tensor(12, "seq_len_q", [1, 1, 1, 1], "int32"),
        tensor(13, "seq_len_kv", [1, 1, 1, 1], "int32"),
        tensor(14, "seed", [1, 1, 1, 1], "int64"),
        tensor(15, "offset", [1, 1, 1, 1], "int64"),
        tensor(16, "dropout_mask", [1, 1, 8, 8], "half"),
        tensor(17, "dropout_scale", [1, 1, 1, 1]),
        tensor(18, "dropout_scale_inv", [1, 1, 1, 1]),
        tensor(19, "dbias", [1, 1, 8, 8], "half"),
    ]
    ts += [tensor(u, n, qd, "half") for u, n in [(20, "dq2"), (21, "dk2"), (22, "dv2")]]
    req_in = {"q_tensor_uid": 1, "k_tensor_uid": 2, "v_tensor_uid": 3, "o_tensor_uid": 4,
              "do_tensor_uid": 5, "stats_tensor_uid": 6}
    opt_in = ["scale", "attn_mask", "seq_len_q", "seq_len_kv", "seed", "offset",
              "dropout_mask", "dropout_scale", "dropout_scale_inv"]
    full = node("SdpaBackwardAttributes", "sdpa_bwd_full", {
        "inputs": dict(req_in, **{f"{k}_tensor_uid": 10 + i for i, k in enumerate(opt_in)}),
        "outputs": {"dq_tensor_uid": 7, "dk_tensor_uid": 8, "dv_tensor_uid": 9,
                    "dbias_tensor_uid": 19},
        "parameters": {"alibi_mask": True, "padding_mask": True, "causal_mask": False,
                       "causal_mask_bottom_right": True, "dropout_probability": 0.125,
                       "attn_scale_value": 0.25, "left_bound": -3, "right_bound": 0,
                       "diagonal_alignment": "BOTTOM_RIGHT"},
    })
    plain = node("SdpaBackwardAttributes", "sdpa_bwd_plain", {
        "inputs": dict(req_in, **{f"{k}_tensor_uid": None for k in opt_in}),
        "outputs": {"dq_tensor_uid": 20, "dk_tensor_uid": 21, "dv_tensor_uid": 22,
                    "dbias_tensor_uid": None},
        "parameters": {"alibi_mask": False, "padding_mask": False, "causal_mask": False,
                       "causal_mask_bottom_right": False, "dropout_probability": None,
                       "attn_scale_value": None, "left_bound": None, "right_bound": None,
                       "diagonal_alignment": "TOP_LEFT"},
    })
    return graph("sdpa_backward", ts, [full, plain], io="half")


def block_scale_dequantize():
    ts = [tensor(1, "x", [4, 64], "fp8_e4m3"), tensor(2, "scale", [4, 2], "fp8_e8m0"),
          tensor(3, "y", [4, 64]), tensor(4, "y2", [4, 64])]
    a = node("BlockScaleDequantizeAttributes", "dequant", {
        "inputs": {"x_tensor_uid": 1, "scale_tensor_uid": 2},
        "outputs": {"y_tensor_uid": 3},
        "block_size": [1, 32], "is_negative_scale": True})
    b = node("BlockScaleDequantizeAttributes", "dequant_default", {
        "inputs": {"x_tensor_uid": 1, "scale_tensor_uid": 2},
        "outputs": {"y_tensor_uid": 4},
        "block_size": [], "is_negative_scale": False})
    return graph("block_scale_dequantize", ts, [a, b])


def block_scale_quantize():
    ts = [tensor(1, "x", [4, 64]), tensor(2, "y", [4, 64], "fp4_e2m1"),
          tensor(3, "scale", [4, 2], "fp8_e8m0"), tensor(4, "y2", [4, 64], "fp4_e2m1"),
          tensor(5, "scale2", [4, 2], "fp8_e8m0")]
    # block_size written only when non-zero, axis only when present, transpose always.
    a = node("BlockScaleQuantizeAttributes", "quant", {
        "inputs": {"x_tensor_uid": 1},
        "outputs": {"y_tensor_uid": 2, "scale_tensor_uid": 3},
        "block_size": 32, "axis": 1, "transpose": True})
    b = node("BlockScaleQuantizeAttributes", "quant_default", {
        "inputs": {"x_tensor_uid": 1},
        "outputs": {"y_tensor_uid": 4, "scale_tensor_uid": 5},
        "transpose": False})
    return graph("block_scale_quantize", ts, [a, b])


def custom_op():
    ts = [tensor(1, "table", [8, 4]), tensor(2, "ids", [3], "int32"), tensor(3, "rows", [3, 4]),
          tensor(4, "count", [1], "int64"), tensor(5, "out", [3, 4])]
    a = node("CustomOpAttributes", "gather", {
        "custom_op_id": "my_plugin.my_op", "input_tensor_uids": [1, 2],
        "output_tensor_uids": [3, 4], "data": [0, 1, 127, 128, 255]})
    b = node("CustomOpAttributes", "no_data", {
        "custom_op_id": "my_plugin.other_op", "input_tensor_uids": [3],
        "output_tensor_uids": [5], "data": []})
    return graph("custom_op", ts, [a, b])


def resample_bwd():
    ts = [tensor(1, "dy", [1, 8, 16, 16]), tensor(2, "index", [1, 8, 16, 16], "int32"),
          tensor(3, "dx", [1, 8, 32, 32]), tensor(4, "dx2", [1, 8, 32, 32])]
    # index_tensor_uid written only when present.
    a = node("ResampleBwdAttributes", "maxpool_bwd", {
        "dy_tensor_uid": 1, "dx_tensor_uid": 3, "index_tensor_uid": 2,
        "pre_padding": [0, 0], "post_padding": [1, 1], "stride": [2, 2], "window": [2, 2],
        "resample_mode": "maxpool", "padding_mode": "neg_inf_pad"})
    b = node("ResampleBwdAttributes", "avgpool_bwd", {
        "dy_tensor_uid": 1, "dx_tensor_uid": 4,
        "pre_padding": [0, 0], "post_padding": [0, 0], "stride": [2, 2], "window": [2, 2],
        "resample_mode": "avgpool_exclude_padding", "padding_mode": "zero_pad"})
    return graph("resample_bwd", ts, [a, b])


def moe_grouped_matmul():
    ts = [tensor(1, "token", [10, 16], "half"), tensor(2, "weight", [4, 16, 32], "half"),
          tensor(3, "first_token_offset", [4], "int64"), tensor(4, "token_index", [10], "int32"),
          tensor(5, "token_ks", [10], "int32"), tensor(6, "output", [10, 32], "half"),
          tensor(7, "output2", [10, 32], "half")]
    # token_index / token_ks written only when present.
    a = node("MoeGroupedMatmulAttributes", "moe_gather", {
        "inputs": {"token_tensor_uid": 1, "weight_tensor_uid": 2,
                   "first_token_offset_tensor_uid": 3, "token_index_tensor_uid": 4,
                   "token_ks_tensor_uid": 5},
        "outputs": {"output_tensor_uid": 6}, "mode": "gather", "top_k": 2})
    b = node("MoeGroupedMatmulAttributes", "moe_plain", {
        "inputs": {"token_tensor_uid": 1, "weight_tensor_uid": 2,
                   "first_token_offset_tensor_uid": 3},
        "outputs": {"output_tensor_uid": 7}, "mode": "none", "top_k": 1})
    return graph("moe_grouped_matmul", ts, [a, b], io="half")


def moe_grouped_matmul_bwd():
    ts = [tensor(1, "doutput", [10, 32]), tensor(2, "token", [10, 16]),
          tensor(3, "first_token_offset", [4], "int64"), tensor(4, "dweight", [4, 16, 32])]
    a = node("MoeGroupedMatmulBwdAttributes", "moe_bwd", {
        "inputs": {"doutput_tensor_uid": 1, "token_tensor_uid": 2,
                   "first_token_offset_tensor_uid": 3},
        "outputs": {"dweight_tensor_uid": 4}})
    return graph("moe_grouped_matmul_bwd", ts, [a])


def main():
    for f in [sdpa_backward, block_scale_dequantize, block_scale_quantize, custom_op,
              resample_bwd, moe_grouped_matmul, moe_grouped_matmul_bwd]:
        text = json.dumps(f(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        with open(os.path.join(HERE, f.__name__ + ".json"), "w", encoding="utf-8") as out:
            out.write(text)


if __name__ == "__main__":
    main()
