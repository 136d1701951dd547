//! Pointwise pack, contract `hipkernel.pointwise.dispatch.v3`: a graph of up to
//! [`MAX_NODES`] pointwise nodes (every `PointwiseMode` the SDK builds: unary, binary,
//! `BINARY_SELECT`, the backward forms) over up to [`MAX_INPUTS`] graph inputs, fused into ONE
//! launch of the Triton kernel of `engines/kernels/triton/pointwise_fused.py`; the kernel
//! interprets a small node program per element, so intermediate (virtual) tensors are never
//! stored.
//!
//! Semantics are the CPU reference engine's (`reference/ops/pointwise.rs`, nodes run in
//! order, each virtual intermediate rounded to its declared type): f32 arithmetic, numpy
//! broadcasting of every tensor to the last node's output, IEEE division and square root,
//! maxNum/minNum for MAX_OP/MIN_OP, the reference's erf fit (in f64), the vendor device library
//! for exp, log, log1p, sin, tan and tanh (a few f32 ulps from the host's libm), no FP
//! contraction. Backward modes read `in_0` = dy and `in_1` = the forward x.
//!
//! Graphs served (else `NOT_APPLICABLE` with a message that names why, so the other engines
//! serve the graph): only pointwise nodes, at most [`MAX_NODES`] of them, forming a DAG with
//! exactly one sink whose output is a non-virtual tensor and every other node output virtual
//! (f32, f16 or bf16); at most [`MAX_INPUTS`] distinct graph inputs (one node: its 1–3 operands
//! as listed), none of them a pass-by-value scalar; every input dims broadcasting to the
//! output's (right-aligned, equal or 1), non-negative strides; tensors f32, f16 or bf16 (one
//! 16-bit type per graph; the entry's type is that 16-bit type, else f32) or BOOLEAN (inputs
//! and the output, generic entries only); `GEN_INDEX` only where its output has the last
//! node's dims, with the product of the dims after its axis and the axis extent at most 2^24.
//! Dims of extent 1 are dropped and adjacent dims that every tensor walks contiguously are
//! merged; at most 5 dims may remain; the element count is below 2^31 − 2^16 and every
//! merged extent and stride at most 2147483647.
//!
//! Entries: `pointwise_fused_<dtype>_<spec|generic>_<block>x1x1_g<group>_w<w>_s1_sh<shared>_ws<warp>`
//! (`block` elements per program; `group` the mode group compiled in: 1 every mode and
//! chains, 2 one node of a [`LIGHT_MODES`] mode only — lean entries with few registers, which
//! is what keeps a single ADD at memory speed). `spec` (kernel `hipdnn_pointwise_flat`): every input dense
//! row-major over the output's elements or ONE element, y dense row-major, no BOOLEAN tensor,
//! the element count a multiple of 16 and every pointer 16-byte aligned (checked at execute,
//! `BAD_PARAM`): loads and stores are 128-bit. `generic` (kernel `hipdnn_pointwise`): 5-D
//! strides for every input and for y. A group 2 entry refuses graphs of several nodes or of a
//! heavy mode. Static rule: the first applicable entry in pack order (spec before generic,
//! larger blocks first — light entries have the larger blocks), where an entry whose block is
//! above 1024 elements is refused for fewer than 2^20 elements (a smaller block keeps every
//! multiprocessor busy); 16-bit types pack a 4096-element light spec entry ahead of the 2048
//! one (two 128-bit accesses per thread and tensor). Benchmarking (engine knob `KNOB_BENCHMARK`) times every applicable
//! entry and keeps the fastest.
//!
//! Launch values (int unless said): `x0.uid` … `x3.uid` (the first `n_in` present), `y.uid`,
//! `dtype` (the entry's `DataType` value: 1 f32, 2 f16, 3 bf16), `d0`..`d4` in [1,
//! 2147483647] (merged output dims right-aligned to 5-D), `s<t><k>` (t = 0..3 input, k = 0..4
//! dim) and `sy0`..`sy4` in [0, 2147483647] (element strides; 0 on broadcast dims and for
//! absent inputs), `flags` (the kernel's: bits 2t..2t+1 input t's type, 8..9 y's type: 0 the
//! entry's, 1 f32, 2 BOOLEAN; bits 12+t input t is one element (spec only); bits 16..18
//! `n_in` in [1, 4]; bits 20..22 `n_nodes` in [1, 4]), `op0`..`op3` (node k: mode | a << 8 |
//! b << 12 | c << 16 | rnd << 20, slots 0..3 the inputs and 4 + j node j's result, rnd 0 f32,
//! 1 f16, 2 bf16; 0 for k ≥ n_nodes), `p00`..`p32` (float, f32 values: node k's three
//! parameters — RELU lower clip, upper clip, slope; SWISH/SOFTPLUS beta or ELU alpha first;
//! GEN_INDEX the divisor and extent), and the config values `spec` (0 generic, 1 spec), `block`
//! in [64, 8192], `group` in [1, 2] (2 only for one node of a light mode), `num_warps` in [1,
//! 16], `warp_size` (32 or 64), `shared_bytes` in [0, 262144]. Launch: grid (cdiv(n, block), 1, 1) with n = d0·…·d4, block num_warps·warp_size
//! threads, dynamic shared memory `shared_bytes`, workspace 0, scratch pointers null. Kernel
//! arguments: x0..x3 (null when absent), y, n, [generic: d1..d4, the 20 input strides, sy0..sy4],
//! flags, op0..op3 (`by_value` 4), p00..p32 (`by_value` 4, f32), the two scratch pointers.
use crate::ingestor::framework::head::head_nodes;
use crate::ingestor::framework::launch::static_rule;
use crate::ingestor::framework::prelude::*;
use hipdnn_backend::ops::pointwise as table;
use hipdnn_schema::graph::PointwiseMode as M;
use hipdnn_schema::tensor_value::read_tensor_value;
use std::collections::HashMap;

