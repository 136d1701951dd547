//! Conv dgrad family, contract `hipkernel.conv_dgrad.dispatch.v1`: 2-D convolution backward
//! data as an implicit GEMM on the Triton kernels of `engines/kernels/triton/conv_dgrad.py`, ONE
//! launch, no epilogue.
//!
//! Graphs served: one `conv_dgrad` node (dy `[N, K, P, Q]`, w `[K, C/groups, R, S]`, dx
//! `[N, C, H, W]`, any strides, cross-correlation, padding, stride, dilation, groups; f16, bf16
//! (f32 accumulate) or f32 (IEEE), one data type).
//!
//! Entries: `conv_dgrad_<dtype>_<variant>_…` as for conv_fprop; `spec` = channels-last (dy's K
//! stride, w's C stride, dx's C stride 1, groups 1, C, K and the other strides multiples of
//! 16, 16-byte aligned pointers), `generic` = anything else. Static rule as conv_fprop with the
//! roles of C and K exchanged (tile columns are dx channels).
//!
//! Launch values (all int): `dy.uid`, `w.uid`, `dx.uid`, `dtype`, `n c h width k p q r s`,
//! `pad_h pad_w`, `stride_h stride_w dil_h dil_w groups`, the 12 element strides `sdyn sdyk sdyp
//! sdyq swk swc swr sws sxn sxc sxh sxw`, and the config values of conv_fprop. Launch: grid
//! (cdiv(n·h·width, block_m)·cdiv(c/groups, block_n), groups, 1), block num_warps·warp_size,
//! dynamic shared memory `shared_bytes`, workspace 0, scratch pointers null. Kernel arguments:
//! dy, w, dx, the integers in the order of `conv_dgrad.py` (spec drops `groups`, `sdyk`,
//! `swc`, `sxc`), the two scratch pointers.
//!
//! The graph matcher, hints and restore rules are the conv problem shared with conv_wgrad
//! ([`crate::ingestor::framework::conv`]).

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::framework::conv::{self, Direction, GROUPS};
use crate::ingestor::framework::family::{IntValue, TritonFamily, TritonHandler, concat, int, uid};
use crate::ingestor::framework::graph::na;
use crate::ingestor::framework::triton::{TritonConfig, triton_kernel_args};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;

