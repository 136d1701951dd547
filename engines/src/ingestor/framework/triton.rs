//! The machinery every Triton family shares: the packed entry's configuration, the launch
//! signature of a named parameter list, the kernel arguments of a Triton launch, and the
//! dispatch-handler methods of a packed-entry-only family.

use super::graph::na;
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::KernelArgValue;
use crate::ingestor::dispatch::{PreparedLaunch, default_kernel_args};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::DataType;

/// The kernel signature of a Triton parameter list in its natural layout, named: parameters
/// ending in `_ptr` or `scratch` are pointers (`global_buffer`, 8 bytes, 8-byte aligned), every
/// other one a 32-bit value (`by_value`, 4 bytes), each at the next offset its alignment allows.
pub(crate) fn natural_signature(names: Vec<&'static str>) -> Vec<KernelArgument> {
    let mut off = 0u32;
    names
        .into_iter()
        .map(|n| {
            let (kind, size) = if n.ends_with("_ptr") || n.ends_with("scratch") {
                ("global_buffer", 8)
            } else {
                ("by_value", 4)
            };
            off = off.div_ceil(size) * size;
            let a = KernelArgument::named(kind, size, off, n);
            off += size;
            a
        })
        .collect()
}

/// Fewest tiles a spec entry larger than 64×128 must give to be chosen by the static rule.
pub const MIN_TILES: i64 = 128;
pub use crate::ingestor::kernel::TritonConfig;

/// True when saved launch values select a Triton kernel's specialized entry (`spec` = 1).
pub(crate) fn is_spec(values: &LaunchValues) -> bool {
    matches!(values.get("spec"), Some(LaunchValue::Int(1)))
}

