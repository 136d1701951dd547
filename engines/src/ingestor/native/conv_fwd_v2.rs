//! ConvFwd pack, contract `hipkernel.conv_fwd.dispatch.v2`: 2-D convolution forward with
//! padding, stride, dilation and a fused epilogue (+bias\[k\], ReLU), f32/f16, as ONE launch.
//!
//! Kernels: `hipdnn_conv_fwd_<t>` of `engines/kernels/conv_fwd.cu` (ABI in
//! `engines/kernels/README.md`). Registered beside v1 with
//! [`crate::ingestor::dispatch::DispatchRegistry::register_versioned_only`]; v1 is unchanged.
//!
//! Graphs served (one fused plan each): `conv_fprop`; `conv_fprop → pointwise ADD(bias)`;
//! `conv_fprop → pointwise RELU_FWD`; `conv_fprop → ADD(bias) → RELU_FWD`. The bias has dims
//! `[1, K, 1, 1]` with unit stride on K; intermediate tensors must be virtual.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `x.uid`, `w.uid`, `y.uid` | int | any int64 |
//! | `bias.uid` | int | any int64; present iff `epilogue` bit 1 is set |
//! | `n`, `c`, `h`, `width`, `k`, `r`, `s`, `p`, `q` | int | [1, 2147483647] |
//! | `pad_h`, `pad_w` | int | [0, 2147483647] (pre-padding) |
//! | `stride_h`, `stride_w`, `dil_h`, `dil_w` | int | [1, 2147483647] |
//! | `epilogue` | int | [0, 3]: bit 1 = + bias\[k\], bit 2 = ReLU after it |
//! | `dtype` | int | `DataType` FLOAT (1) or HALF (2) |
//! | `block_size` | int | [1, 1024] |
//!
//! Extra checks (build and restore, one function [`ConvFwdV2Inputs::geometry_for`]):
//! `(p−1)·stride_h + (r−1)·dil_h ≤ 2147483647` and the same for q/w (the kernel's int index
//! math), `total = n·k·p·q` (checked) and `ceil(total / block_size) ≤ 4294967295`. Launch:
//! block (block_size,1,1), grid (ceil(total/block_size),1,1), no shared memory, workspace 0.
//! Kernel arguments (20): x, w, bias, y `global_buffer` 8 (bias null without bit 1), then n, c,
//! h, width, k, r, s, p, q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, epilogue `by_value` 4.
//!
//! Refused (NOT_APPLICABLE, so the CPU engine serves the graph): conv mode CONVOLUTION, groups
//! ≠ 1, non-2-D, non-packed NCHW/KCRS/NKPQ (e.g. NHWC strides), data types other than
//! f32/f16 or mixed, output dims that disagree with the padding/stride/dilation, other epilogues.

use super::contract::{
    NativeContract, checked_product, grid_1d, int_values, native_handler, native_launch, read_ints,
};
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{PreparedLaunch, default_kernel_args};
use crate::ingestor::framework::family::{I32_MAX, IntValue, int, uid};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, is_packed, na};
use crate::ingestor::framework::head::{conv_fwd_head, head_nodes};
use crate::ingestor::launch_values::LaunchValues;
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::conv::{SpatialAttr, Window, output_extent};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{DataType, PointwiseMode};

/// The versioned contract name.
pub const CONV_FWD_V2: &str = "hipkernel.conv_fwd.dispatch.v2";
/// Block size this pack builds with, in threads.
pub const CONV_FWD_V2_BLOCK_SIZE: u32 = 256;
/// Epilogue bit: add bias\[k\].
pub const EPILOGUE_BIAS: i32 = 1;
/// Epilogue bit: ReLU after the bias.
pub const EPILOGUE_RELU: i32 = 2;
/// The launch values of the v2 contract with their ranges, in the order a restore reads them:
/// the 15 shape values (the order of [`ConvFwdV2Inputs::shape`]), `epilogue`, `bias.uid`
/// (read only under `epilogue` bit 1), the UIDs, `dtype`, `block_size`.
#[rustfmt::skip]
pub const CONV_FWD_V2_VALUES: [IntValue; 22] = [
    int("n", 1, I32_MAX), int("c", 1, I32_MAX), int("h", 1, I32_MAX), int("width", 1, I32_MAX),
    int("k", 1, I32_MAX), int("r", 1, I32_MAX), int("s", 1, I32_MAX),
    int("p", 1, I32_MAX), int("q", 1, I32_MAX),
    int("pad_h", 0, I32_MAX), int("pad_w", 0, I32_MAX),
    int("stride_h", 1, I32_MAX), int("stride_w", 1, I32_MAX),
    int("dil_h", 1, I32_MAX), int("dil_w", 1, I32_MAX),
    int("epilogue", 0, 3), uid("bias.uid"),
    uid("x.uid"), uid("w.uid"), uid("y.uid"), int("dtype", 1, 2), int("block_size", 1, 1024),
];

