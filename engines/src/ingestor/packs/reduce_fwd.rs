//! Reduce forward pack, contract `hipkernel.reduce_fwd.dispatch.v1`: one reduction node (every
//! `ReductionMode` the CPU reference engine implements), and the softmax and log-softmax graph
//! patterns, each as ONE launch of the Triton kernel of `engines/kernels/triton/reduce_fwd.py`.
//! The contract is named after its family, as `hipkernel.norm_fwd.dispatch.v1` is.
//!
//! Graphs served (else `NOT_APPLICABLE` naming why):
//! - one `reduction` node x → y, mode ADD, MUL, MIN_OP, MAX_OP, AMAX, AVG, NORM1, NORM2 or
//!   MUL_NO_ZEROS (`reference/ops/reduce.rs`: AMAX = max |x| from 0, AVG = sum / count, NORM1
//!   = Σ|x|, NORM2 = √Σx², MUL_NO_ZEROS = product of the non-zero values, 1 when none);
//!   the reduced axes are those where y's dim is 1 and x's is larger, any set of them;
//! - softmax over the reduced axes of a MAX reduction: `m = reduce_max(x)`, `d = x − m`
//!   (SUB), `e = exp(d)` (EXP), `s = reduce_add(e)`, `y = e / s` (DIV), five nodes in any
//!   order, the ADD reduction's output dims equal to the MAX reduction's;
//! - log-softmax: the same with `l = log(s)` (LOG) and `y = d − l` (SUB) in place of the DIV,
//!   six nodes;
//!
//!   where m, d, e, s (and l) are virtual tensors, x and y are not, and each intermediate feeds
//!   exactly the nodes of the pattern. The kernel holds the intermediates in f32 (the reference
//!   engine rounds a virtual tensor to its declared type: for HALF or BFLOAT16 intermediates
//!   the kernel is the more exact of the two, within the 16-bit tolerances).
//!
//! Layout: x (f32, f16 or bf16) is seen as kept × reduced elements. The kept axes (y's
//! non-reduced axes) of x and y together, and the reduced axes of x (and of y for the softmax
//! patterns) each collapse into at most two strided groups (axes of extent 1 dropped; adjacent
//! axes merge when their strides nest for every tensor): a dense tensor reduced over any
//! single run of axes, over leading and trailing axes, or over the middle axis, collapses; an
//! axis set that leaves three separated groups is refused. y is x's type or f32. Every extent
//! and element stride must be in [0, 2147483647] (offsets are int64 in the kernel).
//!
//! Entries: `reduce_fwd_<dtype>_<spec|generic>_<bm>x<bn>x1_g1_w<w>_s1_sh<shared>_ws<warp>`: `bm`
//! kept rows per program, the reduced axes walked in `bn`-element chunks (softmax: one chunk
//! held in registers when the reduced extent fits it, else an online pass and a write pass).
//! `spec` = the inner reduced strides `sxri` (and `syri` for softmax) are 1, `rin` and x's
//! other strides (`sxo sxi sxro`) multiples of 16, for softmax y's too (`syo syi syro`; a
//! reduction's y strides are free), x and y 16-byte aligned (checked at execute,
//! `BAD_PARAM`); `generic` = anything else.
//!
//! Static rule (`build` without benchmarking): the first applicable entry in pack order (spec
//! before generic, larger chunks first), where an entry other than the family's smallest whose
//! chunk `bn` is at least twice the inner reduced extent `rin` is refused, and a reduction
//! (not softmax) takes chunks of at most 1024 elements. With
//! `KNOB_BENCHMARK` every entry the rule does not refuse (each admitted chunk, spec and
//! generic where the layout allows) is a candidate and the fastest is kept. So softmax rows
//! of more than 4096 elements take the 8192 chunk (one row per program, 16 warps; above 8192 the
//! online two-pass path), 2049..=4096 the 4096 chunk (one row, 4 warps), 513..=2048 the 1024
//! chunk (one row, 4 warps), shorter rows eight rows of 128; reductions take one row of 1024
//! per program above 512 elements, else eight rows of 128. The configs come from a
//! benchmarking build of 16 more (`SWEEP` in `reduce_fwd.py`) on an H200 against PyTorch 2.11
//! in the same run (`hipdnn-bench triton --only reduce` with `HIPDNN_BENCH_SWEEP`, warm L2):
//! softmax / log-softmax over 4096 rows of 1024 at 1.05–1.07× / 0.81–0.85× PyTorch's speed
//! (the four-row 8-warp tile before: 0.38–0.56×), over 32768 rows of 4096 at 1.42–2.53×; the
//! sum over 4096 rows of 1024 at 1.02–1.10×, over 32768 rows of 4096 at 0.98× (f16) and 1.04×
//! (f32) (`docs/PERFORMANCE.md`). A reduction to
//! few outputs of very long groups (one program walks one group) is not split across
//! programs: correct, not fast.
//!
//! Launch values: [`ReduceFwdInputs`]'s `VALUES` (`dtype` x's `DataType` value; `op` the
//! kernel's: bits 0–4 the `ReductionMode` value 1–9, 16 softmax or 17 log-softmax, bit 5 (32)
//! y is f32, checked as soon as it is read; `kin` divides `rows`, checked once `rin` is read;
//! `syro`, `syri` are 0 for a reduction; `spec` 0 generic, 1 spec). Launch: grid
//! (cdiv(rows, block_m), 1, 1), block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`, workspace 0, scratch pointers null. Kernel arguments: x, y, rows, kin,
//! rout, rin, sxo, sxi, sxro, sxri, syo, syi, syro, syri, yal (0; the spec kernel holds it
//! constant 1: y's row offsets are multiples of 16), op (`by_value` 4; spec drops sxri, syri
//! and yal), the two scratch pointers.