/// The versioned contract name.
pub const POINTWISE_V3: &str = "hipkernel.pointwise.dispatch.v3";
/// The Triton family name of `triton.json`.
pub const POINTWISE_FUSED_FAMILY: &str = "pointwise_fused";
/// Most pointwise nodes one launch runs.
pub const MAX_NODES: usize = 4;
/// Most distinct graph inputs one launch reads.
pub const MAX_INPUTS: usize = 4;
/// The element count must be below this (int32 offsets plus one block in the flat kernel).
pub const MAX_ELEMENTS: i64 = (1 << 31) - (1 << 16);
/// Largest divisor and extent a `GEN_INDEX` node may have (f32 holds them exactly).
pub const GEN_INDEX_MAX: i64 = 1 << 24;

/// Type code of a tensor in `flags`: the entry's element type.
pub const TYPE_ENTRY: i64 = 0;
/// Type code of a tensor in `flags`: f32 behind a 16-bit entry.
pub const TYPE_F32: i64 = 1;
/// Type code of a tensor in `flags`: BOOLEAN (one byte).
pub const TYPE_BOOL: i64 = 2;

/// The light modes: what a `group` 2 entry compiles (no exp, log, trig, erf or tanh).
pub const LIGHT_MODES: [M; 28] = [
    M::ABS,
    M::ADD,
    M::ADD_SQUARE,
    M::BINARY_SELECT,
    M::CEIL,
    M::CMP_EQ,
    M::CMP_GE,
    M::CMP_GT,
    M::CMP_LE,
    M::CMP_LT,
    M::CMP_NEQ,
    M::DIV,
    M::FLOOR,
    M::GEN_INDEX,
    M::IDENTITY,
    M::LOGICAL_AND,
    M::LOGICAL_NOT,
    M::LOGICAL_OR,
    M::MAX_OP,
    M::MIN_OP,
    M::MUL,
    M::NEG,
    M::RECIPROCAL,
    M::RELU_BWD,
    M::RELU_FWD,
    M::RSQRT,
    M::SQRT,
    M::SUB,
];

crate::triton_handler!(PointwiseV3Handler = PointwiseV3Inputs);

