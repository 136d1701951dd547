//! The one pack registry: every dispatch handler (launch contract) this crate serves, and the
//! kernel families of the pack tool's `kernels.json` that map onto them.
//!
//! Registration lives here and nowhere else: [`native_packs`] (upstream's native packs,
//! Pointwise v1 and ConvFwd v1, each under its versioned name and its unversioned alias) and
//! [`pack_registry`] (those plus every newer contract, registered under its versioned name
//! only, which is what GPU engines use). The dispatch machinery
//! ([`crate::ingestor::dispatch`]) knows no pack.
//!
//! Kernel family names (`"pointwise"`, `"conv_fwd"`) are the wire names of the `family` field
//! that the pack tool (`xtask pack-kernels`) writes into `kernels.json`
//! (`engines/kernels/README.md`); [`PackFamily`] is their only spelling in this crate, and a
//! test checks that every committed `kernels.json` names only known families.

use crate::ingestor::DispatchRegistry;
use crate::ingestor::framework::family::FamilyDecl;
use crate::ingestor::native::conv_fwd::ConvFwdV1Handler;
use crate::ingestor::native::conv_fwd_v2::{CONV_FWD_V2, ConvFwdV2Handler};
use crate::ingestor::native::pointwise::PointwiseV1Handler;
use crate::ingestor::native::pointwise_v2::{POINTWISE_V2, PointwiseV2Handler};
use crate::ingestor::packs::batchnorm_fwd;
use crate::ingestor::packs::bn_bwd;
use crate::ingestor::packs::conv_dgrad::{CONV_DGRAD_V1, ConvDgradV1Handler};
use crate::ingestor::packs::conv_fprop::{CONV_FPROP_V2, ConvFpropHandler};
use crate::ingestor::packs::conv_wgrad::{CONV_WGRAD_V1, ConvWgradV1Handler};
use crate::ingestor::packs::gather;
use crate::ingestor::packs::matmul::{MATMUL_V2, MatmulHandler};
use crate::ingestor::packs::norm_bwd;
use crate::ingestor::packs::norm_fwd;
use crate::ingestor::packs::pointwise_v3;
use crate::ingestor::packs::pool_bwd;
use crate::ingestor::packs::pool_fwd;
use crate::ingestor::packs::reduce_fwd;
use crate::ingestor::packs::sdpa_bwd;
use crate::ingestor::packs::sdpa_fwd;
use std::sync::Arc;

