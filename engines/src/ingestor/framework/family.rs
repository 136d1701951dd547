//! A Triton kernel family as a declaration: its contract's launch values as a table, a graph
//! matcher, a static rule and its launch arithmetic; [`TritonHandler`] turns any
//! [`TritonFamily`] into the dispatch handler of its contract.
//!
//! What a family declares ([`TritonFamily`]):
//! - `FAMILY` (the `family` of `triton.json`) and `CONTRACT` (`hipkernel.<family>.dispatch.v<N>`);
//! - `VALUES`: every integer launch value with the range a saved plan's value must lie in, in
//!   the order a restore reads them (so the first broken value is the one a refusal names);
//!   [`TritonFamily::ints`] / [`TritonFamily::from_ints`] map the launch to and from that order;
//! - `POINTERS` (the launch values holding the UIDs of the kernel's pointer arguments, in
//!   kernel order) and `ALIGNED` (those a specialized entry needs 16-byte aligned) with the
//!   words that name them in the refusal;
//! - `OPTIONAL` (values a launch may lack, [`TritonFamily::present`]), float values (an f32
//!   saved as a float, [`float`]) and [`TritonFamily::read_value`] (a value that depends on
//!   earlier ones: present under a flag, a range or check between values), each defaulted;
//! - [`TritonFamily::match_graph`] (the graph → launch, with a placeholder config),
//!   [`TritonFamily::select`] (a packed entry's config on that launch: hints and static rule),
//!   [`TritonFamily::check`] (the rules beyond the value ranges, shared by build and restore),
//!   [`TritonFamily::param_names`] and [`TritonFamily::launch`] (geometry and integers);
//! - where the contract needs them: `OPTIONAL` values a launch may lack (with
//!   [`TritonFamily::present`]), and [`TritonFamily::check_read`], a rule a restore applies as
//!   soon as the values it needs are read (so it refuses before reading the later values).
//!
//! The handler supplies the rest, the same for every family: contract and signature (the
//! natural layout of the parameter list), `prepare` refusing with the matcher's reason,
//! `prepare_kernel` (the kernel's config checked against the graph's data type, then
//! `select`), saving the values as they are, restoring through the table, and the kernel
//! arguments (pointers by UID, the alignment check of a specialized entry, the integers, the
//! two null scratch pointers every packed entry takes).

use super::graph::na;
use super::launch::spec_hints;
use super::triton::{TritonConfig, is_spec, natural_signature};
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use std::marker::PhantomData;
use std::sync::Arc;

/// `N` launch values: `parts` one after another, for a `VALUES` table built from shared groups
/// (`N` must be their total length; a wrong `N` fails when the constant is evaluated).
pub const fn concat<const N: usize>(parts: &[&[IntValue]]) -> [IntValue; N] {
    let mut out = [int("", 0, 0); N];
    let (mut k, mut p) = (0, 0);
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[k] = parts[p][i];
            k += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(k == N, "concat: N is not the total length of the parts");
    out
}

/// The largest extent or stride a Triton kernel's `i32` arguments hold.
pub const I32_MAX: i64 = i32::MAX as i64;

/// One launch value of a contract: its name and the closed range `[lo, hi]` a saved value
/// must lie in; a `float` value is saved as a float that f32 holds exactly, and its slot of
/// [`TritonFamily::ints`] holds its f32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntValue {
    /// The value name (`rows`, `table.uid`).
    pub name: &'static str,
    /// Smallest accepted value.
    pub lo: i64,
    /// Largest accepted value.
    pub hi: i64,
    /// An f32 value (saved as a float; the slot holds `f32::to_bits`).
    pub float: bool,
}

/// `IntValue { name, lo, hi }`.
pub const fn int(name: &'static str, lo: i64, hi: i64) -> IntValue {
    IntValue {
        name,
        lo,
        hi,
        float: false,
    }
}