/// Index in `VALUES` of `d0`: dim k's values are `d<k>`, `sy<k>`, `s0<k>` … `s3<k>` from
/// `DIM0 + 6k`.
const DIM0: usize = 5;
/// Index in `VALUES` of `p00` (node k's parameter j at `PARAM0 + 3k + j`), of `op0` and of
/// `spec`.
const PARAM0: usize = 35;
const OP0: usize = 47;
const CONFIG0: usize = 51;

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers and the f32 parameters `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    <PointwiseV3Inputs as TritonFamily>::signature(spec)
}

/// One node of the launch program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointwiseOpCode {
    /// The mode.
    pub mode: M,
    /// Operand slots a, b, c (0..3 the inputs, 4 + j node j's result; 0 when unused).
    pub slots: [u8; 3],
    /// Rounding of the result: 0 keep f32, 1 f16, 2 bf16.
    pub rnd: u8,
    /// The three f32 parameters (module docs).
    pub params: [f32; 3],
}

impl PointwiseOpCode {
    /// The `op<k>` value.
    pub fn encode(&self) -> i64 {
        i64::from(self.mode.0 as u8)
            | i64::from(self.slots[0]) << 8
            | i64::from(self.slots[1]) << 12
            | i64::from(self.slots[2]) << 16
            | i64::from(self.rnd) << 20
    }
}

/// The launch inputs of contract v3.
#[derive(Debug, Clone, PartialEq)]
pub struct PointwiseV3Inputs {
    /// UIDs of the graph inputs, slot order (1..=4).
    pub input_uids: Vec<i64>,
    /// UID of the output (the last node's).
    pub y_uid: i64,
    /// The entry's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// Merged output dims right-aligned to 5-D.
    pub dims: [i64; 5],
    /// Element strides of each input over `dims` (0 on broadcast dims; absent inputs all 0).
    pub strides: [[i64; 5]; MAX_INPUTS],
    /// Element strides of y over `dims`.
    pub y_strides: [i64; 5],
    /// Type code of each input and of y ([`TYPE_ENTRY`], [`TYPE_F32`], [`TYPE_BOOL`]).
    pub types: [i64; MAX_INPUTS + 1],
    /// The node program (1..=4 nodes).
    pub program: Vec<PointwiseOpCode>,
    /// Kernel configuration (`block[0]` elements per program).
    pub config: TritonConfig,
}

fn packed5(d: &[i64; 5]) -> [i64; 5] {
    let mut s = [1i64; 5];
    for k in (0..4).rev() {
        s[k] = s[k + 1] * d[k + 1];
    }
    s
}

impl PointwiseV3Inputs {
    /// The element count `d0·…·d4`.
    pub fn count(&self) -> i64 {
        self.dims.iter().product()
    }

    /// Whether the program is one node of a light mode ([`LIGHT_MODES`]), which the lean
    /// `group` 2 entries serve.
    pub fn is_light(&self) -> bool {
        self.program.len() == 1 && LIGHT_MODES.contains(&self.program[0].mode)
    }

    /// Whether input `t` holds one element (every stride 0).
    fn is_scalar(&self, t: usize) -> bool {
        self.strides[t].iter().all(|s| *s == 0)
    }

    /// Whether the launch satisfies the spec kernel (alignment is checked at execute):
    /// no BOOLEAN tensor, n a multiple of 16, each input dense row-major or one element,
    /// y dense row-major.
    pub fn fits_spec(&self) -> bool {
        let p = packed5(&self.dims);
        // Dense row-major: the packed stride on every dim of extent above 1.
        let dense = |s: &[i64; 5]| (0..5).all(|k| self.dims[k] == 1 || s[k] == p[k]);
        let n_in = self.input_uids.len();
        self.types.iter().all(|t| *t != TYPE_BOOL)
            && self.count() % 16 == 0
            && dense(&self.y_strides)
            && (0..n_in).all(|t| dense(&self.strides[t]) || self.is_scalar(t))
    }

    /// The kernel's `flags` (module docs).
    pub fn flags(&self) -> i64 {
        let mut f = 0;
        for t in 0..self.input_uids.len() {
            f |= self.types[t] << (2 * t);
            if self.config.spec && self.is_scalar(t) {
                f |= 1 << (12 + t);
            }
        }
        f |= self.types[MAX_INPUTS] << 8;
        f |= (self.input_uids.len() as i64) << 16;
        f |= (self.program.len() as i64) << 20;
        f
    }
}

impl TritonFamily for PointwiseV3Inputs {
    const FAMILY: &'static str = POINTWISE_FUSED_FAMILY;
    const CONTRACT: &'static str = POINTWISE_V3;
    #[rustfmt::skip]
    const VALUES: &'static [IntValue] = &[
        int("flags", 0, u32::MAX as i64),
        uid("x0.uid"), uid("x1.uid"), uid("x2.uid"), uid("x3.uid"),
        int("d0", 1, I32_MAX), int("sy0", 0, I32_MAX), int("s00", 0, I32_MAX),
        int("s10", 0, I32_MAX), int("s20", 0, I32_MAX), int("s30", 0, I32_MAX),
        int("d1", 1, I32_MAX), int("sy1", 0, I32_MAX), int("s01", 0, I32_MAX),
        int("s11", 0, I32_MAX), int("s21", 0, I32_MAX), int("s31", 0, I32_MAX),
        int("d2", 1, I32_MAX), int("sy2", 0, I32_MAX), int("s02", 0, I32_MAX),
        int("s12", 0, I32_MAX), int("s22", 0, I32_MAX), int("s32", 0, I32_MAX),
        int("d3", 1, I32_MAX), int("sy3", 0, I32_MAX), int("s03", 0, I32_MAX),
        int("s13", 0, I32_MAX), int("s23", 0, I32_MAX), int("s33", 0, I32_MAX),
        int("d4", 1, I32_MAX), int("sy4", 0, I32_MAX), int("s04", 0, I32_MAX),
        int("s14", 0, I32_MAX), int("s24", 0, I32_MAX), int("s34", 0, I32_MAX),
        float("p00"), float("p01"), float("p02"), float("p10"), float("p11"), float("p12"),
        float("p20"), float("p21"), float("p22"), float("p30"), float("p31"), float("p32"),
        int("op0", 0, I32_MAX), int("op1", 0, I32_MAX), int("op2", 0, I32_MAX),
        int("op3", 0, I32_MAX),
        int("spec", 0, 1), int("block", 64, 8192), int("group", 1, 2), int("num_warps", 1, 16),
        int("shared_bytes", 0, 262_144), int("warp_size", 32, 64),
        uid("y.uid"), int("dtype", 1, 3),
    ];
    const POINTERS: &'static [&'static str] = &["x0.uid", "x1.uid", "x2.uid", "x3.uid", "y.uid"];
    const ALIGNED: &'static [&'static str] = Self::POINTERS;
    const ALIGNED_TEXT: &'static str = "every tensor 16-byte aligned";
    const OPTIONAL: &'static [&'static str] = &["x0.uid", "x1.uid", "x2.uid", "x3.uid"];

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// The spec hints, the light group, then the static rule (module docs).
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        self.config = config.clone();
        if config.spec && !self.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (every input dense or one element, a dense output, no BOOLEAN tensor, a multiple of 16 elements)",
                kernel.describe()
            )));
        }
        if config.group_m == 2 && !self.is_light() {
            let what = if self.program.len() > 1 {
                format!("{} nodes", self.program.len())
            } else {
                format!("mode {:?}", self.program[0].mode)
            };
            return Err(na(format!(
                "kernel {} is a light entry (one node of a light mode); this graph has {what}",
                kernel.describe()
            )));
        }
        if config.block[0] > 1024 && self.count() < 1 << 20 {
            return Err(static_rule(
                kernel,
                format_args!(
                    "a {}-element block for {} elements; a smaller block serves this graph",
                    config.block[0],
                    self.count()
                ),
            ));
        }
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let mut v = vec![self.flags()];
        v.extend((0..MAX_INPUTS).map(|t| self.input_uids.get(t).copied().unwrap_or(0)));
        for k in 0..5 {
            v.extend([self.dims[k], self.y_strides[k]]);
            v.extend(self.strides.iter().map(|s| s[k]));
        }
        let op = |k: usize| self.program.get(k);
        for k in 0..MAX_NODES {
            v.extend(op(k).map_or([0.0; 3], |o| o.params).map(slot_of));
        }
        v.extend((0..MAX_NODES).map(|k| op(k).map_or(0, PointwiseOpCode::encode)));
        let c = &self.config;
        v.extend([c.variant_code(), c.block[0], c.group_m, c.num_warps]);
        v.extend([c.shared_bytes, c.warp_size, self.y_uid, self.dtype.into()]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let flags = v[0];
        let (n_in, n_nodes) = (((flags >> 16) & 7) as usize, ((flags >> 20) & 7) as usize);
        let at = |k: usize, j: usize| v[DIM0 + 6 * k + j];
        let params = |k: usize| std::array::from_fn(|j| f32_of(v[PARAM0 + 3 * k + j]));
        let c = &v[CONFIG0..];
        let mut config = TritonConfig::restored(
            POINTWISE_FUSED_FAMILY,
            c[0],
            [c[1], 1, 1],
            c[2],
            c[3],
            c[4],
            c[5],
        );
        config.num_stages = 1;
        PointwiseV3Inputs {
            input_uids: v[1..1 + n_in].to_vec(),
            y_uid: c[6],
            dtype: c[7] as i8,
            dims: std::array::from_fn(|k| at(k, 0)),
            strides: std::array::from_fn(|t| std::array::from_fn(|k| at(k, 2 + t))),
            y_strides: std::array::from_fn(|k| at(k, 1)),
            types: std::array::from_fn(|t| (flags >> if t == MAX_INPUTS { 8 } else { 2 * t }) & 3),
            program: (0..n_nodes)
                .filter_map(|k| decode_op(v[OP0 + k], k, n_in, n_nodes, params(k)))
                .collect(),
            config,
        }
    }

    /// After `flags`: its known bits, counts and type codes (`launch value 'flags' of
    /// dispatch '<d>' holds <f>, which sets an unknown bit or type code`); `x<t>.uid`
    /// present exactly for the `n_in` inputs (`launch value 'x<t>.uid' of dispatch '<d>'
    /// must be present exactly for the <n> inputs that 'flags' names; flags is <f>`); an
    /// absent input's strides in [0, 0]; each `op<k>` decoded as read (`launch value
    /// 'op<k>' of dispatch '<d>' holds <v>, which is not a node program entry for node <k>
    /// of <n> over <i> inputs`); after the last value: `launch values of dispatch '<d>' give
    /// <n> elements; the contract takes fewer than 2147418112`, `launch values of dispatch
    /// '<d>' name the spec variant, whose tensors must be dense or one element over a
    /// multiple of 16 elements`, and `flags` as the launch gives it.
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let d = r.dispatch();
        let flags = read.first().copied().unwrap_or(0);
        let (n_in, n_nodes) = (((flags >> 16) & 7) as usize, ((flags >> 20) & 7) as usize);
        let bad_flags = || {
            incompatible(format!(
                "launch value 'flags' of dispatch '{d}' holds {flags}, which sets an unknown bit or type code"
            ))
        };
        match i {
            1..=4 => {
                let t = i - 1;
                if t == 0 {
                    let known = 0x3ff | 0xf << 12 | 7 << 16 | 7 << 20;
                    if flags & !known != 0
                        || !(1..=MAX_INPUTS).contains(&n_in)
                        || !(1..=MAX_NODES).contains(&n_nodes)
                        || flags >> 10 & 3 != 0
                    {
                        return Err(bad_flags());
                    }
                    for t in 0..=MAX_INPUTS {
                        let shift = if t == MAX_INPUTS { 8 } else { 2 * t };
                        let ty = (flags >> shift) & 3;
                        if ty == 3 || (t < MAX_INPUTS && t >= n_in && ty != 0) {
                            return Err(bad_flags());
                        }
                    }
                }
                let n = Self::VALUES[i].name;
                if r.has(n) != (t < n_in) {
                    return Err(incompatible(format!(
                        "launch value '{n}' of dispatch '{d}' must be present exactly for the {n_in} inputs that 'flags' names; flags is {flags}"
                    )));
                }
                if t < n_in { r.read(i) } else { Ok(0) }
            }
            DIM0..PARAM0 if (i - DIM0) % 6 >= 2 + n_in => r.int(Self::VALUES[i].name, 0, 0),
            OP0..CONFIG0 => {
                let (k, v) = (i - OP0, r.read(i)?);
                let p = |j: usize| f32_of(read[PARAM0 + 3 * k + j]);
                if (k >= n_nodes && v != 0)
                    || (k < n_nodes && decode_op(v, k, n_in, n_nodes, [p(0), p(1), p(2)]).is_none())
                {
                    return Err(bad_op(&d, k, v, n_nodes, n_in));
                }
                Ok(v)
            }
            _ if i + 1 == Self::VALUES.len() => {
                let mut all = read.to_vec();
                all.push(r.read(i)?);
                let inputs = Self::from_ints(&all);
                let n = inputs.dims.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
                if n.is_none_or(|n| n >= MAX_ELEMENTS) {
                    return Err(incompatible(format!(
                        "launch values of dispatch '{d}' give {} elements; the contract takes fewer than {MAX_ELEMENTS}",
                        n.map_or_else(|| "more than 2^63".to_string(), |n| n.to_string())
                    )));
                }
                if inputs.config.spec && !inputs.fits_spec() {
                    return Err(incompatible(format!(
                        "launch values of dispatch '{d}' name the spec variant, whose tensors must be dense or one element over a multiple of 16 elements"
                    )));
                }
                if inputs.flags() != flags {
                    return Err(bad_flags());
                }
                Ok(all[i])
            }
            _ => r.read(i),
        }
    }

    fn present(&self, name: &str) -> bool {
        let t = Self::OPTIONAL.iter().position(|n| *n == name);
        t.is_some_and(|t| t < self.input_uids.len())
    }

    /// `launch values of dispatch '<d>' name the light group (2), which runs one node of a
    /// light mode`, then the geometry.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        if self.config.group_m == 2 && !self.is_light() {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' name the light group (2), which runs one node of a light mode",
                quote(dispatch)
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let name = |i: usize| Self::VALUES[i].name;
        let mut v = vec!["x0_ptr", "x1_ptr", "x2_ptr", "x3_ptr", "y_ptr", "n"];
        if !spec {
            v.extend((1..5).map(|k| name(DIM0 + 6 * k)));
            for t in 0..MAX_INPUTS {
                v.extend((0..5).map(|k| name(DIM0 + 6 * k + 2 + t)));
            }
            v.extend((0..5).map(|k| name(DIM0 + 6 * k + 1)));
        }
        v.push("flags");
        v.extend((OP0..CONFIG0).map(name));
        v.extend((PARAM0..OP0).map(name));
        v.extend(["global_scratch", "profile_scratch"]);
        v
    }

    /// n, [generic: d1..d4, the 20 input strides, sy0..sy4], flags, op0..op3.
    fn scalars(&self) -> Vec<i64> {
        let mut ints = vec![self.count()];
        if !self.config.spec {
            ints.extend_from_slice(&self.dims[1..]);
            for s in &self.strides {
                ints.extend_from_slice(s);
            }
            ints.extend_from_slice(&self.y_strides);
        }
        ints.push(self.flags());
        for k in 0..MAX_NODES {
            ints.push(self.program.get(k).map_or(0, PointwiseOpCode::encode));
        }
        ints
    }

    /// p00..p32 (0 for nodes past the program).
    fn float_scalars(&self) -> Vec<f32> {
        (0..MAX_NODES)
            .flat_map(|k| self.program.get(k).map_or([0.0; 3], |o| o.params))
            .collect()
    }

    /// Grid (cdiv(n, block), 1, 1); `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s
    /// text.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(LaunchGeometry {
            grid: [((self.count() + c.block[0] - 1) / c.block[0]) as u32, 1, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }
}

