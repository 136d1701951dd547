//! The two epilogue GEMM families, matmul and conv fprop, as one declaration: each computes one
//! GEMM-shaped node (a matmul, an implicit-GEMM convolution) with the fused epilogue of
//! [`super::epilogue`], and each has two contract versions: v2 builds, saves and restores; v1
//! (bias and ReLU only, no residual or scale pointers) only restores plans saved before v2.
//!
//! A family declares ([`EpilogueGemm`]) its name, its two contracts, how the alignment refusal
//! names its kernel and operands, its graph matcher, its variant hints and static rule
//! ([`EpilogueGemm::select`]), the restore of its shape values
//! ([`EpilogueGemm::read_shape`]), its shape launch values, kernel integers and geometry;
//! [`Gemm`] (served by [`TritonHandler`]) supplies the rest, the same for both: the launch values every launch holds
//! (the operand UIDs, the optional epilogue tensors, `dtype`, `epilogue`, the config), the
//! prepared launch, the restore's shared reads, the signature of a named parameter list, and
//! the kernel arguments (three operand pointers, then bias, residual and scale, null when
//! absent; v1: bias only).

use super::conv::{CONFIG, config_ints, config_of};
use super::epilogue::{FusedEpilogue, SavedEpilogue, match_epilogue, read_saved};
use super::family::{IntValue, TritonContract, TritonHandler};
use super::graph::{na, tensor};
use super::head::head_nodes;
use super::launch::block_geometry;
use super::triton::{TritonConfig, i32_args, natural_signature, triton_kernel_args};
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{DataType, Node, TensorAttributes};
use std::marker::PhantomData;

/// What every epilogue GEMM launch holds besides its shape: the contract version, the three
/// operand UIDs, the optional bias, residual and scale UIDs, the data type, the epilogue code
/// and the kernel configuration. Each family's launch embeds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmCommon {
    /// Contract version: 2 for new builds, 1 for plans saved before v2.
    pub version: u8,
    /// UIDs of the two inputs and the output (the last node's output), in kernel order.
    pub uids: [i64; 3],
    /// UID of the bias, when epilogue bit 0 is set.
    pub bias_uid: Option<i64>,
    /// UID of the residual, when epilogue bit 4 or 5 is set (v2).
    pub residual_uid: Option<i64>,
    /// UID of the one-element scale, when epilogue bit 6 is set (v2).
    pub scale_uid: Option<i64>,
    /// `DataType` value.
    pub dtype: i8,
    /// Epilogue code ([`super::epilogue`]).
    pub epilogue: i64,
    /// The kernel configuration (its `family`/`dtype` strings are not saved).
    pub config: TritonConfig,
}

impl GemmCommon {
    /// The bias, residual and scale UIDs, in kernel order.
    pub fn optional(&self) -> [Option<i64>; 3] {
        [self.bias_uid, self.residual_uid, self.scale_uid]
    }
}

/// The launch-value names of the optional epilogue tensors, in kernel order.
const OPTIONAL: [&str; 3] = ["bias.uid", "res.uid", "scale.uid"];