use crate::ingestor::framework::prelude::*;
use hipdnn_backend::ops::reduction as table;
use hipdnn_schema::graph::PointwiseMode;
use hipdnn_schema::graph::ReductionMode;
use std::collections::HashMap;

/// The versioned contract name.
pub const REDUCE_FWD_V1: &str = "hipkernel.reduce_fwd.dispatch.v1";
crate::triton_handler!(ReduceFwdHandler = ReduceFwdInputs);

/// `op` code: softmax over the reduced axes.
pub const OP_SOFTMAX: i64 = 16;
/// `op` code: log-softmax over the reduced axes.
pub const OP_LOG_SOFTMAX: i64 = 17;
/// `op` bit: y is f32 (else x's type).
pub const OP_Y_F32: i64 = 32;

/// Stride value names, in kernel order.
const STRIDES: [&str; 8] = ["sxo", "sxi", "sxro", "sxri", "syo", "syi", "syro", "syri"];
/// The kernel arguments between the shape and `op` the spec variant holds constant 1, as
/// indices into [`STRIDES`] followed by `yal` (y's rows aligned to 16 elements; the generic
/// variant passes 0): `sxri`, `syri` and `yal`.
const SPEC_ONE: [usize; 3] = [3, 7, 8];
/// The tensors' UID values and the kernel's pointer parameters, in kernel order.
const TENSORS: ([&str; 2], [&str; 2]) = crate::tensor_pointers!(x, y);
/// Strides the spec variant needs to be multiples of 16 (indices into [`STRIDES`]): x's.
const SPEC_DIV16: [usize; 3] = [0, 1, 2];
/// y strides a spec softmax launch needs to be multiples of 16 (indices into [`STRIDES`]).
const SPEC_Y_DIV16: [usize; 3] = [4, 5, 6];
/// The chunk of the family's smallest entry (never refused by the static rule).
const SMALLEST_CHUNK: i64 = 128;
/// The largest chunk the static rule gives a reduction (softmax takes any): on an H200 the
/// f16 sum over rows of 4096 ran at 0.118 ms with the 4096 chunk and 0.073 ms with 4 rows of
/// 1024 per program (32768 rows; Triton JIT of the same kernel, 0.071 ms with 2048).
const REDUCTION_MAX_CHUNK: i64 = 1024;

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    ReduceFwdInputs::signature(spec)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceFwdInputs {
    /// UIDs of x and y.
    pub uids: [i64; 2],
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// The kernel's op code (module docs).
    pub op: i64,
    /// rows (kept elements), kin (the inner kept group's extent), rout and rin (the reduced
    /// groups' extents).
    pub shape: [i64; 4],
    /// sxo, sxi, sxro, sxri, syo, syi, syro, syri (elements).
    pub strides: [i64; 8],
    /// Kernel configuration (`block[0]` rows per program, `block[1]` the reduced chunk).
    pub config: TritonConfig,
}

