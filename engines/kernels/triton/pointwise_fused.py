"""Pointwise family: a chain (a small DAG) of up to MAX_NODES pointwise nodes over up to
MAX_INPUTS graph inputs, evaluated per element in ONE launch; intermediate values stay in
registers and are never stored.

Every element of the output (the last node's tensor, dims d0..d4 right-aligned to 5-D,
row-major flat index i < n) is computed as the CPU reference engine computes it
(engines/src/reference/ops/pointwise.rs, nodes run one after the other, each virtual
intermediate rounded to its declared type, engines/src/reference/exec.rs):

  slots 0..3: the graph inputs x0..x3 at the element (numpy broadcasting: stride 0 on
              broadcast dims), read as f32;
  slots 4..7: the results of nodes 0..3.
  node k (k < n_nodes) reads slots a, b, c of `op_k`, applies mode m with float parameters
  (pk0, pk1, pk2), rounds the result as `op_k`'s rounding code says and becomes slot 4 + k;
  y = slot 4 + n_nodes - 1, stored in y's type.

`op_k` = m | a << 8 | b << 12 | c << 16 | rnd << 20: m the `PointwiseMode` schema value
(graph.fbs), a/b/c slot indices (0..7; unused operands 0), rnd 0 keep f32, 1 round to f16,
2 round to bf16. Float parameters by mode: RELU_FWD/RELU_BWD (lower clip, upper clip, lower
slope); SWISH_* (beta), ELU_* (alpha), SOFTPLUS_* (beta) in pk0; GEN_INDEX the flat-index
divisor ("inner", the product of the output dims after the axis) and the axis extent in pk0,
pk1 (integers held exactly by f32, at most 2^24). Backward modes read a = dy, b = the forward
input x; BINARY_SELECT gives c != 0 ? a : b.

`flags` (run-time): bits 2t..2t+1 the type of input t (t < 4) and bits 8..9 that of y: 0 the
entry's element type, 1 f32, 2 one byte (BOOLEAN: non-zero reads 1.0; y stores 1 for any
non-zero value); bits 12+t input t holds ONE element (read once per program; the spec
kernel's broadcast form); bits 16..18 the number of inputs (1..4); bits 20..22 the number of
nodes (1..4). Absent inputs' pointers may be null.

Math (f32 unless said): division, reciprocal, sqrt and rsqrt IEEE-rounded (div_rn, sqrt_rn);
exp, log, log1p, sin, tan, tanh from the vendor device library; erf the reference engine's
Chebyshev fit evaluated in f64 (as the reference does); max/min return the non-NaN operand
(IEEE maxNum/minNum, as Rust's f32::max/min). The family is compiled without FP contraction
(OPTIONS), so a + x*x and a*b + c round twice, as on the CPU.

GROUP_M (constexpr, the entry's mode group): 1 compiles every mode and the chain path; 2 only
a single node of the light modes (ABS ADD ADD_SQUARE BINARY_SELECT CEIL CMP_* DIV FLOOR
GEN_INDEX IDENTITY LOGICAL_* MAX_OP MIN_OP MUL NEG RECIPROCAL RELU_BWD RELU_FWD RSQRT SQRT
SUB), so its register use stays low (24-62 per thread on sm_90 against about 100 for the full
group) and the memory system stays busy; any other mode leaves x0 unchanged there.

Kernels: `hipdnn_pointwise` (generic: 5-D strides per tensor, y strided too; int64 offsets)
and `hipdnn_pointwise_flat` (spec: every tensor dense row-major over the output's n elements
or ONE element, pointers 16-byte aligned and n a multiple of 16, so loads and stores are
128-bit). Grid: (cdiv(n, BLOCK_M), 1, 1); n < 2^31 - 2^16.

Launch contract: `hipkernel.pointwise.dispatch.v3` (engines/src/ingestor/packs/pointwise_v3.rs).
Read by build.py at pack time only.
"""
import triton
import triton.language as tl
from triton.language.extra import libdevice

MAX_NODES = 4
MAX_INPUTS = 4

# The reference engine's f32 constants appear as literals in the kernels: sqrt(2/pi) 0.7978846,
# GELU's 0.044715, 1/sqrt(2) 0.70710677, 1/sqrt(2 pi) 0.3989423.