/// An epilogue GEMM family's declaration; see the module docs.
pub trait EpilogueGemm: Sized + Send + Sync + 'static {
    /// The `family` name of `triton.json` entries.
    const FAMILY: &'static str;
    /// The contract names of v1 and v2.
    const CONTRACTS: [&'static str; 2];
    /// The launch-value names of the two inputs' and the output's UIDs.
    const UIDS: [&'static str; 3];
    /// How the alignment refusal names the kernel (`matmul`, `conv`).
    const KERNEL: &'static str;
    /// How the alignment refusal names the operands (`A, B and C`).
    const OPERANDS: &'static str;
    /// The residual's stride value names (contract v2), in kernel order.
    const RES_STRIDES: &'static [&'static str];

    /// The launch for `graph` (contract v2) with a placeholder config.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the family does not serve.
    fn match_graph(graph: &OperationGraph) -> PluginResult<Self>;
    /// Applies packed `config` of `kernel`: the variant's hints, then the static rule.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k> …` naming the broken hint or rule.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()>;
    /// The launch from saved values, after the shared reads (`epilogue` and the optional
    /// UIDs, held by `r`): the family's values in its restore order (with the
    /// [`GemmReader`] methods, [`GemmReader::common`] among them), then its rules.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the broken value and the dispatch.
    fn read_shape(r: &GemmReader<'_>) -> PluginResult<Self>;
    /// The shared part of the launch.
    fn common(&self) -> &GemmCommon;
    /// The family's own launch values (shape and strides, not the residual's), as (name,
    /// value).
    fn shape_values(&self) -> Vec<(&'static str, i64)>;
    /// The residual's strides (contract v2), in the order of [`Self::RES_STRIDES`].
    fn res_strides(&self) -> &[i64];
    /// The kernel's integers after the pointers, in kernel order (each passed as `i32`).
    fn scalars(&self) -> Vec<i64>;
    /// The launch grid (after the threads per block are checked).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values and `dispatch`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]>;
    /// The kernel parameter names of variant `variant` (the `spec` launch value) of contract
    /// `version`, in order (with the two scratch pointers).
    fn param_names(variant: i64, version: u8) -> Vec<&'static str>;
    /// Every value name of contract `version`, sorted.
    fn value_names(version: u8) -> Vec<&'static str>;

    /// Grid ([`Self::grid`]), block num_warps·warp_size, dynamic shared memory (shared by
    /// build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`,
    /// then the grid's texts.
    fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.common().config;
        let threads = c.threads_per_block(dispatch)?;
        let grid = self.grid(dispatch)?;
        Ok(block_geometry(c, grid, threads))
    }

    /// Workspace bytes the launch needs (default none).
    fn workspace_bytes(&self) -> u64 {
        0
    }

    /// The kernel arguments `args` of [`DispatchHandler::kernel_args`] with the workspace
    /// address the execute binds (default: `args` as they are).
    ///
    /// # Errors
    /// `BAD_PARAM` naming what the workspace breaks.
    ///
    /// [`DispatchHandler::kernel_args`]: crate::ingestor::DispatchHandler::kernel_args
    fn with_workspace(
        launch: &PreparedLaunch,
        args: Vec<KernelArgValue>,
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let _ = (launch, workspace);
        Ok(args)
    }

    /// The one launch queued before the main one, if any: a layout pass into the workspace,
    /// as (geometry, kernel arguments) from the main launch's arguments `args` (default none).
    fn layout_pass(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Option<(LaunchGeometry, Vec<KernelArgValue>)> {
        let _ = (launch, args);
        None
    }

    /// The contract name of this launch's version.
    fn contract(&self) -> &'static str {
        contract::<Self>(self.common().version)
    }

    /// The launch values: the operand UIDs, the optional epilogue UIDs the launch holds,
    /// `dtype`, `epilogue`, the config values, [`Self::shape_values`], then (v2) the
    /// residual's strides.
    fn to_values(&self) -> LaunchValues {
        let common = self.common();
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        for (n, x) in Self::UIDS.iter().zip(common.uids) {
            put(n, x);
        }
        for (n, x) in OPTIONAL.iter().zip(common.optional()) {
            if let Some(x) = x {
                put(n, x);
            }
        }
        put("dtype", i64::from(common.dtype));
        put("epilogue", common.epilogue);
        for (d, x) in CONFIG.iter().zip(config_ints(&common.config)) {
            put(d.name, x);
        }
        for (n, x) in self.shape_values() {
            put(n, x);
        }
        if common.version >= 2 {
            for (n, x) in Self::RES_STRIDES.iter().zip(self.res_strides()) {
                put(n, *x);
            }
        }
        v
    }

    /// The prepared launch: the version's contract, [`Self::to_values`], the geometry,
    /// [`Self::workspace_bytes`], `pointer_uids` the three operands then the present bias,
    /// residual and scale; `scalar_args` [`Self::scalars`] as `i32`.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let common = self.common();
        let mut pointer_uids = common.uids.to_vec();
        pointer_uids.extend(common.optional().into_iter().flatten());
        Ok(PreparedLaunch {
            dispatch: self.contract().to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(self.contract())?,
            workspace_bytes: self.workspace_bytes(),
            pointer_uids,
            scalar_args: i32_args(self.scalars()),
        })
    }

    /// Reads values saved under `dispatch` for contract `version`: the shared reader rules,
    /// `epilogue` and the optional UIDs (`read_saved`), then [`Self::read_shape`].
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts, `read_saved`'s, then
    /// [`Self::read_shape`]'s.
    fn from_values(dispatch: &str, values: &LaunchValues, version: u8) -> PluginResult<Self> {
        let names = Self::value_names(version);
        let r = ContractReader::new(dispatch, contract::<Self>(version), &names, values)?;
        let saved = read_saved(&r, values, dispatch, version)?;
        Self::read_shape(&GemmReader {
            r,
            dispatch,
            version,
            saved,
        })
    }
}