/// An f32 value (a float launch value that f32 holds exactly; NaN accepted).
pub const fn float(name: &'static str) -> IntValue {
    IntValue {
        name,
        lo: 0,
        hi: u32::MAX as i64,
        float: true,
    }
}

/// `items` as a variant passes them: without the indices in `spec_one` (the strides a
/// specialized entry holds constant 1) when `spec`.
pub fn spec_kept<T: Copy>(items: &[T], spec: bool, spec_one: &[usize]) -> Vec<T> {
    let kept = items.iter().enumerate();
    kept.filter(|(i, _)| !(spec && spec_one.contains(i)))
        .map(|(_, v)| *v)
        .collect()
}

/// The f32 of a float value's slot.
pub fn f32_of(slot: i64) -> f32 {
    f32::from_bits(slot as u32)
}

/// The slot of an f32 value.
pub fn slot_of(v: f32) -> i64 {
    i64::from(v.to_bits())
}

/// A tensor UID value (any `i64`).
pub const fn uid(name: &'static str) -> IntValue {
    int(name, i64::MIN, i64::MAX)
}

/// A Triton family's declaration; see the module docs.
pub trait TritonFamily: Clone + Send + Sync + Sized + 'static {
    /// The `family` name of `triton.json` entries.
    const FAMILY: &'static str;
    /// The versioned contract name.
    const CONTRACT: &'static str;
    /// Every launch value, in the order a restore reads them.
    const VALUES: &'static [IntValue];
    /// Launch values holding the UIDs of the pointer arguments, in kernel order.
    const POINTERS: &'static [&'static str];
    /// The pointer values a specialized entry needs 16-byte aligned.
    const ALIGNED: &'static [&'static str];
    /// How the alignment refusal names them (`a 16-byte aligned table and y`).
    const ALIGNED_TEXT: &'static str;

    /// The launch for `graph` with a placeholder config.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the family does not serve.
    fn match_graph(graph: &OperationGraph) -> PluginResult<Self>;
    /// The launch's kernel configuration (a placeholder until [`Self::select`] sets it).
    fn config_mut(&mut self) -> &mut TritonConfig;
    /// The graph's data type (a `DataType` value) that a kernel must be built for: by default
    /// the launch's `dtype` value ([`Self::ints`]; 0 where `VALUES` has none).
    fn dtype(&self) -> i8 {
        let at = Self::VALUES.iter().position(|d| d.name == "dtype");
        at.map_or(0, |i| self.ints()[i] as i8)
    }
    /// The spec variant's hints as its refusal names them (`unit column strides of …`), which
    /// the default [`Self::select`] checks with [`Self::fits_spec`]. Default none.
    const SPEC_HINTS: &'static str = "";
    /// Whether the launch satisfies [`Self::SPEC_HINTS`] (alignment is checked at execute).
    /// Default true.
    fn fits_spec(&self) -> bool {
        true
    }
    /// The family's static rule on the launch with its config set, run last by the default
    /// [`Self::select`]. Default none.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k>: static rule: …`.
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let _ = kernel;
        Ok(())
    }
    /// Applies packed `config` of `kernel`. The default refuses a spec `config` the launch
    /// does not fit ([`Self::fits_spec`], [`Self::SPEC_HINTS`]), sets the config, then runs
    /// [`Self::rule`]; a family with other variant hints writes its own.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k> is the spec variant; the graph's layout does not satisfy
    /// its hints (<SPEC_HINTS>)`; [`Self::rule`]'s texts.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        spec_hints(kernel, &config, self.fits_spec(), Self::SPEC_HINTS)?;
        *self.config_mut() = config;
        self.rule(kernel)
    }
    /// The values of [`Self::VALUES`], in that order.
    fn ints(&self) -> Vec<i64>;
    /// The launch from values in [`Self::VALUES`] order (each already in range).
    fn from_ints(v: &[i64]) -> Self;
    /// The contract's rules beyond the value ranges (build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values and `dispatch`.
    fn check(&self, dispatch: &str) -> PluginResult<()>;
    /// The kernel parameter names of a variant, in order (with the two scratch pointers).
    fn param_names(spec: bool) -> Vec<&'static str>;
    /// The by-value integers after the pointers, in kernel order (each passed as `i32`).
    fn scalars(&self) -> Vec<i64>;
    /// Grid, block and dynamic shared memory of the launch.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values and `dispatch`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry>;
    /// Workspace bytes the launch needs (default none).
    fn workspace_bytes(&self) -> u64 {
        0
    }
    /// A rule on the values read so far (`read`, a prefix of [`Self::VALUES`] order, of the
    /// saved `values`), run by [`Self::from_values`] after each value is read: for a contract
    /// whose restore refuses a broken combination (or an optional value's presence) before it
    /// reads the later values. Default none.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values and `dispatch`.
    fn check_read(dispatch: &str, values: &LaunchValues, read: &[i64]) -> PluginResult<()> {
        let _ = (dispatch, values, read);
        Ok(())
    }

    /// Launch values a launch may lack (optional tensors' UIDs, values of a mode): see
    /// [`Self::present`]; an absent pointer value passes a null pointer; the default
    /// [`Self::read_value`] reads an absent one as 0 (a family's [`Self::read_value`] or
    /// [`Self::check_read`] decides whether it may be absent). Default none.
    const OPTIONAL: &'static [&'static str] = &[];

    /// Whether the launch holds `OPTIONAL` value `name` ([`Self::to_values`] saves only those
    /// held). Default true.
    fn present(&self, name: &str) -> bool {
        let _ = name;
        true
    }

    /// Reads value `i` of `VALUES` in a restore, after `read` (the values before it, an absent
    /// one as 0). The default is the table's rule ([`ValueReader::read`]). A family overrides
    /// it where a value depends on earlier ones (an `OPTIONAL` value present exactly under a
    /// flag: 0 when absent; a range set by an earlier value; a check between values), so the
    /// refusal that names the first broken value stays first.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the value and the dispatch.
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let _ = read;
        let name = Self::VALUES[i].name;
        if Self::OPTIONAL.contains(&name) && !r.has(name) {
            return Ok(0);
        }
        r.read(i)
    }

    /// The by-value f32 arguments after [`Self::scalars`], in kernel order. Default none.
    fn float_scalars(&self) -> Vec<f32> {
        Vec::new()
    }

    /// The prepared launch: `CONTRACT`, the launch values, [`Self::geometry`], the
    /// `POINTERS` UIDs, [`Self::scalars`] as `i32`.
    ///
    /// # Errors
    /// As [`Self::geometry`].
    fn launch(&self) -> PluginResult<PreparedLaunch> {
        let launch_values = self.to_values();
        let pointer_uids = Self::POINTERS
            .iter()
            .filter_map(|n| match launch_values.get(*n) {
                Some(LaunchValue::Int(u)) => Some(*u),
                _ => None,
            })
            .collect();
        Ok(PreparedLaunch {
            dispatch: Self::CONTRACT.to_string(),
            geometry: self.geometry(Self::CONTRACT)?,
            workspace_bytes: self.workspace_bytes(),
            pointer_uids,
            scalar_args: self
                .scalars()
                .into_iter()
                .map(|v| KernelArgValue::I32(v as i32))
                .chain(self.float_scalars().into_iter().map(KernelArgValue::F32))
                .collect(),
            launch_values,
        })
    }

    /// [`Self::launch`] under the name the family tests call.
    ///
    /// # Errors
    /// As [`Self::geometry`].
    fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        self.launch()
    }

    /// The kernel signature of a variant: the natural layout of [`Self::param_names`].
    fn signature(spec: bool) -> Vec<KernelArgument> {
        natural_signature(Self::param_names(spec))
    }

    /// The kernel arguments of `launch` for the bound tensors, with the workspace address
    /// when the caller binds one (`None` from [`DispatchHandler::kernel_args`], `Some` from
    /// [`DispatchHandler::kernel_args_with_workspace`]): the default is [`pointer_args`]
    /// (`POINTERS` by UID, the alignment check of a specialized entry, the integers, two null
    /// scratch pointers). A family whose kernel takes optional pointers or the workspace
    /// overrides it.
    ///
    /// # Errors
    /// `BAD_PARAM` as [`pointer_args`].
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let _ = workspace;
        pointer_args::<Self>(launch, tensors)
    }

    /// Launches queued before the main one (e.g. a layout pass into the workspace), each as
    /// (geometry, kernel arguments), from the main launch's arguments `args`. Default none.
    fn prologue_launches(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        let _ = (launch, args);
        Vec::new()
    }

    /// Leading workspace bytes that must read as zero when the kernel starts. Default 0.
    fn zeroed_workspace_bytes(launch: &PreparedLaunch) -> u64 {
        let _ = launch;
        0
    }

    /// The kernel signature a launch with `values` passes. Default: [`Self::signature`] of the
    /// variant the `spec` value names.
    fn signature_for(values: &LaunchValues) -> Vec<KernelArgument> {
        Self::signature(is_spec(values))
    }

    /// The launch values (`VALUES` names → [`Self::ints`], floats as floats, absent
    /// `OPTIONAL` values left out).
    fn to_values(&self) -> LaunchValues {
        Self::VALUES
            .iter()
            .zip(self.ints())
            .filter(|(d, _)| !Self::OPTIONAL.contains(&d.name) || self.present(d.name))
            .map(|(d, v)| {
                let v = if d.float {
                    LaunchValue::Float(f64::from(f32_of(v)))
                } else {
                    LaunchValue::Int(v)
                };
                (d.name.to_string(), v)
            })
            .collect()
    }

    /// Reads values saved under `dispatch`: the shared reader rules, each value in `VALUES`
    /// order through [`Self::read_value`], then [`Self::check`].
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the [`ContractReader`] texts, [`Self::read_value`]'s,
    /// then [`Self::check`]'s.
    fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names(Self::VALUES);
        let r = ValueReader {
            reader: ContractReader::new(dispatch, Self::CONTRACT, &names, values)?,
            values,
            table: Self::VALUES,
            dispatch,
        };
        let mut ints = Vec::with_capacity(Self::VALUES.len());
        for i in 0..Self::VALUES.len() {
            let v = Self::read_value(&r, &ints, i)?;
            ints.push(v);
            Self::check_read(dispatch, values, &ints)?;
        }
        let launch = Self::from_ints(&ints);
        launch.check(dispatch)?;
        Ok(launch)
    }

    /// The launch of `kernel` on `graph`: the matcher, the kernel's config for the graph's data
    /// type, then [`Self::select`].
    ///
    /// # Errors
    /// The matcher's texts; `kernel <k> is not a packed <family> entry`; `kernel <k> is built
    /// for <dtype>, the graph is <dtype>`; [`Self::select`]'s texts.
    fn for_kernel(kernel: &KernelDescriptor, graph: &OperationGraph) -> PluginResult<Self> {
        let mut launch = Self::match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, Self::FAMILY, launch.dtype())?;
        launch.select(kernel, config)?;
        Ok(launch)
    }
}

