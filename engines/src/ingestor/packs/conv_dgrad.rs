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

use crate::ingestor::framework::conv;
use crate::ingestor::framework::conv::ConvFamily;
use crate::ingestor::framework::conv::ConvInputs;
use crate::ingestor::framework::conv::Direction;
use crate::ingestor::framework::conv::GROUPS;
use crate::ingestor::framework::launch::static_rule;
use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const CONV_DGRAD_V1: &str = "hipkernel.conv_dgrad.dispatch.v1";
/// The dispatch handler of contract v1.
pub type ConvDgradV1Handler = TritonHandler<ConvDgradV1Inputs>;
/// The launch inputs of contract v1: the conv problem's 16 shape values (`n c h width k p q r
/// s pad_h pad_w stride_h stride_w dil_h dil_w groups`), the strides `sdyn … sxw`.
pub type ConvDgradV1Inputs = ConvInputs<16>;

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<crate::ingestor::kernel::KernelArgument> {
    <ConvDgradV1Inputs as TritonFamily>::signature(spec)
}

impl ConvInputs<16> {
    /// Tiles per group: cdiv(n·h·width, block_m)·cdiv(c/groups, block_n).
    pub fn tiles(&self) -> i64 {
        let cg = self.shape[1] / self.shape[GROUPS];
        let c = &self.config;
        let rows = self.shape[0] * self.shape[2] * self.shape[3];
        ((rows + c.block[0] - 1) / c.block[0]) * ((cg + c.block[1] - 1) / c.block[1])
    }
}

impl ConvFamily for ConvInputs<16> {
    const DIRECTION: Direction = Direction::BackwardData;
    const CONTRACT: &'static str = CONV_DGRAD_V1;
    const VALUES: &'static [IntValue] = &conv::values::<40>(Direction::BackwardData);

    /// conv_fprop's static rule with the roles of C and K exchanged (a spec tile wider than 64
    /// channels and than C/groups, or larger than 64×64 with fewer than `MIN_TILES` tiles, is
    /// refused).
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let tiles = self.tiles() * self.shape[GROUPS];
        let c = &self.config;
        let cg = self.shape[1] / self.shape[GROUPS];
        if c.spec && c.block[1] > 64 && c.block[1] > cg {
            return Err(static_rule(
                kernel,
                format_args!(
                    "a {}-channel tile leaves columns idle for C/groups = {cg}; a narrower tile serves this graph",
                    c.block[1]
                ),
            ));
        }
        conv::min_tiles_rule(kernel, c, tiles)
    }

    /// (tiles, groups, 1). Errors: `launch values of dispatch '<d>' give more than 2147483647
    /// tiles or 65535 groups`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]> {
        let [n, h, w] = [self.shape[0], self.shape[2], self.shape[3]];
        conv::group_grid(dispatch, [n, h, w], self.shape[GROUPS], || self.tiles())
    }
}