impl ReduceFwdInputs {
    /// Whether the op is softmax or log-softmax (y has x's shape).
    pub fn is_softmax(&self) -> bool {
        self.op & 31 >= OP_SOFTMAX
    }
}

impl TritonFamily for ReduceFwdInputs {
    const FAMILY: &'static str = "reduce_fwd";
    const CONTRACT: &'static str = REDUCE_FWD_V1;
    const VALUES: &'static [IntValue] = &concat::<22>(&[
        &[int("op", 1, 63)],
        &[int("rows", 1, I32_MAX), int("kin", 1, I32_MAX)],
        &[int("rout", 1, I32_MAX), int("rin", 1, I32_MAX)],
        &strides(STRIDES),
        &tile_config(1, (1, 64), (16, 16384)),
        &[uid("x.uid"), uid("y.uid"), int("dtype", 1, 3)],
    ]);
    const POINTERS: &'static [&'static str] = &TENSORS.0;
    const ALIGNED: &'static [&'static str] = &TENSORS.0;
    const ALIGNED_TEXT: &'static str = "16-byte aligned x and y";
    const SPEC_HINTS: &'static str = "unit inner reduced strides, the inner reduced extent and x's other strides multiples of 16; for softmax y's too";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let p = match_pattern(graph)?;
        let softmax = p.op >= OP_SOFTMAX;
        let xt = tensor(graph, p.x)?;
        let yt = tensor(graph, p.y)?;
        let dtype = float_dtype(&xt, "reduce_fwd", "x")?;
        // y of f32 behind f32 x is no conversion: the bit stays clear.
        let y_f32 = if dtype == DataType::FLOAT {
            0
        } else {
            OP_Y_F32
        };
        let op = p.op | f32_bit(&yt, dtype, "reduce_fwd", "y", y_f32)?;
        let (xd, xs) = dims_strides(&xt);
        let (yd, ys) = dims_strides(&yt);
        let rd = &p.reduced_dims;
        if xd.is_empty() || xd.iter().any(|d| *d < 1) || !table::output_dims_ok(&xd, rd) {
            return Err(na(format!(
                "the reduce_fwd pack needs x dims of at least 1 and reduced dims {rd:?} equal to x's {xd:?} except reduced axes of 1"
            )));
        }
        let max = i64::from(i32::MAX);
        if xs.iter().chain(&ys).any(|s| !(0..=max).contains(s)) {
            return Err(na(format!(
                "the reduce_fwd pack needs element strides in [0, 2147483647]; x strides {xs:?}, y strides {ys:?}"
            )));
        }
        let reduced = |i: usize| rd[i] == 1 && xd[i] != 1;
        let kept: Vec<(i64, Vec<i64>)> = (0..xd.len())
            .filter(|&i| !reduced(i))
            .map(|i| (xd[i], vec![xs[i], ys[i]]))
            .collect();
        let red: Vec<(i64, Vec<i64>)> = (0..xd.len())
            .filter(|&i| reduced(i))
            .map(|i| {
                let mut s = vec![xs[i]];
                if softmax {
                    s.push(ys[i]);
                }
                (xd[i], s)
            })
            .collect();
        let too_big = || {
            na(format!(
                "the reduce_fwd pack needs at most 2147483647 kept and reduced elements; x {xd:?}, reduced to {rd:?}"
            ))
        };
        let kg = collapse_groups(&kept).ok_or_else(too_big)?;
        let rg = collapse_groups(&red).ok_or_else(too_big)?;
        if kg.len() > 2 || rg.len() > 2 {
            return Err(na(format!(
                "the reduce_fwd pack needs the kept axes and the reduced axes each to collapse to at most two strided groups; x dims {xd:?} strides {xs:?}, y strides {ys:?}, reduced to {rd:?}: {} kept and {} reduced groups",
                kg.len(),
                rg.len()
            )));
        }
        // (extent, x stride, y stride) of the outer and inner groups; absent groups extent 1.
        let two = |g: &[(i64, Vec<i64>)]| -> [(i64, i64, i64); 2] {
            let at = |k: &(i64, Vec<i64>)| (k.0, k.1[0], k.1.get(1).copied().unwrap_or(0));
            match g {
                [] => [(1, 0, 0), (1, 0, 0)],
                [a] => [(1, 0, 0), at(a)],
                [a, b, ..] => [at(a), at(b)],
            }
        };
        let [ko, ki] = two(&kg);
        let [ro, ri] = two(&rg);
        let rows = ko.0.checked_mul(ki.0).filter(|v| *v <= max);
        let cols = ro.0.checked_mul(ri.0).filter(|v| *v <= max);
        let (Some(rows), Some(_)) = (rows, cols) else {
            return Err(too_big());
        };
        if softmax && yd != xd {
            return Err(na(format!(
                "the reduce_fwd pack needs softmax's y with x's dims {xd:?}, not {yd:?}"
            )));
        }
        Ok(ReduceFwdInputs {
            uids: [p.x, p.y],
            dtype: dtype.0,
            op,
            shape: [rows, ki.0, ro.0, ri.0],
            strides: [ko.1, ki.1, ro.1, ri.1, ko.2, ki.2, ro.2, ri.2],
            config: TritonConfig::restored("reduce_fwd", 0, [8, 128, 1], 1, 4, 0, 32),
        })
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// For softmax also y's unit inner reduced stride and `syo syi syro` multiples of 16 (the
    /// spec kernel's `yal` = 1 takes y's row offsets as multiples of 16).
    fn fits_spec(&self) -> bool {
        let s = self.strides;
        s[3] == 1
            && self.shape[3] % 16 == 0
            && SPEC_DIV16.iter().all(|&i| s[i] % 16 == 0)
            && (!self.is_softmax() || (s[7] == 1 && SPEC_Y_DIV16.iter().all(|&i| s[i] % 16 == 0)))
    }

    /// The static rule (module docs).
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let bn = self.config.block[1];
        let rin = self.shape[3];
        chunk_rule(kernel, bn, SMALLEST_CHUNK, rin, "the inner reduced extent")?;
        if !self.is_softmax() && bn > REDUCTION_MAX_CHUNK {
            return Err(static_rule(
                kernel,
                format_args!(
                    "a reduction walks its rows in chunks of at most {REDUCTION_MAX_CHUNK} elements, not {bn}"
                ),
            ));
        }
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let c = &self.config;
        let mut v = vec![self.op];
        v.extend(self.shape);
        v.extend(self.strides);
        v.extend(tile_config_ints(c));
        v.extend([self.uids[0], self.uids[1], self.dtype.into()]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let config = tile_config_of(Self::FAMILY, &v[13..19]);
        ReduceFwdInputs {
            op: v[0],
            shape: [v[1], v[2], v[3], v[4]],
            strides: [v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]],
            config,
            uids: [v[19], v[20]],
            dtype: v[21] as i8,
        }
    }

    /// Once `op` is read: `launch value 'op' of dispatch '<d>' must be a reduction mode 1..9,
    /// 16 (softmax) or 17 (log-softmax), with bit 32 for an f32 y; the plan holds <op>`; once
    /// `rin` is read: `launch value 'kin' of dispatch '<d>' must divide 'rows' (<rows>); the
    /// plan holds <kin>`.
    fn check_read(dispatch: &str, _: &LaunchValues, read: &[i64]) -> PluginResult<()> {
        let d = quote(dispatch);
        let mode =
            |code: i64| (1..=9).contains(&code) || [OP_SOFTMAX, OP_LOG_SOFTMAX].contains(&code);
        match *read {
            [op] if !mode(op & 31) => Err(incompatible(format!(
                "launch value 'op' of dispatch '{d}' must be a reduction mode 1..9, 16 (softmax) or 17 (log-softmax), with bit 32 for an f32 y; the plan holds {op}"
            ))),
            [_, rows, kin, _, _] if rows % kin != 0 => Err(incompatible(format!(
                "launch value 'kin' of dispatch '{d}' must divide 'rows' ({rows}); the plan holds {kin}"
            ))),
            _ => Ok(()),
        }
    }

    /// `launch values of dispatch '<d>' name a reduction, whose 'syro' and 'syri' must be 0`;
    /// `launch values of dispatch '<d>' name the spec variant, whose 'sxri' (and for softmax
    /// 'syri') must be 1, 'rin', 'sxo', 'sxi', 'sxro' (and for softmax 'syo', 'syi', 'syro')
    /// multiples of 16`; the geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let d = quote(dispatch);
        if !self.is_softmax() && (self.strides[6] != 0 || self.strides[7] != 0) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name a reduction, whose 'syro' and 'syri' must be 0"
            )));
        }
        if self.config.spec && !self.fits_spec() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'sxri' (and for softmax 'syri') must be 1, 'rin', 'sxo', 'sxi', 'sxro' (and for softmax 'syo', 'syi', 'syro') multiples of 16"
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = TENSORS.1.to_vec();
        v.extend(["rows", "kin", "rout", "rin"]);
        let args = [&STRIDES[..], &["yal"]].concat();
        v.extend(spec_kept(&args, spec, &SPEC_ONE));
        v.extend(["op", "global_scratch", "profile_scratch"]);
        v
    }

    /// The shape, the variant's strides, yal (generic only: 0, the generic kernel takes no
    /// alignment of y's rows), op.
    fn scalars(&self) -> Vec<i64> {
        let mut v = self.shape.to_vec();
        let args = [&self.strides[..], &[0]].concat();
        v.extend(spec_kept(&args, self.config.spec, &SPEC_ONE));
        v.push(self.op);
        v
    }

    /// Grid (cdiv(rows, block_m), 1, 1). Errors: [`TritonConfig::threads_per_block`]'s text.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(block_geometry(
            c,
            [((self.shape[0] + c.block[0] - 1) / c.block[0]) as u32, 1, 1],
            threads,
        ))
    }
}