/// The family list: one line a family (its doc, its `PackFamily` variant, its declaration), in
/// registration order. A family on the Triton framework is
/// `FamilyDecl::triton::<its TritonFamily>()`; the others name their family, packed contract and
/// handlers. This list generates [`PackFamily`] and is the only place families are registered.
macro_rules! pack_families {
    ($($(#[doc = $doc:literal])* $variant:ident => $decl:expr,)*) => {
        /// A kernel family of the packed kernels: which launch contract serves its entries.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PackFamily {
            $($(#[doc = $doc])* $variant,)*
        }

        impl PackFamily {
            /// Every family, in registration order.
            pub const ALL: [PackFamily; [$(stringify!($variant)),*].len()] =
                [$(PackFamily::$variant),*];

            /// The family's declaration: name, packed contract, handlers.
            pub fn declaration(self) -> FamilyDecl {
                match self {
                    $(PackFamily::$variant => $decl,)*
                }
            }
        }
    };
}

pack_families! {
    /// Single pointwise node kernels (`family: "pointwise"`).
    Pointwise => FamilyDecl::new("pointwise", POINTWISE_V2, || vec![Arc::new(PointwiseV2Handler)]),
    /// Direct 2-D convolution forward with the bias/ReLU epilogue (`family: "conv_fwd"`).
    ConvFwd => FamilyDecl::new("conv_fwd", CONV_FWD_V2, || vec![Arc::new(ConvFwdV2Handler)]),
    /// Triton batched matmul with the fused epilogue of contract v2 (`family: "matmul"` of
    /// `triton.json`).
    Matmul => FamilyDecl::new("matmul", MATMUL_V2, || vec![Arc::new(MatmulHandler::V1), Arc::new(MatmulHandler::V2)]),
    /// Triton implicit-GEMM conv fprop with the fused epilogue of contract v2
    /// (`family: "conv_fprop"`).
    ConvFprop => FamilyDecl::new("conv_fprop", CONV_FPROP_V2, || vec![Arc::new(ConvFpropHandler::V1), Arc::new(ConvFpropHandler::V2)]),
    /// Triton implicit-GEMM conv backward data (`family: "conv_dgrad"`).
    ConvDgrad => FamilyDecl::new("conv_dgrad", CONV_DGRAD_V1, || vec![Arc::new(ConvDgradV1Handler::new())]),
    /// Triton implicit-GEMM conv backward filter with a deterministic split of the reduction
    /// (`family: "conv_wgrad"`).
    ConvWgrad => FamilyDecl::new("conv_wgrad", CONV_WGRAD_V1, || vec![Arc::new(ConvWgradV1Handler::new())]),
    /// Triton layernorm and rmsnorm forward, with the training statistics
    /// (`family: "norm_fwd"`).
    NormFwd => FamilyDecl::triton::<norm_fwd::NormFwdInputs>(),
    /// Triton flash-attention SDPA forward (`family: "sdpa_fwd"`).
    SdpaFwd => FamilyDecl::triton::<sdpa_fwd::SdpaFwdInputs>(),
    /// Triton fused pointwise chains: 1–4 pointwise nodes of any mode in one launch
    /// (`family: "pointwise_fused"`).
    PointwiseFused => FamilyDecl::triton::<pointwise_v3::PointwiseV3Inputs>(),
    /// Triton reductions (every mode, any axes that collapse) and the softmax / log-softmax
    /// patterns (`family: "reduce_fwd"`).
    ReduceFwd => FamilyDecl::triton::<reduce_fwd::ReduceFwdInputs>(),
    /// Triton resample forward: max pooling (with the index) and average pooling, 1-D to 3-D
    /// windows (`family: "pool_fwd"`).
    PoolFwd => FamilyDecl::triton::<pool_fwd::PoolFwdInputs>(),
    /// Triton batchnorm inference (both forms) and training forward with the saved and
    /// running statistics (`family: "batchnorm_fwd"`).
    BatchnormFwd => FamilyDecl::triton::<batchnorm_fwd::BatchnormFwdInputs>(),
    /// Triton row gather, the `hipdnn_rs.gather` custom op (`family: "gather"`).
    Gather => FamilyDecl::triton::<gather::GatherInputs>(),
    /// Triton layernorm and rmsnorm backward: dx, and dscale/dbias through a deterministic
    /// split reduction (`family: "norm_bwd"`).
    NormBwd => FamilyDecl::triton::<norm_bwd::NormBwdInputs>(),
    /// Triton batchnorm backward with the optional fused ReLU backward: dscale/dbias through
    /// a deterministic split reduction, then dx (`family: "bn_bwd"`).
    BnBwd => FamilyDecl::triton::<bn_bwd::BnBwdInputs>(),
    /// Triton flash-attention SDPA backward: dq, then dk and dv, deterministic
    /// (`family: "sdpa_bwd"`).
    SdpaBwd => FamilyDecl::triton::<sdpa_bwd::SdpaBwdInputs>(),
    /// Triton resample backward: max pooling through the forward's index and average
    /// pooling, 1-D to 3-D windows, a deterministic gather per dx element (`family:
    /// "pool_bwd"`).
    PoolBwd => FamilyDecl::triton::<pool_bwd::PoolBwdInputs>(),
}

impl PackFamily {
    /// The `family` value of `kernels.json` / `triton.json`.
    pub fn name(self) -> &'static str {
        self.declaration().name
    }

    /// The family named `name` in `kernels.json`, `None` for a family this build does not serve.
    pub fn from_name(name: &str) -> Option<PackFamily> {
        PackFamily::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The contract that serves the family's current packed entries (entries without a
    /// `contract` field), e.g. `hipkernel.matmul.dispatch.v2`, `hipkernel.gather.dispatch.v1`.
    pub fn packed_contract(self) -> &'static str {
        self.declaration().contract
    }
}

/// Upstream's native packs: Pointwise v1 and ConvFwd v1, each under its versioned name
/// (`hipkernel.<pack>.dispatch.v1`) and its unversioned alias (`hipkernel.<pack>.dispatch`).
pub fn native_packs() -> DispatchRegistry {
    let mut r = DispatchRegistry::new();
    r.register(Arc::new(PointwiseV1Handler))
        .and_then(|()| r.register(Arc::new(ConvFwdV1Handler)))
        .unwrap_or_else(|e| unreachable!("native packs register once: {e}"));
    r
}

/// Every contract this crate serves: [`native_packs`] plus the v2 contracts
/// (`hipkernel.pointwise.dispatch.v2`, `hipkernel.conv_fwd.dispatch.v2`) and the Triton
/// contracts (`hipkernel.matmul.dispatch.v2` and `hipkernel.conv_fprop.dispatch.v2`, plus their
/// v1 forms, which restore plans saved before v2; `hipkernel.conv_dgrad.dispatch.v1`,
/// `hipkernel.conv_wgrad.dispatch.v1`, `hipkernel.norm_fwd.dispatch.v1`, `hipkernel.sdpa_fwd.dispatch.v1`,
/// `hipkernel.pointwise.dispatch.v3`, `hipkernel.reduce_fwd.dispatch.v1`,
/// `hipkernel.resample_fwd.dispatch.v1`, `hipkernel.batchnorm_fwd.dispatch.v1`,
/// `hipkernel.gather.dispatch.v1`, `hipkernel.norm_bwd.dispatch.v1`, `hipkernel.bn_bwd.dispatch.v1`,
/// `hipkernel.sdpa_bwd.dispatch.v1`, `hipkernel.resample_bwd.dispatch.v1`) under their
/// versioned names only, so the unversioned aliases keep naming the native v1 packs.
pub fn pack_registry() -> DispatchRegistry {
    let mut r = native_packs();
    for family in PackFamily::ALL {
        for handler in (family.declaration().handlers)() {
            r.register_versioned_only(handler)
                .unwrap_or_else(|e| unreachable!("family {} registers once: {e}", family.name()));
        }
    }
    r
}
