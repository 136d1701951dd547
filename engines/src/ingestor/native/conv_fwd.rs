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

use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::{dims, single_node, tensor};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::ConvMode;

/// The versioned contract name.
pub const CONV_FWD_V1: &str = "hipkernel.conv_fwd.dispatch.v1";
/// Block size this pack builds with, in threads.
pub const CONV_FWD_BLOCK_SIZE: u32 = 64;
/// Value names of the v1 contract.
pub const CONV_FWD_V1_NAMES: [&str; 11] = [
    "block_size",
    "c",
    "h",
    "k",
    "n",
    "r",
    "s",
    "w.uid",
    "width",
    "x.uid",
    "y.uid",
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
        let mut v = LaunchValues::new();
        for (name, x) in [
            ("x.uid", self.x_uid),
            ("w.uid", self.w_uid),
            ("y.uid", self.y_uid),
        ] {
            v.insert(name.into(), LaunchValue::Int(x));
        }
        for (name, x) in [
            ("n", self.n),
            ("c", self.c),
            ("h", self.h),
            ("width", self.width),
            ("k", self.k),
            ("r", self.r),
            ("s", self.s),
        ] {
            v.insert(name.into(), LaunchValue::Int(i64::from(x)));
        }
        v.insert(
            "block_size".into(),
            LaunchValue::Int(i64::from(self.block_size)),
        );
        v
    }

    /// Reads values saved under `dispatch`, then checks the geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` with the §11 texts, including `launch values 'r' and 's' of dispatch
    /// '<d>' must not exceed 'h' and 'width'; ...` and `... give a grid larger than 4294967295
    /// blocks`.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let r = ContractReader::new(dispatch, CONV_FWD_V1, &CONV_FWD_V1_NAMES, values)?;
        let ext = |name: &str| r.int(name, 1, i64::from(i32::MAX)).map(|v| v as i32);
        let inputs = ConvFwdLaunchInputs {
            x_uid: r.int("x.uid", i64::MIN, i64::MAX)?,
            w_uid: r.int("w.uid", i64::MIN, i64::MAX)?,
            y_uid: r.int("y.uid", i64::MIN, i64::MAX)?,
            n: ext("n")?,
            c: ext("c")?,
            h: ext("h")?,
            width: ext("width")?,
            k: ext("k")?,
            r: ext("r")?,
            s: ext("s")?,
            block_size: r.int("block_size", 1, i64::from(u32::MAX))? as u32,
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
        let total = i64::from(self.n)
            .checked_mul(i64::from(self.k))
            .and_then(|x| x.checked_mul(p))
            .and_then(|x| x.checked_mul(q))
            .ok_or_else(too_big)?;
        let block = i64::from(self.block_size);
        if total > i64::MAX - block {
            return Err(too_big());
        }
        let blocks = (total + block - 1) / block;
        let blocks = u32::try_from(blocks).map_err(|_| too_big())?;
        Ok(LaunchGeometry {
            grid: [blocks, 1, 1],
            block: [self.block_size, 1, 1],
            shared_mem_bytes: 0,
        })
    }

    /// The prepared launch of these inputs.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        Ok(PreparedLaunch {
            dispatch: CONV_FWD_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(CONV_FWD_V1)?,
            workspace_bytes: 0,
            pointer_uids: vec![self.x_uid, self.w_uid, self.y_uid],
            scalar_args: [self.n, self.c, self.h, self.width, self.k, self.r, self.s]
                .into_iter()
                .map(KernelArgValue::I32)
                .collect(),
        })
    }
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConvFwdV1Handler;

fn extent(v: i64, what: &str) -> PluginResult<i32> {
    i32::try_from(v).ok().filter(|x| *x >= 1).ok_or_else(|| {
        PluginError::not_applicable(format!(
            "the conv_fwd pack needs {what} in [1, 2147483647], not {v}"
        ))
    })
}

impl DispatchHandler for ConvFwdV1Handler {
    fn contract(&self) -> &str {
        CONV_FWD_V1
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        let mut sig = vec![
            KernelArgument::new("global_buffer", 8, 0),
            KernelArgument::new("global_buffer", 8, 8),
            KernelArgument::new("global_buffer", 8, 16),
        ];
        for i in 0..7u32 {
            sig.push(KernelArgument::new("by_value", 4, 24 + 4 * i));
        }
        sig
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
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
        let inputs = ConvFwdLaunchInputs {
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
        };
        inputs
            .to_launch()
            .map_err(|e| PluginError::not_applicable(e.message))
    }

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        ConvFwdLaunchInputs::from_values(dispatch, values)?.to_launch()
    }
}