@triton.jit
def _load(ptr, offs, mask, code, BYTES: tl.constexpr):
    """ptr[offs] as f32; `code` (run time) the element type in memory: 0 the entry's, 1 f32,
    2 one byte (non-zero is 1.0; only where BYTES: the flat kernel has no byte tensors, whose
    16-element-per-thread layout would cost it a shared-memory layout conversion)."""
    if code == 1:
        v = tl.load(ptr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    elif BYTES and code == 2:
        b = tl.load(ptr.to(tl.pointer_type(tl.uint8)) + offs, mask=mask, other=0)
        v = tl.where(b != 0, 1.0, 0.0)
    else:
        v = tl.load(ptr + offs, mask=mask, other=0.0).to(tl.float32)
    return v


@triton.jit
def _store(ptr, offs, v, mask, code, BYTES: tl.constexpr):
    """Stores the f32 `v` at ptr[offs] in the type `code` names (as `_load`)."""
    if code == 1:
        tl.store(ptr.to(tl.pointer_type(tl.float32)) + offs, v, mask=mask)
    elif BYTES and code == 2:
        tl.store(ptr.to(tl.pointer_type(tl.uint8)) + offs, (v != 0.0).to(tl.uint8), mask=mask)
    else:
        # Round to nearest even (the device default, spelled out for the interpreter).
        tl.store(ptr + offs, v.to(ptr.dtype.element_ty, fp_downcast_rounding="rtne"), mask=mask)


@triton.jit
def _erf(x):
    """The reference engine's erf: Numerical Recipes' erfc Chebyshev fit in f64."""
    z = tl.abs(x.to(tl.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    p = -0.82215223 + t * 0.17087277
    p = 1.48851587 + t * p
    p = -1.13520398 + t * p
    p = 0.27886807 + t * p
    p = -0.18628806 + t * p
    p = 0.09678418 + t * p
    p = 0.37409196 + t * p
    p = 1.00002368 + t * p
    r = t * tl.exp(-z * z - 1.26551223 + t * p)
    e = 1.0 - r
    return tl.where(x >= 0.0, e, -e).to(tl.float32)


@triton.jit
def _sigmoid(x):
    return tl.div_rn(tl.full(x.shape, 1.0, tl.float32), 1.0 + libdevice.exp(-x))


@triton.jit
def _tanh(x):
    return libdevice.tanh(x)


@triton.jit
def _modes_1_11(m, a, b, c, one, zero):
    """ABS ADD ADD_SQUARE BINARY_SELECT CEIL CMP_EQ..CMP_NEQ."""
    r = a
    if m < 6:
        if m == 1:
            r = tl.abs(a)
        if m == 2:
            r = a + b
        if m == 3:
            r = a + b * b
        if m == 4:
            r = tl.where(c != 0.0, a, b)
        if m == 5:
            r = tl.ceil(a)
    else:
        if m == 6:
            r = tl.where(a == b, one, zero)
        if m == 7:
            r = tl.where(a >= b, one, zero)
        if m == 8:
            r = tl.where(a > b, one, zero)
        if m == 9:
            r = tl.where(a <= b, one, zero)
        if m == 10:
            r = tl.where(a < b, one, zero)
        if m == 11:
            r = tl.where(a != b, one, zero)
    return r


@triton.jit
def _modes_12_23(m, a, b, p0, p1, idx, one, zero, FULL: tl.constexpr):
    """DIV ELU_BWD ELU_FWD ERF EXP FLOOR GELU_APPROX_TANH_BWD/FWD GELU_BWD/FWD GEN_INDEX
    IDENTITY."""
    r = a
    if m < 18:
        if m == 12:
            r = tl.div_rn(a, b)
        if FULL and m == 13:
            r = a * tl.where(b > 0.0, one, p0 * libdevice.exp(b))
        if FULL and m == 14:
            r = tl.where(a > 0.0, a, p0 * (libdevice.exp(a) - 1.0))
        if FULL and m == 15:
            r = _erf(a)
        if FULL and m == 16:
            r = libdevice.exp(a)
        if m == 17:
            r = tl.floor(a)
    else:
        if FULL and m == 18:
            u = 0.7978846 * (b + 0.044715 * b * b * b)
            t = _tanh(u)
            du = 0.7978846 * (1.0 + 3.0 * 0.044715 * b * b)
            r = a * (0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * du)
        if FULL and m == 19:
            r = 0.5 * a * (1.0 + _tanh(0.7978846 * (a + 0.044715 * a * a * a)))
        if FULL and m == 20:
            cdf = 0.5 * (1.0 + _erf(b * 0.70710677))
            pdf = libdevice.exp(-0.5 * b * b) * 0.3989423
            r = a * (cdf + b * pdf)
        if FULL and m == 21:
            r = 0.5 * a * (1.0 + _erf(a * 0.70710677))
        if m == 22:
            r = ((idx // (zero + p0).to(tl.int32)) % (zero + p1).to(tl.int32)).to(tl.float32)
    return r


@triton.jit
def _modes_24_35(m, a, b, p0, p1, p2, one, zero, FULL: tl.constexpr):
    """LOG LOGICAL_AND LOGICAL_NOT LOGICAL_OR MAX_OP MIN_OP MUL NEG RECIPROCAL RELU_BWD RELU_FWD
    RSQRT."""
    r = a
    if m < 30:
        if FULL and m == 24:
            r = libdevice.log(a)
        if m == 25:
            r = tl.where((a != 0.0) & (b != 0.0), one, zero)
        if m == 26:
            r = tl.where(a == 0.0, one, zero)
        if m == 27:
            r = tl.where((a != 0.0) | (b != 0.0), one, zero)
        if m == 28:
            r = tl.maximum(a, b)
        if m == 29:
            r = tl.minimum(a, b)
    else:
        if m == 30:
            r = a * b
        if m == 31:
            r = -a
        if m == 32:
            r = tl.div_rn(one, a)
        if m == 33:
            r = a * tl.where(b <= p0, p2 + zero, tl.where(b >= p1, zero, one))
        if m == 34:
            r = tl.where(a <= p0, p2 * (a - p0) + p0, tl.where(a >= p1, p1, a))
        if m == 35:
            r = tl.div_rn(one, tl.sqrt_rn(a))
    return r


@triton.jit
def _modes_36_47(m, a, b, p0, one, zero, FULL: tl.constexpr):
    """SIGMOID_BWD/FWD SIN SOFTPLUS_BWD/FWD SQRT SUB SWISH_BWD/FWD TAN TANH_BWD/FWD."""
    r = a
    if m < 42:
        if FULL and m == 36:
            s = _sigmoid(b)
            r = a * s * (1.0 - s)
        if FULL and m == 37:
            r = _sigmoid(a)
        if FULL and m == 38:
            r = libdevice.sin(a)
        if FULL and m == 39:
            r = a * _sigmoid(p0 * b)
        if FULL and m == 40:
            bx = p0 * a
            r = tl.where(bx > 20.0, a, tl.div_rn(libdevice.log1p(libdevice.exp(bx)), p0 + zero))
        if m == 41:
            r = tl.sqrt_rn(a)
    else:
        if m == 42:
            r = a - b
        if FULL and m == 43:
            s = _sigmoid(p0 * b)
            r = a * (s + p0 * b * s * (1.0 - s))
        if FULL and m == 44:
            r = a * _sigmoid(p0 * a)
        if FULL and m == 45:
            r = libdevice.tan(a)
        if FULL and m == 46:
            t = _tanh(b)
            r = a * (1.0 - t * t)
        if FULL and m == 47:
            r = _tanh(a)
    return r


@triton.jit
def _apply(m, a, b, c, p0, p1, p2, idx, FULL: tl.constexpr):
    """Mode m on the f32 operands (module docs; backward forms: a = dy, b = x); `idx` the flat
    output index (GEN_INDEX). A shallow tree of uniform branches: at most 9 scalar compares
    per program, and only the chosen mode's arithmetic runs."""
    one = tl.full(a.shape, 1.0, tl.float32)
    zero = tl.zeros(a.shape, tl.float32)
    if m < 24:
        if m < 12:
            r = _modes_1_11(m, a, b, c, one, zero)
        else:
            r = _modes_12_23(m, a, b, p0, p1, idx, one, zero, FULL)
    else:
        if m < 36:
            r = _modes_24_35(m, a, b, p0, p1, p2, one, zero, FULL)
        else:
            r = _modes_36_47(m, a, b, p0, one, zero, FULL)
    return r


@triton.jit
def _slot(i, x0, x1, x2, x3, t0, t1, t2, t3):
    v = x0
    if i == 1:
        v = x1
    if i == 2:
        v = x2
    if i == 3:
        v = x3
    if i == 4:
        v = t0
    if i == 5:
        v = t1
    if i == 6:
        v = t2
    if i == 7:
        v = t3
    return v


@triton.jit
def _node(op, p0, p1, p2, x0, x1, x2, x3, t0, t1, t2, t3, idx, FULL: tl.constexpr):
    m = op & 255
    a = _slot((op >> 8) & 15, x0, x1, x2, x3, t0, t1, t2, t3)
    b = _slot((op >> 12) & 15, x0, x1, x2, x3, t0, t1, t2, t3)
    c = _slot((op >> 16) & 15, x0, x1, x2, x3, t0, t1, t2, t3)
    return _round(_apply(m, a, b, c, p0, p1, p2, idx, FULL), (op >> 20) & 3)


@triton.jit
def _round(r, rnd):
    """r rounded to f16 (rnd 1) or bf16 (rnd 2) and widened back; rnd 0 keeps it."""
    if rnd == 1:
        r = r.to(tl.float16, fp_downcast_rounding="rtne").to(tl.float32)
    if rnd == 2:
        r = r.to(tl.bfloat16, fp_downcast_rounding="rtne").to(tl.float32)
    return r


@triton.jit
def _pick4(k, v0, v1, v2, v3):
    """v_k for a run-time k in 0..3 (scalars)."""
    v = v0
    if k == 1:
        v = v1
    if k == 2:
        v = v2
    if k == 3:
        v = v3
    return v


@triton.jit
def _program(flags, op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
             p30, p31, p32, x0, x1, x2, x3, idx, FULL: tl.constexpr):
    """Runs the node program on the loaded inputs; returns y (f32)."""
    # One node reads x0, x1, x2 in order (the pack numbers a single node's inputs so): no
    # operand selection. The light group (FULL false) compiles only this path.
    y = _round(_apply(op0 & 255, x0, x1, x2, p00, p01, p02, idx, FULL), (op0 >> 20) & 3)
    if FULL:
        n_nodes = (flags >> 20) & 7
        if n_nodes > 1:
            y = _chain(n_nodes, op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21,
                       p22, p30, p31, p32, x0, x1, x2, x3, idx, FULL)
    return y


@triton.jit
def _chain(n_nodes, op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
           p30, p31, p32, x0, x1, x2, x3, idx, FULL: tl.constexpr):
    """Two or more nodes: one loop over the nodes (one copy of the mode code in the binary),
    operands picked from the slots."""
    t0 = x0
    t1 = x0
    t2 = x0
    t3 = x0
    y = x0
    for k in range(0, n_nodes):
        op = _pick4(k, op0, op1, op2, op3)
        p0 = _pick4(k, p00, p10, p20, p30)
        p1 = _pick4(k, p01, p11, p21, p31)
        p2 = _pick4(k, p02, p12, p22, p32)
        y = _node(op, p0, p1, p2, x0, x1, x2, x3, t0, t1, t2, t3, idx, FULL)
        if k == 0:
            t0 = y
        if k == 1:
            t1 = y
        if k == 2:
            t2 = y
        if k == 3:
            t3 = y
    return y


@triton.jit
def _load_flat(ptr, offs, mask, flags, t: tl.constexpr, BLOCK_M: tl.constexpr):
    """Input t of the flat (spec) kernel: dense, or one element (flags bit 12 + t)."""
    code = (flags >> (2 * t)) & 3
    v = tl.zeros([BLOCK_M], tl.float32)
    if ((flags >> 16) & 7) > t:
        if ((flags >> (12 + t)) & 1) != 0:
            if code == 1:
                v = v + tl.load(ptr.to(tl.pointer_type(tl.float32)))
            else:
                v = v + tl.load(ptr).to(tl.float32)
        else:
            v = _load(ptr, offs, mask, code, False)
    return v


@triton.jit
def hipdnn_pointwise_flat(x0_ptr, x1_ptr, x2_ptr, x3_ptr, y_ptr, n, flags,
                          op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
                          p30, p31, p32, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    mask = offs < n
    x0 = _load_flat(x0_ptr, offs, mask, flags, 0, BLOCK_M)
    x1 = _load_flat(x1_ptr, offs, mask, flags, 1, BLOCK_M)
    x2 = _load_flat(x2_ptr, offs, mask, flags, 2, BLOCK_M)
    x3 = _load_flat(x3_ptr, offs, mask, flags, 3, BLOCK_M)
    y = _program(flags, op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
                 p30, p31, p32, x0, x1, x2, x3, offs, GROUP_M == 1)
    _store(y_ptr, offs, y, mask, (flags >> 8) & 3, False)


@triton.jit
def _offset(c0, c1, c2, c3, c4, s0, s1, s2, s3, s4):
    return (c0.to(tl.int64) * s0 + c1.to(tl.int64) * s1 + c2.to(tl.int64) * s2
            + c3.to(tl.int64) * s3 + c4.to(tl.int64) * s4)


@triton.jit
def _load_strided(ptr, off, mask, flags, t: tl.constexpr, BLOCK_M: tl.constexpr):
    v = tl.zeros([BLOCK_M], tl.float32)
    if ((flags >> 16) & 7) > t:
        v = _load(ptr, off, mask, (flags >> (2 * t)) & 3, True)
    return v


@triton.jit
def hipdnn_pointwise(x0_ptr, x1_ptr, x2_ptr, x3_ptr, y_ptr, n, d1, d2, d3, d4,
                     s00, s01, s02, s03, s04, s10, s11, s12, s13, s14,
                     s20, s21, s22, s23, s24, s30, s31, s32, s33, s34,
                     sy0, sy1, sy2, sy3, sy4, flags,
                     op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
                     p30, p31, p32, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    mask = offs < n
    c4 = offs % d4
    r = offs // d4
    c3 = r % d3
    r = r // d3
    c2 = r % d2
    r = r // d2
    c1 = r % d1
    c0 = r // d1
    x0 = _load_strided(x0_ptr, _offset(c0, c1, c2, c3, c4, s00, s01, s02, s03, s04), mask,
                       flags, 0, BLOCK_M)
    x1 = _load_strided(x1_ptr, _offset(c0, c1, c2, c3, c4, s10, s11, s12, s13, s14), mask,
                       flags, 1, BLOCK_M)
    x2 = _load_strided(x2_ptr, _offset(c0, c1, c2, c3, c4, s20, s21, s22, s23, s24), mask,
                       flags, 2, BLOCK_M)
    x3 = _load_strided(x3_ptr, _offset(c0, c1, c2, c3, c4, s30, s31, s32, s33, s34), mask,
                       flags, 3, BLOCK_M)
    y = _program(flags, op0, op1, op2, op3, p00, p01, p02, p10, p11, p12, p20, p21, p22,
                 p30, p31, p32, x0, x1, x2, x3, offs, GROUP_M == 1)
    _store(y_ptr, _offset(c0, c1, c2, c3, c4, sy0, sy1, sy2, sy3, sy4), y, mask,
           (flags >> 8) & 3, True)


def kernel_for(variant):
    return hipdnn_pointwise_flat if variant == "spec" else hipdnn_pointwise


KERNEL = hipdnn_pointwise
FAMILY = "pointwise_fused"
POINTERS = ["x0_ptr", "x1_ptr", "x2_ptr", "x3_ptr", "y_ptr"]
INTS = (["n", "d1", "d2", "d3", "d4"]
        + [f"s{t}{k}" for t in range(4) for k in range(5)]
        + [f"sy{k}" for k in range(5)] + ["flags", "op0", "op1", "op2", "op3"])
FLOATS = [f"p{k}{j}" for k in range(4) for j in range(3)]
# spec: the five pointers 16-byte aligned (absent inputs' null pointers are) and n a multiple
# of 16; the flat kernel has no strides. generic: no hints.
SPEC_DIV16 = POINTERS + ["n"]
SPEC_ONE = []
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "generic": ([], [])}
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}
# Compiled without FP contraction: the reference engine rounds every product.
OPTIONS = {"enable_fp_fusion": False}


def configs(vendor, dtype):
    """(BLOCK_M, 1, 1, GROUP_M, num_warps, 1) per variant. GROUP_M is the mode group compiled
    in: 2 = one node of a light mode (no exp/log/trig/erf/tanh: the lean entries, 24-62
    registers on sm_90, 128-bit accesses for 16-bit types at 8 elements per thread), 1 =
    every mode and chains of up to MAX_NODES nodes. Larger blocks first (the static rule in
    pointwise_v3.rs refuses blocks above 1024 for fewer than 2^20 elements). 16-bit types get
    a 4096-element light entry first: two 128-bit accesses per thread per tensor, the bytes in
    flight of the f32 2048-element entry (with one access per thread the 2048-element f16
    entry moved 0.89-0.91x torch.add's bandwidth on an H200)."""
    wide = 2048
    spec = [(wide, 1, 1, 2, 8, 1), (1024, 1, 1, 2, 4, 1), (512, 1, 1, 1, 4, 1)]
    if dtype in ("f16", "bf16"):
        spec = [(4096, 1, 1, 2, 8, 1)] + spec
    generic = [(512, 1, 1, 2, 4, 1), (256, 1, 1, 1, 4, 1)]
    return {"spec": spec, "generic": generic}