/// A restore's reader of saved launch values: the shared [`ContractReader`] rules over a
/// family's `VALUES` table.
#[derive(Debug)]
pub struct ValueReader<'a> {
    reader: ContractReader<'a>,
    values: &'a LaunchValues,
    table: &'static [IntValue],
    dispatch: &'a str,
}

impl ValueReader<'_> {
    /// Value `i` of the table by its rule: an int in its range, or a float's f32 bits.
    ///
    /// # Errors
    /// As [`Self::int`] or [`Self::f32`].
    pub fn read(&self, i: usize) -> PluginResult<i64> {
        let d = &self.table[i];
        if d.float {
            self.f32(d.name, true).map(slot_of)
        } else {
            self.int(d.name, d.lo, d.hi)
        }
    }

    /// The INT value `name` in `[lo, hi]` ([`ContractReader::int`]).
    ///
    /// # Errors
    /// The [`ContractReader::int`] texts.
    pub fn int(&self, name: &str, lo: i64, hi: i64) -> PluginResult<i64> {
        self.reader.int(name, lo, hi)
    }

    /// The float value `name` that f32 holds exactly (NaN too where `nan`).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) `launch value '<n>' of dispatch '<d>' must be a float
    /// that f32 holds exactly, and the plan holds <value or type>`; `dispatch '<d>' needs
    /// launch value '<n>' (float), and the plan has none`.
    pub fn f32(&self, name: &str, nan: bool) -> PluginResult<f32> {
        let d = self.dispatch();
        match self.values.get(name) {
            Some(LaunchValue::Float(v)) if f64::from(*v as f32) == *v || (nan && v.is_nan()) => {
                Ok(*v as f32)
            }
            Some(o) => {
                let held = match o {
                    LaunchValue::Float(v) => v.to_string(),
                    o => o.type_name().to_string(),
                };
                Err(incompatible(format!(
                    "launch value '{name}' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds {held}"
                )))
            }
            None => Err(incompatible(format!(
                "dispatch '{d}' needs launch value '{name}' (float), and the plan has none"
            ))),
        }
    }

    /// Whether the plan holds value `name`.
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The dispatch name as a refusal quotes it.
    pub fn dispatch(&self) -> String {
        quote(self.dispatch)
    }
}