/// The contract name of `version` of family `F` (v1 below 2).
pub fn contract<F: EpilogueGemm>(version: u8) -> &'static str {
    F::CONTRACTS[usize::from(version >= 2)]
}

/// Every value name of contract `version` of family `F`, sorted: the operand and bias UIDs,
/// `dtype`, `epilogue`, `shape` (the family's shape and stride names), the config values,
/// then (v2) the residual and scale UIDs and the residual's strides.
pub fn value_names<F: EpilogueGemm>(version: u8, shape: &[&'static str]) -> Vec<&'static str> {
    let mut v = F::UIDS.to_vec();
    v.extend(["bias.uid", "dtype", "epilogue"]);
    v.extend(shape);
    v.extend(CONFIG.map(|d| d.name));
    if version >= 2 {
        v.extend(["res.uid", "scale.uid"]);
        v.extend(F::RES_STRIDES);
    }
    v.sort_unstable();
    v
}

/// The kernel signature of variant `variant` of contract `version` of family `F` (natural
/// layout of [`EpilogueGemm::param_names`], named).
pub fn signature<F: EpilogueGemm>(variant: i64, version: u8) -> Vec<KernelArgument> {
    natural_signature(F::param_names(variant, version))
}

/// A restore's reader of the values saved under one dispatch of an epilogue GEMM family, after
/// the shared reads: the contract rules ([`ContractReader`]), the dispatch, the contract
/// version and the saved epilogue.
#[derive(Debug)]
pub struct GemmReader<'a> {
    r: ContractReader<'a>,
    /// The dispatch the values are saved under.
    pub dispatch: &'a str,
    /// The contract version: 1 or 2.
    pub version: u8,
    saved: SavedEpilogue,
}

impl GemmReader<'_> {
    /// The INT value `name` in `[lo, hi]` ([`ContractReader::int`]).
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn int(&self, name: &str, lo: i64, hi: i64) -> PluginResult<i64> {
        self.r.int(name, lo, hi)
    }

    /// The INT values `names` in `[lo, hi]`, read in that order.
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn ints<const N: usize>(
        &self,
        names: &[&str; N],
        lo: i64,
        hi: i64,
    ) -> PluginResult<[i64; N]> {
        let mut v = [0i64; N];
        for (x, n) in v.iter_mut().zip(names) {
            *x = self.int(n, lo, hi)?;
        }
        Ok(v)
    }

    /// The INT values of `table`, each in its range, read in that order.
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn values<const N: usize>(&self, table: &[IntValue; N]) -> PluginResult<[i64; N]> {
        let mut v = [0i64; N];
        for (x, d) in v.iter_mut().zip(table) {
            *x = self.int(d.name, d.lo, d.hi)?;
        }
        Ok(v)
    }

    /// Reads the config values after `spec` (block_m, block_n, block_k, group_m, num_warps,
    /// shared_bytes, warp_size, in that order) and builds `family`'s config of variant
    /// `variant` (the `spec` value; the data type and stage count are not saved).
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn config(&self, family: &str, variant: i64) -> PluginResult<TritonConfig> {
        let mut v = vec![variant];
        for d in &CONFIG[1..] {
            v.push(self.int(d.name, d.lo, d.hi)?);
        }
        Ok(config_of(family, &v))
    }

    /// The residual's strides: the values `names` in [0, 2147483647] under contract v2; under
    /// v1 (no residual) `output`, the output's strides.
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn res_strides<const N: usize>(
        &self,
        names: &[&str; N],
        output: [i64; N],
    ) -> PluginResult<[i64; N]> {
        if self.version >= 2 {
            self.ints(names, 0, i64::from(i32::MAX))
        } else {
            Ok(output)
        }
    }

    /// The common part of the launch of family `F`: the operand UIDs (any `i64`) read now,
    /// the saved epilogue, `dtype` and `config`; the version clamped to 1 or 2.
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn common<F: EpilogueGemm>(
        &self,
        dtype: i8,
        config: TritonConfig,
    ) -> PluginResult<GemmCommon> {
        let saved = self.saved;
        Ok(GemmCommon {
            version: self.version.clamp(1, 2),
            uids: self.ints(&F::UIDS, i64::MIN, i64::MAX)?,
            bias_uid: saved.bias,
            residual_uid: saved.residual,
            scale_uid: saved.scale,
            dtype,
            epilogue: saved.code,
            config,
        })
    }
}