fn bad_op(d: &str, k: usize, v: i64, n_nodes: usize, n_in: usize) -> PluginError {
    incompatible(format!(
        "launch value 'op{k}' of dispatch '{d}' holds {v}, which is not a node program entry for node {k} of {n_nodes} over {n_in} inputs"
    ))
}

/// Decodes and checks node `k`'s op value: a mode with a meaning, operand slots that name an
/// input or an earlier node (unused operands 0), a single node reading x0, x1, x2 in order,
/// a rounding code 0–2, `GEN_INDEX` parameters that are integers in [1, 2^24].
fn decode_op(
    v: i64,
    k: usize,
    n_in: usize,
    n_nodes: usize,
    params: [f32; 3],
) -> Option<PointwiseOpCode> {
    if v >> 22 != 0 {
        return None;
    }
    let mode = M((v & 255) as i8);
    let arity = table::arity(mode)?.inputs();
    let slots = [
        (v >> 8 & 15) as u8,
        (v >> 12 & 15) as u8,
        (v >> 16 & 15) as u8,
    ];
    let rnd = (v >> 20 & 3) as u8;
    if rnd == 3 || (k + 1 == n_nodes && rnd != 0) {
        return None;
    }
    for (i, s) in slots.iter().enumerate() {
        let s = usize::from(*s);
        let ok = if i >= arity {
            s == 0
        } else if n_nodes == 1 {
            s == i
        } else if s < 4 {
            s < n_in
        } else {
            s - 4 < k
        };
        if !ok {
            return None;
        }
    }
    if mode == M::GEN_INDEX
        && !params[..2]
            .iter()
            .all(|p| p.fract() == 0.0 && (1.0..=GEN_INDEX_MAX as f32).contains(p))
    {
        return None;
    }
    Some(PointwiseOpCode {
        mode,
        slots,
        rnd,
        params,
    })
}