/// Every value name of `values`, sorted (the names a contract reader accepts).
pub fn value_names(values: &[IntValue]) -> Vec<&'static str> {
    let mut v: Vec<_> = values.iter().map(|d| d.name).collect();
    v.sort_unstable();
    v
}

/// One contract as [`TritonHandler`] serves it: every [`TritonFamily`] (its one contract) and
/// each contract version of an epilogue GEMM family ([`super::gemm::Gemm`]).
pub trait TritonContract: Send + Sync + 'static {
    /// The launch the contract builds and restores.
    type Launch;
    /// The `family` name the refusals use.
    const FAMILY_NAME: &'static str;
    /// The versioned contract name.
    const CONTRACT_NAME: &'static str;

    /// The launch for `graph` with a placeholder config.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the family does not serve.
    fn matched(graph: &OperationGraph) -> PluginResult<Self::Launch>;
    /// The launch of `kernel` on `graph` (the kernel's config, its hints and static rule).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the graph or the kernel breaks.
    fn built(kernel: &KernelDescriptor, graph: &OperationGraph) -> PluginResult<Self::Launch>;
    /// The launch from values saved under `dispatch`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the broken value and `dispatch`.
    fn restored(dispatch: &str, values: &LaunchValues) -> PluginResult<Self::Launch>;
    /// The prepared launch of `launch`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values that give no geometry.
    fn prepared(launch: &Self::Launch) -> PluginResult<PreparedLaunch>;
    /// The kernel configuration `launch` was prepared with (for a restored launch, the
    /// configuration its saved values hold: no data type, no stage count).
    fn config_of(launch: &Self::Launch) -> TritonConfig;
    /// The kernel signature a launch with `values` passes (`None`: the generic variant's).
    fn signature_of(values: Option<&LaunchValues>) -> Vec<KernelArgument>;
    /// The kernel arguments of `launch` for the bound tensors, with the workspace address
    /// where the execute binds one.
    ///
    /// # Errors
    /// `BAD_PARAM` naming the tensor or workspace that breaks the launch.
    fn args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>>;
    /// Launches queued before the main one, as [`DispatchHandler::prologue_launches`].
    fn prologue(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)>;

    /// Leading workspace bytes that must read as zero when the kernel starts. Default 0.
    fn zeroed(launch: &PreparedLaunch) -> u64 {
        let _ = launch;
        0
    }
}