/// The head of an epilogue GEMM graph of `family`: its nodes (the GEMM node first, then the
/// epilogue nodes), the two input tensors (of one data type of f32, f16 or bf16), their data
/// type and the GEMM node's UIDs.
#[derive(Debug)]
pub struct GemmGraph<'a> {
    /// The family name the refusals use.
    pub family: &'static str,
    /// The graph's nodes, the GEMM node first.
    pub nodes: Vec<Node<'a>>,
    /// The two inputs.
    pub inputs: [TensorAttributes<'a>; 2],
    /// Their data type.
    pub dtype: DataType,
    /// The GEMM node's two input UIDs and its output UID.
    pub uids: [i64; 3],
}

impl<'a> GemmGraph<'a> {
    /// Matches the head of a `family` graph: the GEMM node and up to five epilogue nodes;
    /// `first` reads the first node (its attributes `T`, its two input UIDs and its output
    /// UID), refusing a node of another kind; `operands` names the inputs in the data-type
    /// refusal.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `the <family> pack serves <family> with up to five epilogue nodes; this
    /// graph has <n> nodes`; `first`'s texts; `the <family> pack serves f32, f16 and bf16 with
    /// <operands> of one type, not <t> × <t>`.
    pub fn new<T>(
        graph: &'a OperationGraph,
        family: &'static str,
        first: impl FnOnce(&Node<'a>) -> PluginResult<(T, [i64; 3])>,
        operands: &str,
    ) -> PluginResult<(GemmGraph<'a>, T)> {
        let serves = format!("the {family} pack serves {family} with up to five epilogue nodes");
        let nodes = head_nodes(graph, 6, &serves)?;
        let (attrs, uids) = first(&nodes[0])?;
        let inputs = [tensor(graph, uids[0])?, tensor(graph, uids[1])?];
        let (dtype, other) = (inputs[0].data_type(), inputs[1].data_type());
        if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) || other != dtype
        {
            return Err(na(format!(
                "the {family} pack serves f32, f16 and bf16 with {operands} of one type, not {dtype:?} × {other:?}"
            )));
        }
        let head = GemmGraph {
            family,
            nodes,
            inputs,
            dtype,
            uids,
        };
        Ok((head, attrs))
    }

    /// The common part of the launch (contract v2) that computes this graph's GEMM with
    /// `fused` on a placeholder `config`: the two inputs and the fused output, the epilogue's
    /// tensors and code, the inputs' data type.
    pub fn common(&self, fused: &FusedEpilogue, config: TritonConfig) -> GemmCommon {
        GemmCommon {
            version: 2,
            uids: [self.uids[0], self.uids[1], fused.out],
            bias_uid: fused.bias,
            residual_uid: fused.residual,
            scale_uid: fused.scale,
            dtype: self.dtype.0,
            epilogue: fused.code,
            config,
        }
    }

    /// The fused epilogue of the nodes after the GEMM node ([`match_epilogue`], with
    /// `is_bias` the bias rule, described as `bias_text`) and its output tensor (the graph's
    /// output).
    ///
    /// # Errors
    /// The [`match_epilogue`] texts; the output tensor lookup's.
    pub fn epilogue(
        &self,
        graph: &'a OperationGraph,
        is_bias: &dyn Fn(&[i64], &[i64]) -> bool,
        bias_text: &str,
    ) -> PluginResult<(FusedEpilogue, TensorAttributes<'a>)> {
        let (nodes, f) = (&self.nodes[1..], self.family);
        let fused = match_epilogue(
            graph,
            nodes,
            self.uids[2],
            f,
            self.dtype,
            is_bias,
            bias_text,
        )?;
        let out = tensor(graph, fused.out)?;
        Ok((fused, out))
    }
}

