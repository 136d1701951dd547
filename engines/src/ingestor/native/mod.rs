//! The hand-written native packs: upstream's Pointwise v1 and ConvFwd v1 contracts and their
//! v2 forms, which launch the clang-built kernels of `engines/kernels/` (one symbol per op and
//! data type). They read graphs through [`super::framework::graph`] and import no Triton family.

pub mod contract;
pub mod conv_fwd;
pub mod conv_fwd_v2;
pub mod pointwise;
pub mod pointwise_v2;

use crate::ingestor::descriptor::KernelDescriptor;

/// The kernel symbol of a descriptor's single source (empty when multi-launch).
pub(crate) fn kernel_symbol(kernel: &KernelDescriptor) -> &str {
    kernel
        .single_source()
        .map(|s| s.symbol.as_str())
        .unwrap_or("")
}