/// The launch inputs of contract v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvFwdV2Inputs {
    /// UID of x (NCHW, packed).
    pub x_uid: i64,
    /// UID of w (KCRS, packed).
    pub w_uid: i64,
    /// UID of y (NKPQ, packed): the last node's output.
    pub y_uid: i64,
    /// UID of the bias (`[1,K,1,1]`), when epilogue bit 1 is set.
    pub bias_uid: Option<i64>,
    /// n, c, h, width, k, r, s, p, q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w.
    pub shape: [i32; 15],
    /// Epilogue bits (1 = bias, 2 = ReLU).
    pub epilogue: i32,
    /// `DataType` value (1 or 2).
    pub dtype: i8,
    /// Threads per block, [1, 1024].
    pub block_size: u32,
}

impl ConvFwdV2Inputs {
    /// The kernel symbol this launch needs (`hipdnn_conv_fwd_<t>`).
    pub fn symbol(&self) -> &'static str {
        if self.dtype == DataType::HALF.0 {
            "hipdnn_conv_fwd_f16"
        } else {
            "hipdnn_conv_fwd_f32"
        }
    }

    /// The launch values (all INT; `bias.uid` only with a bias).
    pub fn to_values(&self) -> LaunchValues {
        let mut ints: Vec<i64> = self.shape.map(i64::from).to_vec();
        ints.extend([i64::from(self.epilogue), self.bias_uid.unwrap_or(0)]);
        ints.extend([self.x_uid, self.w_uid, self.y_uid]);
        ints.extend([i64::from(self.dtype), i64::from(self.block_size)]);
        let bias = self.bias_uid.is_some();
        int_values(&CONV_FWD_V2_VALUES, &ints, |n| bias || n != "bias.uid")
    }

    /// Grid and block (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'p', 'stride_h', 'r' and 'dil_h' of dispatch '<d>'
    /// overflow the kernel's int index math` (same for q), or `... give a grid larger than
    /// 4294967295 blocks`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        let [n, _c, _h, _w, k, r, s, p, q, _ph, _pw, sh, sw, dh, dw] = self.shape.map(i64::from);
        for (a, st, f, di, names) in [
            (p, sh, r, dh, "'p', 'stride_h', 'r' and 'dil_h'"),
            (q, sw, s, dw, "'q', 'stride_w', 's' and 'dil_w'"),
        ] {
            if (a - 1) * st + (f - 1) * di > i64::from(i32::MAX) {
                return Err(incompatible(format!(
                    "launch values {names} of dispatch '{d}' overflow the kernel's int index math"
                )));
            }
        }
        let too_big = || {
            incompatible(format!(
                "launch values 'n', 'k', 'p', 'q' and 'block_size' of dispatch '{d}' give a grid larger than 4294967295 blocks"
            ))
        };
        let total = checked_product(&[n, k, p, q]).ok_or_else(too_big)?;
        grid_1d(total, self.block_size, too_big)
    }

    /// The prepared launch of these inputs. `pointer_uids` are x, w, \[bias,\] y; the kernel
    /// arguments put a null bias pointer in third place without one.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let mut pointer_uids = vec![self.x_uid, self.w_uid];
        pointer_uids.extend(self.bias_uid);
        pointer_uids.push(self.y_uid);
        let mut scalars = self.shape.to_vec();
        scalars.push(self.epilogue);
        let geometry = self.geometry_for(CONV_FWD_V2)?;
        Ok(native_launch(
            CONV_FWD_V2,
            self.to_values(),
            geometry,
            pointer_uids,
            scalars,
        ))
    }
}

fn ext(v: i64, what: &str) -> PluginResult<i32> {
    i32::try_from(v).ok().filter(|x| *x >= 1).ok_or_else(|| {
        na(format!(
            "the conv_fwd pack (dispatch v2) needs {what} in [1, 2147483647], not {v}"
        ))
    })
}

fn pair(v: Option<hipdnn_schema::flatbuffers::Vector<'_, i64>>, default: i64) -> Vec<i64> {
    v.map(|v| v.iter().collect())
        .unwrap_or_else(|| vec![default, default])
}

native_handler!(ConvFwdV2Handler, ConvFwdV2Inputs, "v2");