/// Collapses axes `(extent, strides per tensor)` listed outer to inner into groups: extent-1
/// axes are dropped, and an axis merges into the group inside it when, for every tensor, its
/// stride is the group's stride times the group's extent. Returns `(extent, strides)` per
/// group, outer to inner; `None` on an extent overflow.
fn collapse_groups(axes: &[(i64, Vec<i64>)]) -> Option<Vec<(i64, Vec<i64>)>> {
    let mut groups: Vec<(i64, Vec<i64>)> = Vec::new();
    for (d, s) in axes.iter().rev() {
        if *d == 1 {
            continue;
        }
        match groups.last_mut() {
            Some((gd, gs))
                if s.iter()
                    .zip(gs.iter())
                    .all(|(a, b)| b.checked_mul(*gd) == Some(*a)) =>
            {
                *gd = gd.checked_mul(*d)?;
            }
            _ => groups.push((*d, s.clone())),
        }
    }
    groups.reverse();
    Some(groups)
}

/// The reduce_fwd view of a graph: x, y, op, the reduced-axis mask.
struct Pattern {
    x: i64,
    y: i64,
    /// The reduction mode value, or [`OP_SOFTMAX`] / [`OP_LOG_SOFTMAX`].
    op: i64,
    /// Dims of the reduced tensor (the reduction's output; softmax: the MAX output).
    reduced_dims: Vec<i64>,
}

