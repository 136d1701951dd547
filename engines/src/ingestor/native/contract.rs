//! What the native contracts share: [`NativeContract`], the few facts a contract's launch inputs
//! declare (contract name, kernel signature, graph matcher, the kernel symbol a launch needs,
//! how saved values are read and a launch is built), [`NativeHandler`], the one dispatch
//! handler every native contract is served by, and the launch arithmetic of the kernels of
//! `engines/kernels/` (their argument layout, one thread per output element).
//!
//! It never reads a graph or a launch value itself: each contract does, through
//! [`crate::ingestor::framework::graph`] and [`crate::ingestor::launch_values`].

use super::kernel_symbol;
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch, default_kernel_args};
use crate::ingestor::framework::family::IntValue;
use crate::ingestor::framework::graph::na;
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use std::marker::PhantomData;

/// The launch inputs of one native contract version, as [`NativeHandler`] serves them.
pub trait NativeContract: Sized + Send + Sync + 'static {
    /// The versioned contract name (`hipkernel.<pack>.dispatch.v<N>`).
    const CONTRACT: &'static str;

    /// The kernel's argument counts (device pointers, then 32-bit integers) in the contract's
    /// widest form.
    const ARGUMENTS: (u32, u32);

    /// The kernel arguments of a launch with saved `values`; `None` asks for the contract's
    /// widest form (the handler's [`DispatchHandler::launch_signature`]). The default is
    /// [`native_signature`] of [`Self::ARGUMENTS`], whatever the values.
    fn signature(values: Option<&LaunchValues>) -> Vec<KernelArgument> {
        let _ = values;
        native_signature(Self::ARGUMENTS.0, Self::ARGUMENTS.1)
    }

    /// The launch inputs for `graph`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the contract does not serve.
    fn match_graph(graph: &OperationGraph) -> PluginResult<Self>;

    /// The kernel symbol this launch needs, which a packed kernel must carry; `None` (the
    /// default) when every kernel of the contract serves it.
    fn needed_symbol(&self) -> Option<String> {
        None
    }

    /// The launch inputs of values saved under `dispatch`, with the contract's checks.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the first broken value and `dispatch`.
    fn read(dispatch: &str, values: &LaunchValues) -> PluginResult<Self>;

    /// The prepared launch of these inputs.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) from the contract's geometry checks.
    fn launch(&self) -> PluginResult<PreparedLaunch>;

    /// The kernel arguments of `launch` for the bound tensors; the default is
    /// [`default_kernel_args`].
    ///
    /// # Errors
    /// As [`default_kernel_args`].
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        default_kernel_args(launch, tensors)
    }
}

/// The dispatch handler of a [`NativeContract`] (saves and restores): `prepare` matches the
/// graph and builds its launch, `prepare_kernel` also checks the kernel's symbol against
/// [`NativeContract::needed_symbol`], `restore_launch` reads the saved values and builds the
/// same launch.
#[derive(Debug, Clone, Copy)]
pub struct NativeHandler<C>(pub PhantomData<C>);

impl<C: NativeContract> DispatchHandler for NativeHandler<C> {
    fn contract(&self) -> &str {
        C::CONTRACT
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        C::signature(None)
    }

    fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
        C::signature(Some(values))
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        C::match_graph(graph)?.launch().map_err(|e| na(e.message))
    }

    /// # Errors
    /// The matcher's texts; `kernel <k> is not <symbol>, which this graph needs`.
    fn prepare_kernel(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<PreparedLaunch> {
        let inputs = C::match_graph(graph)?;
        if let Some(want) = inputs.needed_symbol()
            && kernel_symbol(kernel) != want
        {
            return Err(na(format!(
                "kernel {} is not {want}, which this graph needs",
                kernel.describe()
            )));
        }
        inputs.launch().map_err(|e| na(e.message))
    }

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        C::read(dispatch, values).and_then(|inputs| inputs.launch())
    }

    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        C::kernel_args(launch, tensors)
    }
}

