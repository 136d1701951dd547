//! Conv wgrad family, contract `hipkernel.conv_wgrad.dispatch.v1`: 2-D convolution backward
//! filter as an implicit GEMM on the Triton kernels of `engines/kernels/triton/conv_wgrad.py`,
//! ONE launch, with a deterministic split of the reduction over the workspace.
//!
//! Graphs served: one `conv_wgrad` node (dy `[N, K, P, Q]`, x `[N, C, H, W]`, dw
//! `[K, C/groups, R, S]`, any strides, cross-correlation, padding, stride, dilation, groups;
//! f16, bf16 (f32 accumulate, dw stored in the tensors' type) or f32 (IEEE), one data type).
//!
//! GEMM per group: rows = the group's output channels (K/groups), columns = (r, s, c) with c
//! fastest over C/groups (contiguous x loads and dw stores in channels-last), reduction =
//! (n, p, q), N·P·Q long.
//!
//! Entries: `conv_wgrad_<dtype>_<variant>_…` as for conv_fprop; `spec` = channels-last (dy's
//! K stride, x's C stride, dw's C stride 1, groups 1, C, K and the other strides multiples of
//! 16, dy, x and dw 16-byte aligned), `generic` = anything else.
//!
//! **Static rule** (no benchmarking): entries in pack order (spec before generic, larger tiles
//! first); a spec entry serves a graph that satisfies its hints, except that a spec tile
//! larger than 64×64 is refused when it gives fewer than [`MIN_TILES`](crate::ingestor::framework::triton::MIN_TILES) tiles (several
//! programs per tile then share the reduction anyway, and the last one's sum of the partial
//! tiles grows with the tile), and a spec entry whose reduction step (`block_k`) is deeper
//! than 64 serves only C/groups ≤ 64 (measured: it wins there and loses above). Then the split: with `t` tiles (all groups),
//! `split = 1` when `t ≥` [`TARGET_PROGRAMS`], else
//! `min(cdiv(TARGET_PROGRAMS, t), max(1, N·P·Q / `[`MIN_SPLIT_LEN`]`), `[`MAX_SPLIT`]`)`
//! (about two programs per SM of a 132-SM H200, each summing at least 512 (n, p, q) terms).
//! The split is a launch value: a saved plan keeps it.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `dy.uid`, `x.uid`, `dw.uid` | int | any |
//! | `dtype` | int | `DataType` FLOAT 1, HALF 2, BFLOAT16 3 |
//! | `n c h width k p q r s stride_h stride_w dil_h dil_w groups` | int | [1, 2147483647]; `groups` divides `c` and `k` |
//! | `pad_h`, `pad_w` | int | [0, 2147483647] |
//! | `split` | int | [1, 65535] |
//! | `sdyn sdyk sdyp sdyq sxn sxc sxh sxw swk swc swr sws` | int | [0, 2147483647] (elements) |
//! | `spec` | int | 0 generic, 1 spec (then `groups`, `sdyk`, `sxc`, `swc` must be 1) |
//! | `block_m`, `block_n`, `block_k`, `group_m`, `num_warps`, `warp_size`, `shared_bytes` | int | as conv_fprop |
//!
//! Launch: grid (cdiv(k/groups, block_m)·r·s·cdiv(c/groups, block_n), split, groups), block
//! num_warps·warp_size, dynamic shared memory `shared_bytes`. Workspace: 0 when split is 1;
//! else a counter region of cdiv(t, 64)·64 int32 (t = tiles of all groups; 256-byte
//! multiple) followed by t·split f32 partial tiles of block_m·block_n, i.e.
//! `4·(cdiv(t, 64)·64 + t·split·block_m·block_n)` bytes. The counter region is zeroed on the
//! launch stream before every launch ([`DispatchHandler::zeroed_workspace_bytes`]); the
//! program that brings a tile's counter to split sums the partials in split order 0, 1, …
//! (fixed order: repeated executes give identical bits; no float atomics) and resets the
//! counter. Kernel arguments: dy, x, dw, the workspace (null when split is 1), the integers
//! in the order of `conv_wgrad.py` (spec drops `groups`, `sdyk`, `sxc`, `swc`), the two null
//! scratch pointers.
//!
//! The graph matcher, hints and restore rules are the conv problem shared with conv_dgrad
//! ([`crate::ingestor::framework::conv`]).
//!
//! [`DispatchHandler::zeroed_workspace_bytes`]: crate::ingestor::DispatchHandler::zeroed_workspace_bytes

use crate::ingestor::framework::conv;
use crate::ingestor::framework::conv::ConvFamily;
use crate::ingestor::framework::conv::ConvInputs;
use crate::ingestor::framework::conv::Direction;
use crate::ingestor::framework::conv::GROUPS;
use crate::ingestor::framework::launch::static_rule;
use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const CONV_WGRAD_V1: &str = "hipkernel.conv_wgrad.dispatch.v1";
/// The dispatch handler of contract v1.
pub type ConvWgradV1Handler = TritonHandler<ConvWgradV1Inputs>;
/// The launch inputs of contract v1: the conv problem's 16 shape values (`n c h width k p q r
/// s pad_h pad_w stride_h stride_w dil_h dil_w groups`) and `split`, the strides `sdyn … sws`.
pub type ConvWgradV1Inputs = ConvInputs<17>;
/// Programs the static rule's split aims for (two per SM of a 132-SM H200).
pub const TARGET_PROGRAMS: i64 = 264;
/// Fewest reduction terms (n, p, q) per split the static rule gives.
pub const MIN_SPLIT_LEN: i64 = 512;
/// Most splits the static rule gives (bounds the last program's sum of partial tiles).
pub const MAX_SPLIT: i64 = 32;
/// Index of `split` in the shape values (after [`conv::SHAPE`]).
const SPLIT: usize = 16;

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<crate::ingestor::kernel::KernelArgument> {
    <ConvWgradV1Inputs as TritonFamily>::signature(spec)
}