/// `NOT_APPLICABLE` `kernel <k> is the <variant> variant; the graph's <what> does not satisfy
/// its hints (<hints>)` for the first `(broken, variant, hints)` of `checks` that is broken.
///
/// # Errors
/// As above.
pub fn check_hints(
    kernel: &KernelDescriptor,
    what: &str,
    checks: &[(bool, &str, &str)],
) -> PluginResult<()> {
    match checks.iter().find(|c| c.0) {
        Some((_, variant, hints)) => Err(na(format!(
            "kernel {} is the {variant} variant; the graph's {what} does not satisfy its hints ({hints})",
            kernel.describe()
        ))),
        None => Ok(()),
    }
}

/// Contract version `V` (1 or 2) of an [`EpilogueGemm`] family `F`, as [`TritonHandler`]
/// serves it: v2 builds, saves and restores; v1 only restores plans saved before v2.
pub struct Gemm<F, const V: u8>(PhantomData<fn() -> F>);

impl<F: EpilogueGemm, const V: u8> TritonContract for Gemm<F, V> {
    type Launch = F;
    const FAMILY_NAME: &'static str = F::FAMILY;
    const CONTRACT_NAME: &'static str = F::CONTRACTS[(V >= 2) as usize];

    fn matched(graph: &OperationGraph) -> PluginResult<F> {
        F::match_graph(graph)
    }

    /// The matcher's launch with the static rule applied.
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: `the <family> pack builds new plans on contract v2 only` (v1); the
    /// matcher's texts; `kernel <k> is not a packed <family> entry`; `kernel <k> is built for
    /// <dtype>, the graph is <dtype>`; [`EpilogueGemm::select`]'s texts.
    fn built(kernel: &KernelDescriptor, graph: &OperationGraph) -> PluginResult<F> {
        if V < 2 {
            return Err(na(format!(
                "the {} pack builds new plans on contract v2 only",
                F::FAMILY
            )));
        }
        let mut inputs = F::match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, F::FAMILY, inputs.common().dtype)?;
        inputs.select(kernel, config)?;
        Ok(inputs)
    }

    fn restored(dispatch: &str, values: &LaunchValues) -> PluginResult<F> {
        F::from_values(dispatch, values, V)
    }

    fn prepared(launch: &F) -> PluginResult<PreparedLaunch> {
        launch.to_launch()
    }

    fn config_of(launch: &F) -> TritonConfig {
        launch.common().config.clone()
    }

    /// [`signature`] of the variant the `spec` value names (0 without values).
    fn signature_of(values: Option<&LaunchValues>) -> Vec<KernelArgument> {
        let variant = match values.and_then(|v| v.get("spec")) {
            Some(LaunchValue::Int(v)) => *v,
            _ => 0,
        };
        signature::<F>(variant, V)
    }

    /// The three operands, bias, residual and scale (null when absent; v1: bias only), the
    /// integers, two null scratch pointers, then [`EpilogueGemm::with_workspace`] where the
    /// execute binds a workspace. A specialized launch refuses (BAD_PARAM) operand addresses
    /// that are not 16-byte aligned.
    fn args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let optional = &OPTIONAL[..if V >= 2 { 3 } else { 1 }];
        let args = triton_kernel_args(launch, tensors, F::KERNEL, F::OPERANDS, optional)?;
        match workspace {
            Some(w) => F::with_workspace(launch, args, w),
            None => Ok(args),
        }
    }

    fn prologue(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        F::layout_pass(launch, args).into_iter().collect()
    }
}

/// The dispatch handlers of an [`EpilogueGemm`] family's two contract versions.
#[derive(Debug)]
pub struct GemmHandler<F>(PhantomData<fn() -> F>);

impl<F: EpilogueGemm> GemmHandler<F> {
    /// The v1 handler (restore only).
    pub const V1: TritonHandler<Gemm<F, 1>> = TritonHandler::new();
    /// The v2 handler.
    pub const V2: TritonHandler<Gemm<F, 2>> = TritonHandler::new();
}