/// The kernel arguments of a Triton launch, shared by every Triton contract: on a specialized
/// entry (`spec` 1, conv fprop's channels-first 2 and 3, matmul's `bcol` 4), first refuses (BAD_PARAM) any of the first three pointer tensors or the residual
/// (`res.uid`; the operands the kernel's alignment hints cover, named `operands` for the
/// `kernel` in the message) bound to a device address that is not 16-byte aligned; then the
/// three operand pointers, one pointer per name of `optional` (launch-value names such as
/// `bias.uid`, in kernel order: the tensor's address when the launch has the value, else
/// null), the integers, and the two null scratch pointers every packed entry takes. The
/// launch's `pointer_uids` hold the three operands, then the present optional tensors in
/// `optional`'s order.
///
/// # Errors
/// BAD_PARAM `tensor UID <u> is at <addr>; this plan runs the specialized <kernel> kernel,
/// which needs 16-byte aligned <operands>`; the errors of `default_kernel_args`.
pub(crate) fn triton_kernel_args(
    launch: &PreparedLaunch,
    tensors: &[TensorBinding<'_>],
    kernel: &str,
    operands: &str,
    optional: &[&str],
) -> PluginResult<Vec<KernelArgValue>> {
    let uid_of = |name: &str| match launch.launch_values.get(name) {
        Some(LaunchValue::Int(u)) => Some(*u),
        _ => None,
    };
    if matches!(
        launch.launch_values.get("spec"),
        Some(LaunchValue::Int(1..=5))
    ) {
        let mut hinted = launch.pointer_uids[..launch.pointer_uids.len().min(3)].to_vec();
        hinted.extend(uid_of("res.uid"));
        for uid in &hinted {
            if let Some(BufferRef::Device { addr, .. }) =
                tensors.iter().find(|t| t.uid == *uid).map(|t| &t.data)
            {
                if addr % 16 != 0 {
                    return Err(PluginError::bad_param(format!(
                        "tensor UID {uid} is at {addr:#x}; this plan runs the specialized {kernel} kernel, which needs 16-byte aligned {operands}"
                    )));
                }
            }
        }
    }
    let args = default_kernel_args(launch, tensors)?;
    let n_ptr = launch.pointer_uids.len();
    let (ptrs, ints) = args.split_at(n_ptr);
    let mut out = ptrs[..n_ptr.min(3)].to_vec();
    let mut next = out.len();
    for name in optional {
        if uid_of(name).is_some() && next < n_ptr {
            out.push(ptrs[next]);
            next += 1;
        } else {
            out.push(KernelArgValue::Pointer(0));
        }
    }
    out.extend_from_slice(&ptrs[next..]);
    out.extend_from_slice(ints);
    out.push(KernelArgValue::Pointer(0));
    out.push(KernelArgValue::Pointer(0));
    Ok(out)
}

impl TritonConfig {
    /// The config a restore reads from launch values (`spec` as the `spec` value holds it:
    /// 0 generic, 1 spec, 2 nchw, 3 nchwt, 4 bcol, 5 grouped; the data type and stage count are not
    /// saved, so they are empty and 0).
    pub fn restored(
        family: &str,
        variant: i64,
        block: [i64; 3],
        group_m: i64,
        num_warps: i64,
        shared_bytes: i64,
        warp_size: i64,
    ) -> TritonConfig {
        let mut c = TritonConfig {
            family: family.to_string(),
            dtype: String::new(),
            spec: false,
            channels_first: false,
            transposing: false,
            b_col: false,
            grouped: false,
            block,
            group_m,
            num_warps,
            num_stages: 0,
            shared_bytes,
            warp_size,
        };
        c.set_variant(variant);
        c
    }

    /// Sets the variant flags from `variant` as the `spec` launch value holds it (0 generic,
    /// 1 spec, 2 nchw, 3 nchwt, 4 bcol, 5 grouped).
    pub fn set_variant(&mut self, variant: i64) {
        self.spec = variant == 1;
        self.channels_first = variant == 2;
        self.transposing = variant == 3;
        self.b_col = variant == 4;
        self.grouped = variant == 5;
    }

    /// Threads per block, `num_warps · warp_size`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) `launch values 'warp_size' and 'num_warps' of dispatch
    /// '<d>' give <t> threads per block; the contract takes warp size 32 or 64 and at most 1024
    /// threads`.
    pub fn threads_per_block(&self, dispatch: &str) -> PluginResult<i64> {
        let threads = self.num_warps * self.warp_size;
        if !(self.warp_size == 32 || self.warp_size == 64) || threads > 1024 {
            return Err(crate::ingestor::payload::refusal::incompatible(format!(
                "launch values 'warp_size' and 'num_warps' of dispatch '{}' give {threads} threads per block; the contract takes warp size 32 or 64 and at most 1024 threads",
                crate::ingestor::payload::refusal::quote(dispatch)
            )));
        }
        Ok(threads)
    }

    /// The variant as the `spec` launch value holds it: 0 generic, 1 spec, 2 nchw, 3 nchwt,
    /// 4 bcol, 5 grouped.
    pub fn variant_code(&self) -> i64 {
        if self.spec {
            1
        } else if self.channels_first {
            2
        } else if self.transposing {
            3
        } else if self.b_col {
            4
        } else if self.grouped {
            5
        } else {
            0
        }
    }

    /// The config of packed `kernel` (its `triton.json` record, [`KernelDescriptor::config`])
    /// when it is an entry of `family` built for the graph's data type `graph_dtype` (a `DataType` value), shared by every Triton contract.
    /// A config without a data type (a restored plan's stand-in descriptor,
    /// [`crate::ingestor::dispatch::DispatchHandler::saved_config`]) takes the graph's.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k> is not a packed <family> entry` or
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`.
    pub fn for_kernel(
        kernel: &KernelDescriptor,
        family: &str,
        graph_dtype: i8,
    ) -> PluginResult<TritonConfig> {
        let mut config = kernel
            .config
            .clone()
            .filter(|c| c.family == family)
            .ok_or_else(|| {
                na(format!(
                    "kernel {} is not a packed {family} entry",
                    kernel.describe()
                ))
            })?;
        if config.dtype.is_empty() {
            // A restored plan's configuration (no data type saved): its stand-in descriptor
            // prepares the saved kernel for the graph the plan was loaded with, whose data
            // types the load proved equal to those the plan was saved for.
            if let Some(name) = dtype_name(graph_dtype) {
                config.dtype = name.to_string();
            }
        }
        if dtype_value(&config.dtype) != Some(graph_dtype) {
            return Err(na(format!(
                "kernel {} is built for {}, the graph is {:?}",
                kernel.describe(),
                config.dtype,
                DataType(graph_dtype)
            )));
        }
        Ok(config)
    }

    /// Parses `<family>_<dtype>_<variant>_<bm>x<bn>x<bk>_g<g>_w<w>_s<s>_sh<shared>_ws<warp>` (a
    /// helper for tests and placeholder configs: the engine reads packed entries'
    /// configurations from their `triton.json` records, never from a kernel name)
    /// (the family may contain `_`);
    /// `None` for any other name.
    pub fn parse(name: &str) -> Option<TritonConfig> {
        let all: Vec<&str> = name.split('_').collect();
        if all.len() < 9 {
            return None;
        }
        // The family may hold underscores (`conv_fprop`); the last eight parts are the config.
        let family = all[..all.len() - 8].join("_");
        let p = &all[all.len() - 9..];
        let num = |s: &str, pre: &str| s.strip_prefix(pre)?.parse::<i64>().ok();
        let tile: Vec<i64> = p[3]
            .split('x')
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        let variant = match p[2] {
            "generic" => 0,
            "spec" => 1,
            "nchw" => 2,
            "nchwt" => 3,
            "bcol" => 4,
            "grouped" => 5,
            _ => return None,
        };
        let mut c = TritonConfig {
            family,
            dtype: p[1].to_string(),
            spec: false,
            channels_first: false,
            transposing: false,
            b_col: false,
            grouped: false,
            block: <[i64; 3]>::try_from(tile).ok()?,
            group_m: num(p[4], "g")?,
            num_warps: num(p[5], "w")?,
            num_stages: num(p[6], "s")?,
            shared_bytes: num(p[7], "sh")?,
            warp_size: num(p[8], "ws")?,
        };
        c.set_variant(variant);
        Some(c)
    }
}

/// The `DataType` value of a config dtype spelling.
fn dtype_value(s: &str) -> Option<i8> {
    match s {
        "f32" | "tf32" => Some(DataType::FLOAT.0),
        "f16" => Some(DataType::HALF.0),
        "bf16" => Some(DataType::BFLOAT16.0),
        _ => None,
    }
}

/// The config dtype spelling of a `DataType` value (`f32`, `f16`, `bf16`).
fn dtype_name(v: i8) -> Option<&'static str> {
    match v {
        v if v == DataType::FLOAT.0 => Some("f32"),
        v if v == DataType::HALF.0 => Some("f16"),
        v if v == DataType::BFLOAT16.0 => Some("bf16"),
        _ => None,
    }
}

/// Kernel integer arguments as the Triton kernels take them: each an `i32` (the contracts
/// bound every saved integer to `i32`).
pub fn i32_args(ints: Vec<i64>) -> Vec<KernelArgValue> {
    ints.into_iter()
        .map(|v| KernelArgValue::I32(v as i32))
        .collect()
}