/// A [`TritonFamily`]'s one contract: the family's own items.
impl<F: TritonFamily> TritonContract for F {
    type Launch = F;
    const FAMILY_NAME: &'static str = F::FAMILY;
    const CONTRACT_NAME: &'static str = F::CONTRACT;

    fn matched(graph: &OperationGraph) -> PluginResult<F> {
        F::match_graph(graph)
    }

    fn built(kernel: &KernelDescriptor, graph: &OperationGraph) -> PluginResult<F> {
        F::for_kernel(kernel, graph)
    }

    fn restored(dispatch: &str, values: &LaunchValues) -> PluginResult<F> {
        F::from_values(dispatch, values)
    }

    fn prepared(launch: &F) -> PluginResult<PreparedLaunch> {
        launch.launch()
    }

    fn config_of(launch: &F) -> TritonConfig {
        launch.clone().config_mut().clone()
    }

    fn signature_of(values: Option<&LaunchValues>) -> Vec<KernelArgument> {
        values.map_or_else(|| F::signature(false), F::signature_for)
    }

    fn args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        F::kernel_args(launch, tensors, workspace)
    }

    fn prologue(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        F::prologue_launches(launch, args)
    }

    fn zeroed(launch: &PreparedLaunch) -> u64 {
        F::zeroed_workspace_bytes(launch)
    }
}