/// One pointwise node as the pack reads it.
struct PwNode {
    name: String,
    mode: M,
    ins: Vec<i64>,
    out: i64,
    params: [f32; 3],
    axis: i64,
}

fn read_node(node: &Node<'_>) -> PluginResult<PwNode> {
    let name = node.name().unwrap_or("").to_string();
    let Some(a) = node.attributes_as_pointwise_attributes() else {
        return Err(na(format!(
            "the pointwise_fused pack serves graphs of pointwise nodes only; node '{name}' is not one"
        )));
    };
    let mode = a.operation();
    let arity = table::arity(mode)
        .map(table::Arity::inputs)
        .ok_or_else(|| {
            na(format!(
                "the pointwise_fused pack: node '{name}' has mode {mode:?}, which has no meaning"
            ))
        })?;
    let mut ins = vec![a.in_0_tensor_uid()];
    for (i, u) in [a.in_1_tensor_uid(), a.in_2_tensor_uid()]
        .into_iter()
        .enumerate()
        .take(arity - 1)
    {
        ins.push(u.ok_or_else(|| {
            na(format!(
                "the pointwise_fused pack: node '{name}' ({mode:?}) names no in_{}_tensor_uid",
                i + 1
            ))
        })?);
    }
    let params = match mode {
        M::RELU_FWD | M::RELU_BWD => [
            a.relu_lower_clip().unwrap_or(0.0),
            a.relu_upper_clip().unwrap_or(f32::MAX),
            a.relu_lower_clip_slope().unwrap_or(0.0),
        ],
        M::SWISH_FWD | M::SWISH_BWD => [a.swish_beta().unwrap_or(1.0), 0.0, 0.0],
        M::ELU_FWD | M::ELU_BWD => [a.elu_alpha().unwrap_or(1.0), 0.0, 0.0],
        M::SOFTPLUS_FWD | M::SOFTPLUS_BWD => [a.softplus_beta().unwrap_or(1.0), 0.0, 0.0],
        _ => [0.0; 3],
    };
    Ok(PwNode {
        name,
        mode,
        ins,
        out: a.out_0_tensor_uid(),
        params,
        axis: a.axis_tensor_uid().unwrap_or(0),
    })
}

