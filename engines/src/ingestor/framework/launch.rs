//! Small pieces every Triton family's `select`, `geometry` and launch values write the same way:
//! the spec-hint and static-rule refusals, the one-dimensional block of `num_warps · warp_size` threads, and the
//! six values of a two-dimensional tile config (`spec block_m block_n num_warps shared_bytes
//! warp_size`).

use super::graph::na;
use super::triton::{MIN_TILES, TritonConfig};
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::LaunchGeometry;
use hipdnn_backend::status::{PluginError, PluginResult};

/// Refuses a spec `config` when the graph's layout does not `fit` the spec hints (`hints`
/// says what they are).
///
/// # Errors
/// `NOT_APPLICABLE` `kernel <k> is the spec variant; the graph's layout does not satisfy its
/// hints (<hints>)`.
pub fn spec_hints(
    kernel: &KernelDescriptor,
    config: &TritonConfig,
    fits: bool,
    hints: &str,
) -> PluginResult<()> {
    if config.spec && !fits {
        return Err(na(format!(
            "kernel {} is the spec variant; the graph's layout does not satisfy its hints ({hints})",
            kernel.describe()
        )));
    }
    Ok(())
}

/// The geometry of `grid` programs of `threads` threads each (in x), with `c`'s dynamic shared
/// memory.
pub fn block_geometry(c: &TritonConfig, grid: [u32; 3], threads: i64) -> LaunchGeometry {
    LaunchGeometry {
        grid,
        block: [threads as u32, 1, 1],
        shared_mem_bytes: c.shared_bytes as u32,
    }
}

/// The launch values of a two-dimensional tile config, in contract order: `spec`, `block_m`,
/// `block_n`, `num_warps`, `shared_bytes`, `warp_size`.
pub fn tile_config_ints(c: &TritonConfig) -> [i64; 6] {
    [
        c.variant_code(),
        c.block[0],
        c.block[1],
        c.num_warps,
        c.shared_bytes,
        c.warp_size,
    ]
}

/// The config of `family` from the six values of [`tile_config_ints`] (block_k and group_m 1).
pub fn tile_config_of(family: &str, v: &[i64]) -> TritonConfig {
    TritonConfig::restored(family, v[0], [v[1], v[2], 1], 1, v[3], v[4], v[5])
}

/// The `NOT_APPLICABLE` refusal of `kernel` by a family's static rule (`rule` says why and
/// what serves the graph instead): `kernel <k>: static rule: <rule>`.
pub fn static_rule(kernel: &KernelDescriptor, rule: impl std::fmt::Display) -> PluginError {
    na(format!("kernel {}: static rule: {rule}", kernel.describe()))
}

/// The static rule the conv and epilogue GEMM families share: a big hinted tile (`big`) is
/// refused when the graph gives fewer than [`MIN_TILES`] tiles.
///
/// # Errors
/// `NOT_APPLICABLE` `kernel <k>: static rule: <t> tiles under-fill the device (fewer than
/// 128); a smaller tile serves this graph`.
pub fn check_tiles(kernel: &KernelDescriptor, big: bool, tiles: i64) -> PluginResult<()> {
    if big && tiles < MIN_TILES {
        return Err(static_rule(
            kernel,
            format_args!(
                "{tiles} tiles under-fill the device (fewer than {MIN_TILES}); a smaller tile serves this graph"
            ),
        ));
    }
    Ok(())
}

/// The static rule of the families that walk a row in chunks (norm, reduce): a chunk of `bn`
/// elements, wider than `smallest`, is refused when it is at least twice the `extent` it
/// walks (`what` names the extent).
///
/// # Errors
/// `NOT_APPLICABLE` `kernel <k>: static rule: a <bn>-element chunk is at least twice <what> of
/// <extent> elements; a narrower chunk serves this graph`.
pub fn chunk_rule(
    kernel: &KernelDescriptor,
    bn: i64,
    smallest: i64,
    extent: i64,
    what: &str,
) -> PluginResult<()> {
    if bn > smallest && extent * 2 <= bn {
        return Err(static_rule(
            kernel,
            format_args!(
                "a {bn}-element chunk is at least twice {what} of {extent} elements; a narrower chunk serves this graph"
            ),
        ));
    }
    Ok(())
}