/// Declares the [`NativeHandler`] of a [`NativeContract`] under one name, as a type and as a
/// value (as a unit struct's name is): `native_handler!(Name, Inputs, "v<N>");`, documented
/// as the `v<N>` handler.
macro_rules! native_handler {
    ($name:ident, $inputs:ty, $version:literal) => {
        #[doc = concat!("The ", $version, " handler (saves and restores).")]
        pub type $name = $crate::ingestor::native::contract::NativeHandler<$inputs>;
        #[doc = concat!("The ", $version, " handler, as a value (as a unit struct's name is).")]
        #[allow(non_upper_case_globals)]
        pub const $name: $name =
            $crate::ingestor::native::contract::NativeHandler(::std::marker::PhantomData);
    };
}
pub(crate) use native_handler;

/// The argument layout of the kernels of `engines/kernels/`: `pointers` device pointers
/// (`global_buffer`, 8 bytes each, from offset 0), then `ints` 32-bit integers (`by_value`, 4
/// bytes each).
pub fn native_signature(pointers: u32, ints: u32) -> Vec<KernelArgument> {
    let ptrs = (0..pointers).map(|i| KernelArgument::new("global_buffer", 8, 8 * i));
    let ints = (0..ints).map(|i| KernelArgument::new("by_value", 4, 8 * pointers + 4 * i));
    ptrs.chain(ints).collect()
}

/// The product of `extents`, `None` when it overflows `i64`.
pub fn checked_product(extents: &[i64]) -> Option<i64> {
    extents.iter().try_fold(1i64, |acc, x| acc.checked_mul(*x))
}

/// One thread per element of `total`: grid (ceil(total / block_size), 1, 1), block
/// (block_size, 1, 1), no dynamic shared memory. `total` is non-negative, `block_size` at
/// least 1.
///
/// # Errors
/// `too_big()` when the grid has more than 4294967295 blocks.
pub fn grid_1d(
    total: i64,
    block_size: u32,
    too_big: impl Fn() -> PluginError,
) -> PluginResult<LaunchGeometry> {
    let block = i64::from(block_size);
    let blocks = total.checked_add(block - 1).map(|t| t / block);
    let blocks = blocks.and_then(|b| u32::try_from(b).ok());
    Ok(LaunchGeometry {
        grid: [blocks.ok_or_else(too_big)?, 1, 1],
        block: [block_size, 1, 1],
        shared_mem_bytes: 0,
    })
}

/// The prepared launch of a native contract without workspace: `launch_values` under
/// `contract`, `geometry`, the device pointers of `pointer_uids`, then `scalars` as `i32`.
pub fn native_launch(
    contract: &str,
    launch_values: LaunchValues,
    geometry: LaunchGeometry,
    pointer_uids: Vec<i64>,
    scalars: Vec<i32>,
) -> PreparedLaunch {
    PreparedLaunch {
        dispatch: contract.to_string(),
        launch_values,
        geometry,
        workspace_bytes: 0,
        pointer_uids,
        scalar_args: scalars.into_iter().map(KernelArgValue::I32).collect(),
    }
}

/// The launch values of `table` (every one an INT), `ints` in table order; a value whose slot
/// in `held` is false is left out (an optional value the launch lacks).
pub fn int_values(table: &[IntValue], ints: &[i64], held: impl Fn(&str) -> bool) -> LaunchValues {
    let all = table.iter().zip(ints).filter(|(d, _)| held(d.name));
    all.map(|(d, v)| (d.name.to_string(), LaunchValue::Int(*v)))
        .collect()
}

/// Reads the INT values of `table` saved under `dispatch` against `contract`: the
/// [`ContractReader`] rules (contract name, no name outside `table`), then each value in table
/// order within its range. `rule(name, read)` runs before each value with the values read so
/// far: `Ok(true)` reads it, `Ok(false)` leaves it absent (0 in its slot), an error refuses (a
/// contract whose values depend on earlier ones).
///
/// # Errors
/// `NOT_APPLICABLE` (load prefix): the [`ContractReader`] texts, or `rule`'s.
pub fn read_ints<const N: usize>(
    dispatch: &str,
    contract: &str,
    table: &[IntValue; N],
    values: &LaunchValues,
    rule: impl Fn(&str, &[i64]) -> PluginResult<bool>,
) -> PluginResult<[i64; N]> {
    let names = table.map(|d| d.name);
    let r = ContractReader::new(dispatch, contract, &names, values)?;
    let mut read = Vec::with_capacity(N);
    for d in table {
        let v = if rule(d.name, &read)? {
            r.int(d.name, d.lo, d.hi)?
        } else {
            0
        };
        read.push(v);
    }
    Ok(std::array::from_fn(|i| read[i]))
}