impl ConvInputs<17> {
    /// Tiles per group: cdiv(k/groups, block_m)·r·s·cdiv(c/groups, block_n) (a column tile is
    /// one tap's block of channels).
    pub fn tiles(&self) -> i64 {
        let g = self.shape[GROUPS];
        let rows = self.shape[4] / g;
        let cg = self.shape[1] / g;
        let c = &self.config;
        ((rows + c.block[0] - 1) / c.block[0])
            * self.shape[7]
            * self.shape[8]
            * ((cg + c.block[1] - 1) / c.block[1])
    }

    /// Reduction length N·P·Q.
    pub fn reduction(&self) -> i64 {
        self.shape[0] * self.shape[5] * self.shape[6]
    }

    /// The static rule's split for these inputs (module docs).
    pub fn static_split(&self) -> i64 {
        let t = self.tiles() * self.shape[GROUPS];
        if t >= TARGET_PROGRAMS {
            return 1;
        }
        ((TARGET_PROGRAMS + t - 1) / t)
            .min((self.reduction() / MIN_SPLIT_LEN).max(1))
            .min(MAX_SPLIT)
    }

    /// Bytes of the zeroed counter region (0 when split is 1).
    pub fn counter_bytes(&self) -> u64 {
        if self.shape[SPLIT] == 1 {
            return 0;
        }
        let t = (self.tiles() * self.shape[GROUPS]) as u64;
        t.div_ceil(64) * 64 * 4
    }

    /// Workspace bytes: the counter region plus the f32 partial tiles (0 when split is 1).
    pub fn workspace_bytes(&self) -> u64 {
        if self.shape[SPLIT] == 1 {
            return 0;
        }
        let t = (self.tiles() * self.shape[GROUPS]) as u64;
        let c = &self.config;
        self.counter_bytes() + t * self.shape[SPLIT] as u64 * (c.block[0] * c.block[1]) as u64 * 4
    }
}

impl ConvFamily for ConvInputs<17> {
    const DIRECTION: Direction = Direction::BackwardFilter;
    const CONTRACT: &'static str = CONV_WGRAD_V1;
    const VALUES: &'static [IntValue] = &conv::values::<41>(Direction::BackwardFilter);

    /// The static rule (module docs), then the split.
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let c = &self.config;
        conv::min_tiles_rule(kernel, c, self.tiles() * self.shape[GROUPS])?;
        let cg = self.shape[1] / self.shape[GROUPS];
        if c.spec && c.block[2] > 64 && cg > 64 {
            return Err(static_rule(
                kernel,
                format_args!(
                    "a {}-deep reduction step is for C/groups ≤ 64 (here {cg}); a 64-deep entry serves this graph",
                    c.block[2]
                ),
            ));
        }
        self.shape[SPLIT] = self.static_split();
        Ok(())
    }

    fn workspace(&self) -> u64 {
        self.workspace_bytes()
    }

    /// (tiles, split, groups).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values of dispatch '<d>' give more than 2147483647 tiles,
    /// reduction terms or workspace floats, or more than 65535 groups`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]> {
        let d = quote(dispatch);
        let c = &self.config;
        let max = i64::from(i32::MAX);
        let [n, k, p, q, r, s, groups, split] =
            [0, 4, 5, 6, 7, 8, GROUPS, SPLIT].map(|i| self.shape[i]);
        let cols = r
            .checked_mul(s)
            .and_then(|x| x.checked_mul(self.shape[1] / groups));
        let red = n.checked_mul(p).and_then(|x| x.checked_mul(q));
        let fits = cols.is_some_and(|x| x <= max)
            && red.is_some_and(|x| x <= max)
            && k <= max
            && groups <= 65_535;
        let tiles = fits.then(|| self.tiles()).filter(|t| {
            let floats = (t * groups)
                .checked_mul(split)
                .and_then(|x| x.checked_mul(c.block[0] * c.block[1]))
                .and_then(|x| x.checked_add((t * groups + 63) / 64 * 64));
            t * groups <= max && floats.is_some_and(|f| f <= max)
        });
        let tiles = tiles.ok_or_else(|| {
            incompatible(format!(
                "launch values of dispatch '{d}' give more than 2147483647 tiles, reduction terms or workspace floats, or more than 65535 groups"
            ))
        })?;
        Ok([tiles as u32, split as u32, groups as u32])
    }

    /// The counter region (module docs), from the geometry: with `t` = grid x · grid z tiles
    /// and split = grid y, `4·cdiv(t, 64)·64` bytes when split > 1, else 0.
    fn zeroed(launch: &PreparedLaunch) -> u64 {
        let [tiles, split, groups] = launch.geometry.grid.map(u64::from);
        if split <= 1 {
            return 0;
        }
        (tiles * groups).div_ceil(64) * 64 * 4
    }
}