impl NativeContract for ConvFwdV2Inputs {
    const CONTRACT: &'static str = CONV_FWD_V2;
    /// x, w, bias, y, then the 15 shape values and `epilogue`.
    const ARGUMENTS: (u32, u32) = (4, 16);

    /// The conv (+ epilogue) graph's launch inputs.
    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let scope = "the conv_fwd pack (dispatch v2)";
        let serves = format!("{scope} serves conv_fprop with up to two epilogue nodes");
        let nodes = head_nodes(graph, 3, &serves)?;
        let a = conv_fwd_head(&nodes[0], "conv_fwd", scope)?;
        let xt = tensor(graph, a.x_tensor_uid())?;
        let wt = tensor(graph, a.w_tensor_uid())?;
        let ct = tensor(graph, a.y_tensor_uid())?;
        let dtype = xt.data_type();
        if dtype != DataType::FLOAT && dtype != DataType::HALF {
            return Err(na(format!(
                "the conv_fwd pack (dispatch v2) serves f32 and f16, not {dtype:?}"
            )));
        }
        let (xd, xs) = dims_strides(&xt);
        let (wd, ws) = dims_strides(&wt);
        if xd.len() != 4 || wd.len() != 4 {
            return Err(na(format!(
                "the conv_fwd pack (dispatch v2) serves 2-D convolutions (4-D x and w); x {xd:?}, w {wd:?}"
            )));
        }
        if xd[1] != wd[1] {
            return Err(na(format!(
                "the conv_fwd pack (dispatch v2) serves groups = 1 only; x has {} channels, w {} per group",
                xd[1], wd[1]
            )));
        }
        if !is_packed(&xd, &xs) || !is_packed(&wd, &ws) {
            return Err(na(format!(
                "the conv_fwd pack (dispatch v2) serves packed NCHW x and KCRS w; x strides {xs:?}, w strides {ws:?} (e.g. NHWC is not served)"
            )));
        }
        // Epilogue chain.
        let mut epilogue = 0;
        let mut bias_uid = None;
        let mut cur = a.y_tensor_uid();
        let mut cur_t = ct;
        for node in &nodes[1..] {
            let pw = node
                .attributes_as_pointwise_attributes()
                .ok_or_else(|| na("the conv_fwd pack fuses pointwise epilogue nodes only"))?;
            if !cur_t.virtual_() {
                return Err(na(format!(
                    "the conv_fwd pack fuses an epilogue only over virtual intermediates; tensor {cur} is not virtual"
                )));
            }
            let (i0, i1) = (pw.in_0_tensor_uid(), pw.in_1_tensor_uid());
            match pw.operation() {
                PointwiseMode::ADD if epilogue == 0 => {
                    let other = match i1 {
                        Some(b) if i0 == cur => b,
                        Some(b) if b == cur => i0,
                        _ => return Err(na("the conv_fwd pack fuses ADD(conv output, bias) only")),
                    };
                    let bt = tensor(graph, other)?;
                    let (bd, bs) = dims_strides(&bt);
                    if bd.len() != 4
                        || bd[0] != 1
                        || bd[1] != wd[0]
                        || bd[2] != 1
                        || bd[3] != 1
                        || (bd[1] > 1 && bs[1] != 1)
                        || bt.data_type() != dtype
                    {
                        return Err(na(format!(
                            "the conv_fwd pack fuses a bias of dims [1, K, 1, 1] with unit K stride and the conv's data type; tensor {other} has dims {bd:?}, strides {bs:?}"
                        )));
                    }
                    epilogue |= EPILOGUE_BIAS;
                    bias_uid = Some(other);
                }
                PointwiseMode::RELU_FWD if epilogue & EPILOGUE_RELU == 0 && i0 == cur => {
                    if pw.relu_lower_clip().is_some_and(|v| v != 0.0)
                        || pw.relu_upper_clip().is_some()
                        || pw.relu_lower_clip_slope().is_some_and(|v| v != 0.0)
                    {
                        return Err(na(
                            "the conv_fwd pack fuses RELU_FWD without clip or slope attributes",
                        ));
                    }
                    epilogue |= EPILOGUE_RELU;
                }
                m => {
                    return Err(na(format!(
                        "the conv_fwd pack fuses conv → ADD(bias) → RELU_FWD only; cannot fuse {m:?} here"
                    )));
                }
            }
            cur = pw.out_0_tensor_uid();
            cur_t = tensor(graph, cur)?;
        }
        let yt = cur_t;
        let (yd, ys) = dims_strides(&yt);
        if yd.len() != 4
            || !is_packed(&yd, &ys)
            || yt.data_type() != dtype
            || wt.data_type() != dtype
        {
            return Err(na(format!(
                "the conv_fwd pack (dispatch v2) writes a packed NKPQ y of the inputs' data type; y dims {yd:?}, strides {ys:?}"
            )));
        }
        let pre = pair(a.pre_padding(), 0);
        let post = pair(a.post_padding(), 0);
        let stride = pair(a.stride(), 1);
        let dil = pair(a.dilation(), 1);
        if [&pre, &post, &stride, &dil].iter().any(|v| v.len() != 2) {
            return Err(na(
                "the conv_fwd pack (dispatch v2) needs 2 spatial padding/stride/dilation values",
            ));
        }
        for (i, (hw, f)) in [(xd[2], wd[2]), (xd[3], wd[3])].into_iter().enumerate() {
            // The op table's extent rule; a bad stride, a bad dilation or an output that is not
            // positive leaves no extent to agree with.
            let window = Window {
                pre: pre[i],
                post: post[i],
                stride: stride[i],
                dilation: dil[i],
            };
            let want = (dil[i] >= SpatialAttr::Dilation.min())
                .then(|| output_extent(hw, f, window).ok())
                .flatten();
            if want != Some(yd[2 + i])
                || yd[0] != xd[0]
                || yd[1] != wd[0]
                || pre[i] < SpatialAttr::PrePadding.min()
            {
                return Err(na(format!(
                    "the conv_fwd pack (dispatch v2): output dims {yd:?} disagree with x {xd:?}, w {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
                )));
            }
        }
        let pad = |v: i64| {
            i32::try_from(v).map_err(|_| {
                na(format!(
                    "the conv_fwd pack (dispatch v2): padding {v} out of range"
                ))
            })
        };
        let inputs = ConvFwdV2Inputs {
            x_uid: a.x_tensor_uid(),
            w_uid: a.w_tensor_uid(),
            y_uid: cur,
            bias_uid,
            shape: [
                ext(xd[0], "n")?,
                ext(xd[1], "c")?,
                ext(xd[2], "h")?,
                ext(xd[3], "width")?,
                ext(wd[0], "k")?,
                ext(wd[2], "r")?,
                ext(wd[3], "s")?,
                ext(yd[2], "p")?,
                ext(yd[3], "q")?,
                pad(pre[0])?,
                pad(pre[1])?,
                ext(stride[0], "stride")?,
                ext(stride[1], "stride")?,
                ext(dil[0], "dilation")?,
                ext(dil[1], "dilation")?,
            ],
            epilogue,
            dtype: dtype.0,
            block_size: CONV_FWD_V2_BLOCK_SIZE,
        };
        inputs
            .geometry_for(CONV_FWD_V2)
            .map_err(|e| na(e.message))?;
        Ok(inputs)
    }

    fn needed_symbol(&self) -> Option<String> {
        Some(self.symbol().to_string())
    }

    /// Reads values saved under `dispatch`, then checks the geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) with the §11 reader texts; `launch value 'bias.uid' of
    /// dispatch '<d>' must be present exactly when 'epilogue' bit 1 is set`; the geometry texts.
    fn read(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let bias = |name: &str, read: &[i64]| {
            let epilogue = read.get(15).copied().unwrap_or(0);
            if name != "bias.uid" || epilogue & i64::from(EPILOGUE_BIAS) != 0 {
                return Ok(true);
            }
            if values.contains_key("bias.uid") {
                return Err(incompatible(format!(
                    "launch value 'bias.uid' of dispatch '{}' must be present exactly when 'epilogue' bit 1 is set; epilogue is {epilogue}",
                    quote(dispatch)
                )));
            }
            Ok(false)
        };
        let v = read_ints(dispatch, CONV_FWD_V2, &CONV_FWD_V2_VALUES, values, bias)?;
        let epilogue = v[15] as i32;
        let inputs = ConvFwdV2Inputs {
            x_uid: v[17],
            w_uid: v[18],
            y_uid: v[19],
            bias_uid: (epilogue & EPILOGUE_BIAS != 0).then_some(v[16]),
            shape: std::array::from_fn(|i| v[i] as i32),
            epilogue,
            dtype: v[20] as i8,
            block_size: v[21] as u32,
        };
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    fn launch(&self) -> PluginResult<PreparedLaunch> {
        self.to_launch()
    }

    /// The pointers with a null bias in third place when the launch has none.
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut args = default_kernel_args(launch, tensors)?;
        if launch.pointer_uids.len() == 3 {
            args.insert(2, KernelArgValue::Pointer(0));
        }
        Ok(args)
    }
}
