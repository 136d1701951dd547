//! ConvFwd pack, contract `hipkernel.conv_fwd.dispatch.v1`.
//!
//! Upstream: `KIE/packs/ConvFwdLaunchValues.hpp`, `ConvNative.cpp`, `ConvFwdGeometry.hpp`
//! (reference `ingestor-payload.md` §11).
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `x.uid`, `w.uid`, `y.uid` | int | any int64 |
//! | `n`, `c`, `h`, `width`, `k`, `r`, `s` | int | [1, 2147483647] |
//! | `block_size` | int | [1, 4294967295] |
//!
//! Extra checks: `r ≤ h`, `s ≤ width`; `p = h − r + 1`, `q = width − s + 1`,
//! `total = n·k·p·q` (checked), `total ≤ i64::MAX − block_size` and
//! `ceil(total / block_size) ≤ 4294967295`. Launch: block (block_size,1,1),
//! grid (ceil(total/block_size),1,1), no dynamic shared memory. Kernel arguments (10): x, w, y
//! `global_buffer` 8 bytes, then n, c, h, width, k, r, s `by_value` 4 bytes (int). Matcher scope:
//! stride 1, dilation 1, padding 0, cross-correlation, NCHW/KCRS/NKPQ, workspace 0. Padding,
//! stride, dilation or an epilogue need a new contract version (`.v2`).

use super::contract::{
    NativeContract, checked_product, grid_1d, int_values, native_handler, native_launch, read_ints,
};
use crate::ingestor::device::LaunchGeometry;
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::framework::family::{I32_MAX, IntValue, int, uid};
use crate::ingestor::framework::graph::{dims, single_node, tensor};
use crate::ingestor::launch_values::LaunchValues;
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::ConvMode;

/// The versioned contract name.
pub const CONV_FWD_V1: &str = "hipkernel.conv_fwd.dispatch.v1";
/// Block size this pack builds with, in threads.
pub const CONV_FWD_BLOCK_SIZE: u32 = 64;
/// The launch values of the v1 contract with their ranges, in the order a restore reads them.
#[rustfmt::skip]
pub const CONV_FWD_V1_VALUES: [IntValue; 11] = [
    uid("x.uid"), uid("w.uid"), uid("y.uid"),
    int("n", 1, I32_MAX), int("c", 1, I32_MAX), int("h", 1, I32_MAX), int("width", 1, I32_MAX),
    int("k", 1, I32_MAX), int("r", 1, I32_MAX), int("s", 1, I32_MAX),
    int("block_size", 1, u32::MAX as i64),
];

/// The launch inputs of contract v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvFwdLaunchInputs {
    /// UID of x (NCHW).
    pub x_uid: i64,
    /// UID of w (KCRS).
    pub w_uid: i64,
    /// UID of y (NKPQ).
    pub y_uid: i64,
    /// Batch.
    pub n: i32,
    /// Input channels.
    pub c: i32,
    /// Input height.
    pub h: i32,
    /// Input width.
    pub width: i32,
    /// Output channels.
    pub k: i32,
    /// Filter height.
    pub r: i32,
    /// Filter width.
    pub s: i32,
    /// Threads per block, [1, 4294967295].
    pub block_size: u32,
}

impl ConvFwdLaunchInputs {
    /// The launch values (all INT).
    pub fn to_values(&self) -> LaunchValues {
        let extents = [self.n, self.c, self.h, self.width, self.k, self.r, self.s];
        let mut ints = vec![self.x_uid, self.w_uid, self.y_uid];
        ints.extend(extents.map(i64::from));
        ints.push(i64::from(self.block_size));
        int_values(&CONV_FWD_V1_VALUES, &ints, |_| true)
    }