/// A pointwise node: (mode, in_0, in_1, out).
type Pw = (PointwiseMode, i64, Option<i64>, i64);
/// A reduction node: (mode, in, out).
type Red = (ReductionMode, i64, i64);

fn read_nodes(nodes: &[Node<'_>]) -> PluginResult<(Vec<Pw>, Vec<Red>)> {
    let (mut pws, mut reds) = (Vec::new(), Vec::new());
    for n in nodes {
        if let Some(a) = n.attributes_as_pointwise_attributes() {
            if a.in_2_tensor_uid().is_some() || a.axis_tensor_uid().is_some() {
                return Err(na(
                    "the reduce_fwd pack serves softmax patterns of unary and binary pointwise nodes; a node has a third input or an axis tensor",
                ));
            }
            pws.push((
                a.operation(),
                a.in_0_tensor_uid(),
                a.in_1_tensor_uid(),
                a.out_0_tensor_uid(),
            ));
        } else if let Some(a) = n.attributes_as_reduction_attributes() {
            reds.push((a.mode(), a.in_tensor_uid(), a.out_tensor_uid()));
        } else {
            return Err(na(format!(
                "the reduce_fwd pack serves a reduction node or the softmax / log-softmax patterns of reduction and pointwise nodes; node '{}' is a {:?} node",
                n.name().unwrap_or(""),
                n.attributes_type()
            )));
        }
    }
    Ok((pws, reds))
}

fn match_pattern(graph: &OperationGraph) -> PluginResult<Pattern> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() == 1 {
        let Some(a) = nodes[0].attributes_as_reduction_attributes() else {
            return Err(na(format!(
                "the reduce_fwd pack serves a reduction node or the softmax / log-softmax patterns of reduction and pointwise nodes; node '{}' is a {:?} node",
                nodes[0].name().unwrap_or(""),
                nodes[0].attributes_type()
            )));
        };
        let mode = a.mode();
        if !table::is_operator(mode) {
            return Err(na(format!(
                "the reduce_fwd pack serves the reduction modes ADD, MUL, MIN_OP, MAX_OP, AMAX, AVG, NORM1, NORM2 and MUL_NO_ZEROS, not {mode:?}"
            )));
        }
        let yt = tensor(graph, a.out_tensor_uid())?;
        return Ok(Pattern {
            x: a.in_tensor_uid(),
            y: a.out_tensor_uid(),
            op: i64::from(mode.0),
            reduced_dims: dims_strides(&yt).0,
        });
    }
    if nodes.len() != 5 && nodes.len() != 6 {
        return Err(na(format!(
            "the reduce_fwd pack serves one reduction node, softmax (5 nodes) or log-softmax (6 nodes); this graph has {} nodes",
            nodes.len()
        )));
    }
    let (pws, reds) = read_nodes(&nodes)?;
    let not = |what: &str| {
        na(format!(
            "the reduce_fwd pack serves softmax (MAX reduction → SUB → EXP → ADD reduction → DIV) and log-softmax (… ADD reduction → LOG → SUB); this graph {what}"
        ))
    };
    let red = |mode: ReductionMode| reds.iter().find(|r| r.0 == mode).copied();
    let (Some(max), Some(sum)) = (red(ReductionMode::MAX_OP), red(ReductionMode::ADD)) else {
        return Err(not("has no MAX and ADD reduction pair"));
    };
    if reds.len() != 2 {
        return Err(not("has more than two reduction nodes"));
    }
    let (x, m) = (max.1, max.2);
    let pw = |mode: PointwiseMode, a: i64, b: Option<i64>| {
        pws.iter()
            .find(|p| p.0 == mode && p.1 == a && p.2 == b)
            .map(|p| p.3)
    };
    let d = pw(PointwiseMode::SUB, x, Some(m))
        .ok_or_else(|| not("has no SUB of the MAX reduction's output from its input"))?;
    let e =
        pw(PointwiseMode::EXP, d, None).ok_or_else(|| not("has no EXP of x minus its maximum"))?;
    if sum.1 != e {
        return Err(not("does not sum the EXP output with the ADD reduction"));
    }
    let s = sum.2;
    let (y, op, virt) = if nodes.len() == 5 {
        let y = pw(PointwiseMode::DIV, e, Some(s))
            .ok_or_else(|| not("has no DIV of EXP by its sum"))?;
        (y, OP_SOFTMAX, vec![m, d, e, s])
    } else {
        let l = pw(PointwiseMode::LOG, s, None).ok_or_else(|| not("has no LOG of the sum"))?;
        let y = pw(PointwiseMode::SUB, d, Some(l))
            .ok_or_else(|| not("has no SUB of the log-sum from x minus its maximum"))?;
        (y, OP_LOG_SOFTMAX, vec![m, d, e, s, l])
    };
    // Every node is one of the pattern's (5 or 6 distinct outputs found above).
    let mut outs: Vec<i64> = virt.clone();
    outs.push(y);
    outs.sort_unstable();
    outs.dedup();
    if outs.len() != nodes.len() {
        return Err(not("has nodes outside the pattern"));
    }
    // Each intermediate virtual, used only inside the pattern; x an input of the graph.
    let mut uses: HashMap<i64, usize> = HashMap::new();
    for p in &pws {
        *uses.entry(p.1).or_default() += 1;
        if let Some(b) = p.2 {
            *uses.entry(b).or_default() += 1;
        }
    }
    for r in &reds {
        *uses.entry(r.1).or_default() += 1;
    }
    let want_uses = |u: i64| -> usize {
        if (u == d && op == OP_LOG_SOFTMAX) || (u == e && op == OP_SOFTMAX) {
            2
        } else {
            1
        }
    };
    for &u in &virt {
        let t = tensor(graph, u)?;
        if !t.virtual_() {
            return Err(na(format!(
                "the reduce_fwd pack runs the softmax pattern as one kernel and needs its intermediate tensor uid {u} to be virtual"
            )));
        }
        if uses.get(&u).copied().unwrap_or(0) != want_uses(u) {
            return Err(not(&format!(
                "uses intermediate tensor uid {u} outside the pattern"
            )));
        }
        let dt = t.data_type();
        if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dt) {
            return Err(na(format!(
                "the reduce_fwd pack needs the softmax intermediates FLOAT, HALF or BFLOAT16; tensor uid {u} is {dt:?}"
            )));
        }
    }
    if outs.contains(&x) || uses.get(&x).copied() != Some(2) {
        return Err(not("uses x outside the pattern"));
    }
    for (u, what) in [(x, "x"), (y, "y")] {
        if tensor(graph, u)?.virtual_() {
            return Err(na(format!(
                "the reduce_fwd pack needs the softmax {what} (tensor uid {u}) in memory, not virtual"
            )));
        }
    }
    let (xd, _) = dims_strides(&tensor(graph, x)?);
    let (md, _) = dims_strides(&tensor(graph, m)?);
    let (sd, _) = dims_strides(&tensor(graph, s)?);
    for (u, what) in [(d, "x − max"), (e, "exp(x − max)"), (y, "y")] {
        let (td, _) = dims_strides(&tensor(graph, u)?);
        if td != xd {
            return Err(na(format!(
                "the reduce_fwd pack needs the softmax tensor {what} (uid {u}) with x's dims {xd:?}, not {td:?}"
            )));
        }
    }
    if sd != md {
        return Err(na(format!(
            "the reduce_fwd pack needs the softmax sum's dims {sd:?} equal to the maximum's {md:?}"
        )));
    }
    if op == OP_LOG_SOFTMAX {
        let l = virt[4];
        let (ld, _) = dims_strides(&tensor(graph, l)?);
        if ld != md {
            return Err(na(format!(
                "the reduce_fwd pack needs the log-sum's dims {ld:?} equal to the maximum's {md:?}"
            )));
        }
    }
    Ok(Pattern {
        x,
        y,
        op,
        reduced_dims: md,
    })
}