/// The dispatch handler of any [`TritonContract`]: of a [`TritonFamily`] (saves and
/// restores), or of one contract version of an epilogue GEMM family.
#[derive(Debug, Clone, Copy)]
pub struct TritonHandler<F>(PhantomData<F>);

impl<F> TritonHandler<F> {
    /// The handler.
    pub const fn new() -> Self {
        TritonHandler(PhantomData)
    }
}

impl<F> Default for TritonHandler<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: TritonContract> DispatchHandler for TritonHandler<F> {
    fn contract(&self) -> &str {
        F::CONTRACT_NAME
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        F::signature_of(None)
    }

    fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
        F::signature_of(Some(values))
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        Err(F::matched(graph).err().unwrap_or_else(|| {
            na(format!(
                "the {} pack launches packed entries only; prepare a kernel",
                F::FAMILY_NAME
            ))
        }))
    }

    fn prepare_kernel(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<PreparedLaunch> {
        F::prepared(&F::built(kernel, graph)?).map_err(|e| na(e.message))
    }

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        F::prepared(&F::restored(dispatch, values)?)
    }

    fn saved_config(&self, dispatch: &str, values: &LaunchValues) -> Option<TritonConfig> {
        F::restored(dispatch, values).ok().map(|l| F::config_of(&l))
    }

    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        F::args(launch, tensors, None)
    }

    fn kernel_args_with_workspace(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        F::args(launch, tensors, Some(workspace))
    }

    fn prologue_launches(
        &self,
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        F::prologue(launch, args)
    }

    fn zeroed_workspace_bytes(&self, launch: &PreparedLaunch) -> u64 {
        F::zeroed(launch)
    }
}

/// A kernel family as the registry lists it: the `family` name of the packed entries, the
/// contract that serves them, and the dispatch handlers to register (versioned names only).
#[derive(Clone, Copy)]
pub struct FamilyDecl {
    /// The `family` of `kernels.json` / `triton.json` entries.
    pub name: &'static str,
    /// The versioned contract that serves the family's current packed entries.
    pub contract: &'static str,
    /// The handlers of the family's contracts (older versions that restore saved plans
    /// included).
    pub handlers: fn() -> Vec<Arc<dyn DispatchHandler>>,
}

impl std::fmt::Debug for FamilyDecl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FamilyDecl({} -> {})", self.name, self.contract)
    }
}