/// The type code of a tensor of type `dt` under an entry of type `entry`.
fn type_code(dt: DataType, entry: DataType) -> Option<i64> {
    if dt == entry {
        Some(TYPE_ENTRY)
    } else if dt == DataType::FLOAT {
        Some(TYPE_F32)
    } else if dt == DataType::BOOLEAN {
        Some(TYPE_BOOL)
    } else {
        None
    }
}

/// The graph's launch inputs (config still the placeholder; the handler picks the entry).
fn read_graph(graph: &OperationGraph) -> PluginResult<PointwiseV3Inputs> {
    let serves =
        format!("the pointwise_fused pack fuses 1 to {MAX_NODES} pointwise nodes into one launch");
    let raw = head_nodes(graph, MAX_NODES, &serves)?;
    let nodes = raw
        .iter()
        .map(read_node)
        .collect::<PluginResult<Vec<_>>>()?;
    // Order the nodes so that every node follows the producers of its inputs.
    let producer: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.out, i)).collect();
    if producer.len() != nodes.len() {
        return Err(na(
            "the pointwise_fused pack: two nodes write the same tensor",
        ));
    }
    let mut order: Vec<usize> = Vec::with_capacity(nodes.len());
    while order.len() < nodes.len() {
        let next = (0..nodes.len()).find(|i| {
            !order.contains(i)
                && nodes[*i]
                    .ins
                    .iter()
                    .all(|u| producer.get(u).is_none_or(|p| order.contains(p)))
        });
        match next {
            Some(i) => order.push(i),
            None => return Err(na("the pointwise_fused pack: the nodes form a cycle")),
        }
    }
    let consumed = |u: i64| nodes.iter().any(|n| n.ins.contains(&u));
    let sinks: Vec<usize> = order
        .iter()
        .copied()
        .filter(|i| !consumed(nodes[*i].out))
        .collect();
    if sinks.len() != 1 || *order.last().unwrap_or(&0) != sinks[0] {
        return Err(na(format!(
            "the pointwise_fused pack needs exactly one node output that no node reads (the launch stores one tensor); this graph has {}",
            sinks.len()
        )));
    }
    let last = &nodes[sinks[0]];
    let yt = tensor(graph, last.out)?;
    if yt.virtual_() {
        return Err(na(format!(
            "the pointwise_fused pack: the last node's output (tensor uid {}) is virtual",
            last.out
        )));
    }
    // The entry's type: the graph's 16-bit float type, else f32.
    let mut entry = DataType::FLOAT;
    let all_uids: Vec<i64> = nodes
        .iter()
        .flat_map(|n| n.ins.iter().copied().chain([n.out]))
        .collect();
    for u in &all_uids {
        let dt = tensor(graph, *u)?.data_type();
        if dt == DataType::HALF || dt == DataType::BFLOAT16 {
            if entry != DataType::FLOAT && entry != dt {
                return Err(na(format!(
                    "the pointwise_fused pack needs one 16-bit float type per graph; this graph has {entry:?} and {dt:?}"
                )));
            }
            entry = dt;
        }
    }
    let (yd, ys) = dims_strides(&yt);
    let r = yd.len();
    if r == 0 || yd.iter().any(|d| *d < 1) || ys.iter().any(|s| *s < 0) {
        return Err(na(format!(
            "the pointwise_fused pack needs output dims of at least 1 and non-negative strides; dims {yd:?} strides {ys:?}"
        )));
    }
    // Graph inputs in slot order.
    let single = nodes.len() == 1;
    let mut input_uids: Vec<i64> = Vec::new();
    if single {
        input_uids = last.ins.clone();
    } else {
        for i in &order {
            for u in &nodes[*i].ins {
                if !producer.contains_key(u) && !input_uids.contains(u) {
                    input_uids.push(*u);
                }
            }
        }
    }
    if input_uids.len() > MAX_INPUTS {
        return Err(na(format!(
            "the pointwise_fused pack reads at most {MAX_INPUTS} graph inputs in one launch; this graph has {}",
            input_uids.len()
        )));
    }
    let mut types = [0i64; MAX_INPUTS + 1];
    let mut full_strides: Vec<Vec<i64>> = Vec::new();
    for (t, u) in input_uids.iter().enumerate() {
        let it = tensor(graph, *u)?;
        if it.is_runtime_pass_by_value() || read_tensor_value(&it).ok().flatten().is_some() {
            return Err(na(format!(
                "the pointwise_fused pack reads every input from device memory; tensor uid {u} is a pass-by-value scalar"
            )));
        }
        types[t] = type_code(it.data_type(), entry).ok_or_else(|| {
            na(format!(
                "the pointwise_fused pack serves f32, f16, bf16 and BOOLEAN tensors; tensor uid {u} is {:?}",
                it.data_type()
            ))
        })?;
        let (d, s) = dims_strides(&it);
        if d.len() > r || s.iter().any(|v| *v < 0) {
            return Err(na(format!(
                "the pointwise_fused pack: input tensor uid {u} dims {d:?} strides {s:?} do not broadcast to the output dims {yd:?}"
            )));
        }
        let o = r - d.len();
        let mut fs = vec![0i64; r];
        for k in 0..r {
            let dk = if k >= o { d[k - o] } else { 1 };
            if dk != 1 && dk != yd[k] {
                return Err(na(format!(
                    "the pointwise_fused pack: input tensor uid {u} dims {d:?} strides {s:?} do not broadcast to the output dims {yd:?}"
                )));
            }
            fs[k] = if dk == 1 { 0 } else { s[k - o] };
        }
        full_strides.push(fs);
    }
    types[MAX_INPUTS] = type_code(yt.data_type(), entry).ok_or_else(|| {
        na(format!(
            "the pointwise_fused pack serves f32, f16, bf16 and BOOLEAN tensors; the output tensor uid {} is {:?}",
            last.out,
            yt.data_type()
        ))
    })?;
    // The program.
    let slot_of = |u: i64, k_of: &HashMap<i64, usize>| -> u8 {
        match k_of.get(&u) {
            Some(k) => (4 + k) as u8,
            None => input_uids.iter().position(|x| *x == u).unwrap_or(0) as u8,
        }
    };
    let mut k_of: HashMap<i64, usize> = HashMap::new();
    let mut program = Vec::with_capacity(nodes.len());
    for (k, i) in order.iter().enumerate() {
        let n = &nodes[*i];
        let mut slots = [0u8; 3];
        for (j, u) in n.ins.iter().enumerate() {
            slots[j] = if single { j as u8 } else { slot_of(*u, &k_of) };
        }
        let ot = tensor(graph, n.out)?;
        let rnd = if k + 1 == nodes.len() {
            0
        } else {
            if !ot.virtual_() {
                return Err(na(format!(
                    "the pointwise_fused pack never stores intermediates; node '{}' writes tensor uid {}, which is not virtual",
                    n.name, n.out
                )));
            }
            match ot.data_type() {
                DataType::FLOAT => 0,
                DataType::HALF => 1,
                DataType::BFLOAT16 => 2,
                dt => {
                    return Err(na(format!(
                        "the pointwise_fused pack keeps intermediates as f32, f16 or bf16; tensor uid {} is {dt:?}",
                        n.out
                    )));
                }
            }
        };
        let (od, _) = dims_strides(&ot);
        if od.len() > r
            || od
                .iter()
                .zip(&yd[r - od.len()..])
                .any(|(a, b)| *a != 1 && a != b)
        {
            return Err(na(format!(
                "the pointwise_fused pack: node '{}' output dims {od:?} do not broadcast to the output dims {yd:?}",
                n.name
            )));
        }
        let mut params = n.params;
        if n.mode == M::GEN_INDEX {
            let fits = od.len() == r && od == yd && usize::try_from(n.axis).is_ok_and(|a| a < r);
            let inner: i64 = if fits {
                yd[n.axis as usize + 1..].iter().product()
            } else {
                0
            };
            let ext = if fits { yd[n.axis as usize] } else { 0 };
            if !fits || inner > GEN_INDEX_MAX || ext > GEN_INDEX_MAX {
                return Err(na(format!(
                    "the pointwise_fused pack serves GEN_INDEX only with the output's dims {yd:?}, an axis among them and at most 2^24 elements after it; node '{}' has dims {od:?} and axis {}",
                    n.name, n.axis
                )));
            }
            params = [inner as f32, ext as f32, 0.0];
        }
        program.push(PointwiseOpCode {
            mode: n.mode,
            slots,
            rnd,
            params,
        });
        k_of.insert(n.out, k);
    }
    // Drop extent-1 dims, merge dims every tensor walks contiguously.
    let mut dims: Vec<i64> = Vec::new();
    let mut sts: Vec<Vec<i64>> = vec![Vec::new(); input_uids.len() + 1];
    for k in 0..r {
        if yd[k] == 1 {
            continue;
        }
        let col: Vec<i64> = full_strides.iter().map(|s| s[k]).chain([ys[k]]).collect();
        let merge = dims.last().is_some_and(|_| {
            sts.iter()
                .zip(&col)
                .all(|(s, c)| s.last().is_some_and(|l| Some(*l) == c.checked_mul(yd[k])))
        });
        if merge {
            let l = dims.len() - 1;
            dims[l] *= yd[k];
            for (s, c) in sts.iter_mut().zip(&col) {
                *s.last_mut().unwrap_or(&mut 0) = *c;
            }
        } else {
            dims.push(yd[k]);
            for (s, c) in sts.iter_mut().zip(&col) {
                s.push(*c);
            }
        }
    }
    if dims.len() > 5 {
        return Err(na(format!(
            "the pointwise_fused pack runs at most 5 dims after merging contiguous ones; output dims {yd:?} give {dims:?}"
        )));
    }
    let n: Option<i64> = dims.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
    if n.is_none_or(|n| n >= MAX_ELEMENTS)
        || dims.iter().any(|d| *d > I32_MAX)
        || sts.iter().flatten().any(|s| *s > I32_MAX)
    {
        return Err(na(format!(
            "the pointwise_fused pack needs fewer than {MAX_ELEMENTS} elements and merged extents and strides of at most 2147483647; output dims {yd:?}"
        )));
    }
    let pad = 5 - dims.len();
    let mut d5 = [1i64; 5];
    d5[pad..].copy_from_slice(&dims);
    let mut strides = [[0i64; 5]; MAX_INPUTS];
    for (t, s) in sts[..input_uids.len()].iter().enumerate() {
        strides[t][pad..].copy_from_slice(s);
    }
    let mut y_strides = [0i64; 5];
    y_strides[pad..].copy_from_slice(&sts[input_uids.len()]);
    // Dims merged away or dropped: y's stride on a padded dim is irrelevant (extent 1).
    Ok(PointwiseV3Inputs {
        input_uids,
        y_uid: last.out,
        dtype: entry.0,
        dims: d5,
        strides,
        y_strides,
        types,
        program,
        config: TritonConfig::parse("pointwise_fused_f32_generic_1024x1x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}