/// The versioned contract name.
pub const CONV_DGRAD_V1: &str = "hipkernel.conv_dgrad.dispatch.v1";
/// The dispatch handler of contract v1.
pub type ConvDgradV1Handler = TritonHandler<ConvDgradV1Inputs>;
/// Stride value names, in kernel order.
const STRIDES: [&str; 12] = [
    "sdyn", "sdyk", "sdyp", "sdyq", "swk", "swc", "swr", "sws", "sxn", "sxc", "sxh", "sxw",
];
#[rustfmt::skip]
const VALUES: [IntValue; 40] = concat(&[&conv::SHAPE, &[
    int("sdyn", 0, I), int("sdyk", 0, I), int("sdyp", 0, I), int("sdyq", 0, I),
    int("swk", 0, I), int("swc", 0, I), int("swr", 0, I), int("sws", 0, I),
    int("sxn", 0, I), int("sxc", 0, I), int("sxh", 0, I), int("sxw", 0, I), int("dtype", 1, 3),
], &conv::CONFIG, &[uid("dy.uid"), uid("w.uid"), uid("dx.uid")]]);
const I: i64 = crate::ingestor::framework::family::I32_MAX;

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<crate::ingestor::kernel::KernelArgument> {
    <ConvDgradV1Inputs as TritonFamily>::signature(spec)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvDgradV1Inputs {
    /// UIDs of dy, w and dx.
    pub uids: [i64; 3],
    /// `DataType` value.
    pub dtype: i8,
    /// n, c, h, width, k, p, q, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups.
    pub shape: [i64; 16],
    /// sdyn … sxw (elements).
    pub strides: [i64; 12],
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl ConvDgradV1Inputs {
    /// Tiles per group: cdiv(n·h·width, block_m)·cdiv(c/groups, block_n).
    pub fn tiles(&self) -> i64 {
        let cg = self.shape[1] / self.shape[GROUPS];
        let c = &self.config;
        let rows = self.shape[0] * self.shape[2] * self.shape[3];
        ((rows + c.block[0] - 1) / c.block[0]) * ((cg + c.block[1] - 1) / c.block[1])
    }
}

impl TritonFamily for ConvDgradV1Inputs {
    const FAMILY: &'static str = "conv_dgrad";
    const CONTRACT: &'static str = CONV_DGRAD_V1;
    const VALUES: &'static [IntValue] = &VALUES;
    const POINTERS: &'static [&'static str] = &["dy.uid", "w.uid", "dx.uid"];
    const ALIGNED: &'static [&'static str] = &["dy.uid", "w.uid", "dx.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned dy, w and dx";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let p = conv::match_conv(graph, Direction::BackwardData)?;
        Ok(ConvDgradV1Inputs {
            uids: p.uids,
            dtype: p.dtype,
            shape: p.shape,
            strides: p.strides,
            config: TritonConfig::restored(Self::FAMILY, 0, [64, 64, 32], 8, 4, 0, 32),
        })
    }

    fn dtype(&self) -> i8 {
        self.dtype
    }

    /// The spec hints, then the static rule: conv_fprop's with the roles of C and K exchanged
    /// (a spec tile wider than 64 channels and than C/groups, or larger than 64×64 with fewer
    /// than `MIN_TILES` tiles, is refused).
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        if config.spec && !conv::fits_spec(&self.shape, &self.strides) {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (channels-last dy, w, dx, groups 1, C, K and the other strides multiples of 16)",
                kernel.describe()
            )));
        }
        self.config = config;
        let tiles = self.tiles() * self.shape[GROUPS];
        let c = &self.config;
        let cg = self.shape[1] / self.shape[GROUPS];
        if c.spec && c.block[1] > 64 && c.block[1] > cg {
            return Err(na(format!(
                "kernel {}: static rule: a {}-channel tile leaves columns idle for C/groups = {cg}; a narrower tile serves this graph",
                kernel.describe(),
                c.block[1]
            )));
        }
        conv::min_tiles_rule(kernel, c, tiles)
    }

    fn ints(&self) -> Vec<i64> {
        let kinds = [i64::from(self.dtype)];
        let config = conv::config_ints(&self.config);
        [&self.shape[..], &self.strides, &kinds, &config, &self.uids].concat()
    }

    fn from_ints(v: &[i64]) -> Self {
        ConvDgradV1Inputs {
            shape: std::array::from_fn(|i| v[i]),
            strides: std::array::from_fn(|i| v[16 + i]),
            dtype: v[28] as i8,
            config: conv::config_of(Self::FAMILY, &v[29..37]),
            uids: [v[37], v[38], v[39]],
        }
    }

    fn check(&self, dispatch: &str) -> PluginResult<()> {
        conv::check_restored(
            dispatch,
            self.config.spec,
            &self.shape,
            &self.strides,
            &STRIDES,
        )?;
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        conv::param_names(spec, &["dy_ptr", "w_ptr", "dx_ptr"], &[], &STRIDES)
    }

    fn scalars(&self) -> Vec<i64> {
        conv::scalars(self.config.spec, &self.shape, &self.strides)
    }

    /// Grid (tiles, groups, 1). Errors: `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s
    /// text; `launch values of dispatch '<d>' give more than 2147483647 tiles or 65535 groups`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let [n, h, w] = [self.shape[0], self.shape[2], self.shape[3]];
        let tiles = n
            .checked_mul(h)
            .and_then(|x| x.checked_mul(w))
            .filter(|x| *x <= i64::from(i32::MAX))
            .map(|_| self.tiles())
            .filter(|t| *t <= i64::from(i32::MAX) && self.shape[GROUPS] <= 65_535)
            .ok_or_else(|| {
                incompatible(format!(
                    "launch values of dispatch '{}' give more than 2147483647 tiles or 65535 groups",
                    quote(dispatch)
                ))
            })?;
        Ok(LaunchGeometry {
            grid: [tiles as u32, self.shape[GROUPS] as u32, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// dy, w, dx, the integers, two null scratch pointers; a spec launch refuses (BAD_PARAM)
    /// addresses that are not 16-byte aligned.
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        _workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        triton_kernel_args(launch, tensors, "conv dgrad", "dy, w and dx", &[])
    }
}