    /// Reads values saved under `dispatch`, then checks the geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` with the §11 texts, including `launch values 'r' and 's' of dispatch
    /// '<d>' must not exceed 'h' and 'width'; ...` and `... give a grid larger than 4294967295
    /// blocks`.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let v = read_ints(
            dispatch,
            CONV_FWD_V1,
            &CONV_FWD_V1_VALUES,
            values,
            |_, _| Ok(true),
        )?;
        let extent = |i: usize| v[i] as i32;
        let inputs = ConvFwdLaunchInputs {
            x_uid: v[0],
            w_uid: v[1],
            y_uid: v[2],
            n: extent(3),
            c: extent(4),
            h: extent(5),
            width: extent(6),
            k: extent(7),
            r: extent(8),
            s: extent(9),
            block_size: v[10] as u32,
        };
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid and block (shared by build and restore).
    ///
    /// # Errors
    /// As [`Self::from_values`]'s geometry checks, naming `dispatch`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        if self.r > self.h || self.s > self.width {
            return Err(incompatible(format!(
                "launch values 'r' and 's' of dispatch '{d}' must not exceed 'h' and 'width'; the plan holds r {}, h {}, s {} and width {}",
                self.r, self.h, self.s, self.width
            )));
        }
        let too_big = || {
            incompatible(format!(
                "launch values 'n', 'k', 'h', 'width', 'r', 's' and 'block_size' of dispatch '{d}' give a grid larger than 4294967295 blocks"
            ))
        };
        let p = i64::from(self.h - self.r + 1);
        let q = i64::from(self.width - self.s + 1);
        let total = checked_product(&[i64::from(self.n), i64::from(self.k), p, q]);
        grid_1d(total.ok_or_else(too_big)?, self.block_size, too_big)
    }

    /// The prepared launch of these inputs.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        Ok(native_launch(
            CONV_FWD_V1,
            self.to_values(),
            self.geometry_for(CONV_FWD_V1)?,
            vec![self.x_uid, self.w_uid, self.y_uid],
            vec![self.n, self.c, self.h, self.width, self.k, self.r, self.s],
        ))
    }
}

native_handler!(ConvFwdV1Handler, ConvFwdLaunchInputs, "v1");

fn extent(v: i64, what: &str) -> PluginResult<i32> {
    i32::try_from(v).ok().filter(|x| *x >= 1).ok_or_else(|| {
        PluginError::not_applicable(format!(
            "the conv_fwd pack needs {what} in [1, 2147483647], not {v}"
        ))
    })
}

impl NativeContract for ConvFwdLaunchInputs {
    const CONTRACT: &'static str = CONV_FWD_V1;
    /// x, w, y, then n, c, h, width, k, r, s.
    const ARGUMENTS: (u32, u32) = (3, 7);

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let node = single_node(graph, "conv_fwd")?;
        let a = node
            .attributes_as_convolution_fwd_attributes()
            .ok_or_else(|| {
                PluginError::not_applicable(
                    "the conv_fwd pack serves convolution forward nodes only",
                )
            })?;
        let all = |v: Option<hipdnn_schema::flatbuffers::Vector<'_, i64>>, want: i64| {
            v.map(|v| v.iter().all(|x| x == want)).unwrap_or(true)
        };
        if a.conv_mode() != ConvMode::CROSS_CORRELATION
            || !all(a.pre_padding(), 0)
            || !all(a.post_padding(), 0)
            || !all(a.stride(), 1)
            || !all(a.dilation(), 1)
        {
            return Err(PluginError::not_applicable(
                "the conv_fwd pack (dispatch v1) serves cross-correlation with stride 1, dilation 1 and padding 0 only",
            ));
        }
        let x = dims(&tensor(graph, a.x_tensor_uid())?);
        let w = dims(&tensor(graph, a.w_tensor_uid())?);
        if x.len() != 4 || w.len() != 4 || x[1] != w[1] {
            return Err(PluginError::not_applicable(format!(
                "the conv_fwd pack (dispatch v1) serves 2-D NCHW x KCRS with equal channels; x {x:?}, w {w:?}"
            )));
        }
        Ok(ConvFwdLaunchInputs {
            x_uid: a.x_tensor_uid(),
            w_uid: a.w_tensor_uid(),
            y_uid: a.y_tensor_uid(),
            n: extent(x[0], "n")?,
            c: extent(x[1], "c")?,
            h: extent(x[2], "h")?,
            width: extent(x[3], "width")?,
            k: extent(w[0], "k")?,
            r: extent(w[2], "r")?,
            s: extent(w[3], "s")?,
            block_size: CONV_FWD_BLOCK_SIZE,
        })
    }

    fn read(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        Self::from_values(dispatch, values)
    }

    fn launch(&self) -> PluginResult<PreparedLaunch> {
        self.to_launch()
    }
}