impl FamilyDecl {
    /// A family that names its contract and handlers itself.
    pub fn new(
        name: &'static str,
        contract: &'static str,
        handlers: fn() -> Vec<Arc<dyn DispatchHandler>>,
    ) -> FamilyDecl {
        FamilyDecl {
            name,
            contract,
            handlers,
        }
    }

    /// The family of a [`TritonFamily`] declaration: its name, its contract, one
    /// [`TritonHandler`].
    pub fn triton<F: TritonFamily>() -> FamilyDecl {
        FamilyDecl {
            name: F::FAMILY,
            contract: F::CONTRACT,
            handlers: || vec![Arc::new(TritonHandler::<F>::new())],
        }
    }
}

/// The `POINTERS` tensors' device addresses (null for an absent `OPTIONAL` one), the
/// integers, two null scratch pointers. A specialized launch refuses (BAD_PARAM) an `ALIGNED`
/// tensor that is not 16-byte aligned.
///
/// # Errors
/// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized <family>
/// kernel, which needs <ALIGNED_TEXT>`; `the plan's launch values hold no '<name>'`; `the
/// variant pack binds no memory to tensor UID <u>`; `tensor UID <u> is bound to host
/// memory; the ingestor launches on device memory`.
pub fn pointer_args<F: TritonFamily>(
    launch: &PreparedLaunch,
    tensors: &[TensorBinding<'_>],
) -> PluginResult<Vec<KernelArgValue>> {
    let spec = is_spec(&launch.launch_values);
    let mut out = Vec::with_capacity(launch.scalar_args.len() + F::POINTERS.len() + 2);
    for name in F::POINTERS {
        let Some(LaunchValue::Int(uid)) = launch.launch_values.get(*name) else {
            if F::OPTIONAL.contains(name) {
                out.push(KernelArgValue::Pointer(0));
                continue;
            }
            return Err(PluginError::bad_param(format!(
                "the plan's launch values hold no '{name}'"
            )));
        };
        let uid = *uid;
        let addr = crate::ingestor::dispatch::device_addr(tensors, uid)?;
        if spec && F::ALIGNED.contains(name) {
            aligned::<F>(uid, addr)?;
        }
        out.push(KernelArgValue::Pointer(addr));
    }
    out.extend_from_slice(&launch.scalar_args);
    out.push(KernelArgValue::Pointer(0));
    out.push(KernelArgValue::Pointer(0));
    Ok(out)
}

/// The alignment check of a specialized launch alone, ahead of [`pointer_args`]: every
/// `ALIGNED` tensor the variant pack binds on the device (a family that refuses a misaligned
/// operand before a missing binding).
///
/// # Errors
/// `BAD_PARAM` as [`pointer_args`]' alignment refusal.
pub fn check_aligned<F: TritonFamily>(
    launch: &PreparedLaunch,
    tensors: &[TensorBinding<'_>],
) -> PluginResult<()> {
    if !is_spec(&launch.launch_values) {
        return Ok(());
    }
    for name in F::ALIGNED {
        if let Some(LaunchValue::Int(uid)) = launch.launch_values.get(*name)
            && let Some(BufferRef::Device { addr, .. }) =
                tensors.iter().find(|t| t.uid == *uid).map(|t| &t.data)
        {
            aligned::<F>(*uid, *addr)?;
        }
    }
    Ok(())
}

/// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized <family> kernel,
/// which needs <ALIGNED_TEXT>` unless `addr` is 16-byte aligned.
fn aligned<F: TritonFamily>(uid: i64, addr: u64) -> PluginResult<()> {
    if addr % 16 != 0 {
        return Err(PluginError::bad_param(format!(
            "tensor UID {uid} is at {addr:#x}; this plan runs the specialized {} kernel, which needs {}",
            F::FAMILY,
            F::ALIGNED_TEXT
        )));
    }
    Ok(())
}
