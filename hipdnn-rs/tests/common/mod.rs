//! Shared graph generators for the integration tests: a tiny deterministic PRNG and one
//! builder per operation that either sets every attribute to a non-default value (`full`) or
//! picks attributes at random.
#![allow(dead_code, missing_docs)]

use hipdnn::*;

/// xorshift64* — deterministic, seedable.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    /// A finite, exactly representable, non-zero f32.
    pub fn f32(&mut self) -> f32 {
        (self.below(2000) as f32 - 999.5) / 8.0
    }
    pub fn small(&mut self) -> i64 {
        1 + self.below(4) as i64
    }
}

pub struct Gen<'a> {
    pub g: &'a mut Graph,
    pub r: Rng,
    /// Every optional field present, every value non-default.
    pub full: bool,
    pub pool: Vec<TensorId>,
    pub next_uid: i64,
}

pub const NON_DEFAULT_ENUM_NAMES: &[&str] = &[
    "UNSET",
    "NOT_SET",
    "PADDING_NOT_SET",
    "TOP_LEFT",
    "AUTO",
    "NONE",
];

impl<'a> Gen<'a> {
    pub fn new(g: &'a mut Graph, seed: u64, full: bool) -> Self {
        Gen {
            g,
            r: Rng::new(seed),
            full,
            pool: Vec::new(),
            next_uid: 100,
        }
    }

    fn name(&mut self, base: &str) -> String {
        if self.full {
            return format!("{base}_{}", self.next_uid);
        }
        match self.r.below(4) {
            0 => String::new(),
            1 => "dup".to_owned(),
            2 => format!("{base}\u{e9}\"\\/{}", self.r.below(100)),
            _ => format!("{base}{}", self.r.below(1000)),
        }
    }

    fn uid(&mut self) -> Option<i64> {
        self.next_uid += 1 + self.r.below(3) as i64;
        if self.full || self.r.below(3) != 0 {
            Some(self.next_uid)
        } else {
            None
        }
    }

    pub fn en<E: Copy>(&mut self, all: &[E]) -> E {
        if self.full {
            all[1 + self.r.below(all.len() - 1)]
        } else {
            all[self.r.below(all.len())]
        }
    }

    /// A new non-virtual input tensor with `dims` and random extras.
    pub fn input(&mut self, dims: &[i64]) -> TensorId {
        let name = self.name("in");
        let mut t = TensorAttributes::new(name)
            .data_type(self.en(&DataType::ALL[1..]))
            .dims(dims.to_vec())
            .packed_nchw();
        t.uid = self.uid();
        if !self.full && self.r.below(3) == 0 {
            t = t.packed_nhwc();
        }
        if self.full || self.r.below(4) == 0 {
            t.alignment = 4 + self.r.below(64) as i64;
        }
        self.g.tensor(t)
    }

    /// A scalar pass-by-value tensor (the three RFC16 states, every TensorValue member).
    pub fn scalar(&mut self) -> TensorId {
        let v = match self.r.below(8) {
            0 => TensorValue::Float32(self.r.f32()),
            1 => TensorValue::Float16(self.r.f32()),
            2 => TensorValue::BFloat16(self.r.f32()),
            3 => TensorValue::Float8(1 + self.r.below(255) as u8),
            4 => TensorValue::Int32(self.r.next() as i32 | 1),
            // Short decimals: flatc prints doubles with 12 significant digits.
            5 => TensorValue::Float64(self.r.f32() as f64 / 16.0),
            6 => TensorValue::Int64(self.r.next() as i64 | 1),
            _ => TensorValue::Bool(true),
        };
        let mut t = match self.r.below(3) {
            0 => TensorAttributes::scalar(v),
            1 => TensorAttributes::scalar(v).runtime_parameter_with_default(v),
            _ => TensorAttributes::scalar(v).runtime_parameter(),
        };
        t.name = self.name("scalar");
        t.uid = self.uid();
        self.g.tensor(t)
    }

    /// An existing tensor (often an earlier output) or a fresh input.
    pub fn pick(&mut self, dims: &[i64]) -> TensorId {
        if !self.full && !self.pool.is_empty() && self.r.coin() {
            let i = self.r.below(self.pool.len());
            return self.pool[i];
        }
        self.input(dims)
    }

    pub fn opt_t(&mut self, dims: &[i64]) -> Option<TensorId> {
        (self.full || self.r.coin()).then(|| self.pick(dims))
    }
    /// An optional output tensor set through the attributes: always a fresh tensor (an
    /// existing one could already have a producer).
    pub fn opt_out(&mut self, dims: &[i64]) -> Option<TensorId> {
        (self.full || self.r.coin()).then(|| self.input(dims))
    }
    pub fn opt_f32(&mut self) -> Option<f32> {
        (self.full || self.r.coin()).then(|| self.r.f32())
    }
    pub fn opt_i64(&mut self) -> Option<i64> {
        (self.full || self.r.coin()).then(|| self.r.small())
    }
    pub fn flag(&mut self) -> bool {
        self.full || self.r.coin()
    }
    pub fn opt_flag(&mut self) -> Option<bool> {
        if self.full {
            Some(true)
        } else {
            [None, Some(false), Some(true)][self.r.below(3)]
        }
    }
    fn list(&mut self, n: usize, min: i64) -> Vec<i64> {
        if !self.full && self.r.below(5) == 0 {
            return Vec::new();
        }
        (0..n).map(|_| min + self.r.below(3) as i64).collect()
    }
    fn compute(&mut self) -> DataType {
        self.en(DataType::ALL)
    }

    fn keep(&mut self, ts: impl IntoIterator<Item = TensorId>) {
        self.pool.extend(ts);
    }

    /// Names of the ops `add_op` can build, by index.
    pub const OPS: &'static [&'static str] = &[
        "pointwise_unary",
        "pointwise_binary",
        "pointwise_ternary",
        "conv_fprop",
        "conv_dgrad",
        "conv_wgrad",
        "matmul",
        "batchnorm",
        "batchnorm_backward",
        "batchnorm_inference",
        "batchnorm_inference_variance_ext",
        "layernorm",
        "layernorm_backward",
        "rmsnorm",
        "rmsnorm_backward",
        "sdpa",
        "sdpa_backward",
        "reduction",
        "resample",
        "resample_bwd",
        "block_scale_quantize",
        "block_scale_dequantize",
        "custom_op",
        "moe_grouped_matmul",
        "moe_grouped_matmul_bwd",
    ];

    /// Adds one node of kind `Self::OPS[which]`.
    pub fn add_op(&mut self, which: usize) {
        let x4 = [2, 3, 8, 8];
        let c4 = [1, 3, 1, 1];
        let name = self.name(Self::OPS[which]);
        let cdt = self.compute();
        match Self::OPS[which] {
            op @ ("pointwise_unary" | "pointwise_binary" | "pointwise_ternary") => {
                let mode = match op {
                    "pointwise_unary" => [
                        PointwiseMode::ReluFwd,
                        PointwiseMode::GenIndex,
                        PointwiseMode::Exp,
                    ][self.r.below(3)],
                    "pointwise_binary" => [
                        PointwiseMode::Add,
                        PointwiseMode::Mul,
                        PointwiseMode::SwishBwd,
                    ][self.r.below(3)],
                    _ => PointwiseMode::BinarySelect,
                };
                let mut a = PointwiseAttributes::with_mode(mode)
                    .name(name)
                    .compute_data_type(cdt);
                a.relu_lower_clip = self.opt_f32();
                a.relu_upper_clip = self.opt_f32();
                a.relu_lower_clip_slope = self.opt_f32();
                a.axis = self.opt_i64();
                a.swish_beta = self.opt_f32();
                a.elu_alpha = self.opt_f32();
                a.softplus_beta = self.opt_f32();
                let i0 = self.pick(&x4);
                let y = match op {
                    "pointwise_unary" => self.g.pointwise_unary(i0, a),
                    "pointwise_binary" => {
                        let i1 = self.pick(&c4);
                        self.g.pointwise(i0, i1, a)
                    }
                    _ => {
                        let i1 = self.pick(&x4);
                        let i2 = self.pick(&[1, 1, 8, 8]);
                        self.g.pointwise_ternary(i0, i1, i2, a)
                    }
                };
                self.keep([y]);
            }
            "conv_fprop" | "conv_dgrad" | "conv_wgrad" => {
                let (pre, post, stride, dil) = (
                    self.list(2, 1),
                    self.list(2, 1),
                    self.list(2, 1),
                    self.list(2, 1),
                );
                let mode = self.en(ConvMode::ALL);
                let a = self.pick(&x4);
                let b = self.pick(&[4, 3, 3, 3]);
                let y = match Self::OPS[which] {
                    "conv_fprop" => self.g.conv_fprop(
                        a,
                        b,
                        ConvFpropAttributes::new()
                            .name(name)
                            .compute_data_type(cdt)
                            .pre_padding(pre)
                            .post_padding(post)
                            .stride(stride)
                            .dilation(dil)
                            .conv_mode(mode),
                    ),
                    "conv_dgrad" => self.g.conv_dgrad(
                        a,
                        b,
                        ConvDgradAttributes::new()
                            .name(name)
                            .compute_data_type(cdt)
                            .pre_padding(pre)
                            .post_padding(post)
                            .stride(stride)
                            .dilation(dil)
                            .conv_mode(mode),
                    ),
                    _ => self.g.conv_wgrad(
                        a,
                        b,
                        ConvWgradAttributes::new()
                            .name(name)
                            .compute_data_type(cdt)
                            .pre_padding(pre)
                            .post_padding(post)
                            .stride(stride)
                            .dilation(dil)
                            .conv_mode(mode),
                    ),
                };
                self.keep([y]);
            }
            "matmul" => {
                let a = self.pick(&[2, 4, 8]);
                let b = self.pick(&[8, 5]);
                let c = self.g.matmul(
                    a,
                    b,
                    MatmulAttributes::new().name(name).compute_data_type(cdt),
                );
                self.keep([c]);
            }
            "batchnorm" => {
                let (x, s, b, e) = (
                    self.pick(&x4),
                    self.pick(&c4),
                    self.pick(&c4),
                    self.scalar(),
                );
                let mut a = BatchnormAttributes::new()
                    .name(name)
                    .compute_data_type(cdt)
                    .epsilon(e);
                a.peer_stats = if self.full {
                    vec![self.input(&c4), self.input(&c4)]
                } else {
                    (0..self.r.below(3)).map(|_| self.pick(&c4)).collect()
                };
                if self.flag() {
                    let (m, v, mo) = (self.pick(&c4), self.pick(&c4), self.scalar());
                    a = a.prev_running_mean(m).prev_running_variance(v).momentum(mo);
                }
                let o = self.g.batchnorm(x, s, b, a);
                self.keep([o.y, o.mean, o.inv_variance]);
            }
            "batchnorm_backward" => {
                let (dy, x, s) = (self.pick(&x4), self.pick(&x4), self.pick(&c4));
                let mut a = BatchnormBackwardAttributes::new()
                    .name(name)
                    .compute_data_type(cdt);
                a.mean = self.opt_t(&c4);
                a.inv_variance = self.opt_t(&c4);
                a.peer_stats = if self.full {
                    vec![self.input(&c4)]
                } else {
                    Vec::new()
                };
                let o = self.g.batchnorm_backward(dy, x, s, a);
                self.keep(o);
            }
            "batchnorm_inference" => {
                let ts: Vec<TensorId> = std::iter::once(self.pick(&x4))
                    .chain((0..4).map(|_| self.pick(&c4)))
                    .collect();
                let y = self.g.batchnorm_inference(
                    ts[0],
                    ts[1],
                    ts[2],
                    ts[3],
                    ts[4],
                    BatchnormInferenceAttributes::new()
                        .name(name)
                        .compute_data_type(cdt),
                );
                self.keep([y]);
            }
            "batchnorm_inference_variance_ext" => {
                let ts: Vec<TensorId> = std::iter::once(self.pick(&x4))
                    .chain((0..4).map(|_| self.pick(&c4)))
                    .collect();
                let e = self.scalar();
                let y = self.g.batchnorm_inference_variance_ext(
                    ts[0],
                    ts[1],
                    ts[2],
                    ts[3],
                    ts[4],
                    e,
                    BatchnormInferenceVarianceExtAttributes::new()
                        .name(name)
                        .compute_data_type(cdt),
                );
                self.keep([y]);
            }
            "layernorm" => {
                let (x, s, b, e) = (
                    self.pick(&x4),
                    self.pick(&[1, 3, 8, 8]),
                    self.pick(&[1, 3, 8, 8]),
                    self.scalar(),
                );
                let phase = if self.full {
                    NormFwdPhase::Training
                } else {
                    self.en(NormFwdPhase::ALL)
                };
                let a = LayernormAttributes::new()
                    .name(name)
                    .compute_data_type(cdt)
                    .epsilon(e)
                    .forward_phase(phase)
                    .normalized_dim_count(self.r.small());
                let (y, m, v) = self.g.layernorm(x, s, b, a);
                self.keep([y].into_iter().chain(m).chain(v));
            }
            "layernorm_backward" => {
                let (dy, x, s) = (self.pick(&x4), self.pick(&x4), self.pick(&[1, 3, 8, 8]));
                let mut a = LayernormBackwardAttributes::new()
                    .name(name)
                    .compute_data_type(cdt)
                    .normalized_dim_count(self.r.small());
                a.mean = self.opt_t(&[2, 1, 1, 1]);
                a.inv_variance = self.opt_t(&[2, 1, 1, 1]);
                a.epsilon = if self.flag() {
                    Some(self.scalar())
                } else {
                    None
                };
                let o = self.g.layernorm_backward(dy, x, s, a);
                self.keep(o);
            }
            "rmsnorm" => {
                let (x, s, e) = (self.pick(&x4), self.pick(&[1, 3, 8, 8]), self.scalar());
                let phase = if self.full {
                    NormFwdPhase::Training
                } else {
                    self.en(NormFwdPhase::ALL)
                };
                let mut a = RmsNormAttributes::new()
                    .name(name)
                    .compute_data_type(cdt)
                    .epsilon(e)
                    .forward_phase(phase);
                a.bias = self.opt_t(&[1, 3, 8, 8]);
                let (y, inv) = self.g.rmsnorm(x, s, a);
                self.keep([y].into_iter().chain(inv));
            }
            "rmsnorm_backward" => {
                let (dy, x, s, r) = (
                    self.pick(&x4),
                    self.pick(&x4),
                    self.pick(&[1, 3, 8, 8]),
                    self.pick(&[2, 1, 1, 1]),
                );
                let dbias = self.flag();
                let (dx, ds, db) = self.g.rmsnorm_backward(
                    dy,
                    x,
                    s,
                    r,
                    dbias,
                    RmsNormBackwardAttributes::new()
                        .name(name)
                        .compute_data_type(cdt),
                );
                self.keep([dx, ds].into_iter().chain(db));
            }
            "sdpa" => {
                let qd = [1, 2, 16, 8];
                let (q, k, v) = (self.pick(&qd), self.pick(&qd), self.pick(&qd));
                let mut a = SdpaAttributes::new().name(name).compute_data_type(cdt);
                let s = [1, 1, 1, 1];
                a.attn_mask = self.opt_t(&[1, 1, 16, 16]);
                a.scale = self.opt_t(&s);
                a.seq_len_q = self.opt_t(&s);
                a.seq_len_kv = self.opt_t(&s);
                a.seed = self.opt_t(&s);
                a.offset = self.opt_t(&s);
                a.dropout_mask = self.opt_t(&s);
                a.dropout_scale = self.opt_t(&s);
                a.page_table_k = self.opt_t(&s);
                a.page_table_v = self.opt_t(&s);
                a.block_mask = self.opt_t(&s);
                a.sink_token = self.opt_t(&s);
                a.descale_q = self.opt_t(&s);
                a.descale_k = self.opt_t(&s);
                a.descale_v = self.opt_t(&s);
                a.descale_s = self.opt_t(&s);
                a.scale_s = self.opt_t(&s);
                a.scale_o = self.opt_t(&s);
                a.max = self.opt_out(&s);
                a.sum_exp = self.opt_out(&s);
                a.rng_dump = self.opt_out(&s);
                a.amax_s = self.opt_out(&s);
                a.amax_o = self.opt_out(&s);
                a.generate_stats = self.opt_flag();
                a.alibi_mask = self.flag();
                a.padding_mask = self.flag();
                a.causal_mask = self.flag();
                a.causal_mask_bottom_right = self.flag();
                a.dropout_probability = self.opt_f32();
                a.attn_scale_value = self.opt_f32();
                a.left_bound = self.opt_i64();
                a.right_bound = self.opt_i64();
                a.max_seq_len_kv =
                    (self.full || self.r.coin()).then(|| 1 + self.r.below(1000) as i32);
                a.diagonal_alignment = self.en(DiagonalAlignment::ALL);
                a.mma_core_mode = self.en(DataType::ALL);
                a.implementation = self.en(AttentionImplementation::ALL);
                let (o, st) = self.g.sdpa(q, k, v, a);
                self.keep([o].into_iter().chain(st));
            }
            "sdpa_backward" => {
                let qd = [1, 2, 16, 8];
                let ts: Vec<TensorId> = (0..5).map(|_| self.pick(&qd)).collect();
                let st = self.pick(&[1, 2, 16, 1]);
                let s = [1, 1, 1, 1];
                let mut a = SdpaBackwardAttributes::new()
                    .name(name)
                    .compute_data_type(cdt);
                a.scale = self.opt_t(&s);
                a.attn_mask = self.opt_t(&[1, 1, 16, 16]);
                a.seq_len_q = self.opt_t(&s);
                a.seq_len_kv = self.opt_t(&s);
                a.seed = self.opt_t(&s);
                a.offset = self.opt_t(&s);
                a.dropout_mask = self.opt_t(&s);
                a.dropout_scale = self.opt_t(&s);
                a.dropout_scale_inv = self.opt_t(&s);
                a.dbias = self.opt_out(&[1, 1, 16, 16]);
                a.alibi_mask = self.flag();
                a.padding_mask = self.flag();
                a.causal_mask = self.flag();
                a.causal_mask_bottom_right = self.flag();
                a.dropout_probability = self.opt_f32();
                a.attn_scale_value = self.opt_f32();
                a.left_bound = self.opt_i64();
                a.right_bound = self.opt_i64();
                a.diagonal_alignment = self.en(DiagonalAlignment::ALL);
                let o = self
                    .g
                    .sdpa_backward(ts[0], ts[1], ts[2], ts[3], ts[4], st, a);
                self.keep(o);
            }
            "reduction" => {
                let x = self.pick(&x4);
                let mode = self.en(ReductionMode::ALL);
                let det = self.flag();
                let y = self.g.reduction(
                    x,
                    [2, 3, 1, 1],
                    ReductionAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .mode(mode)
                        .is_deterministic(det),
                );
                self.keep([y]);
            }
            "resample" | "resample_bwd" => {
                let (pre, post, stride, window) = (
                    self.list(2, 0),
                    self.list(2, 0),
                    self.list(2, 1),
                    self.list(2, 1),
                );
                let rm = if self.full {
                    ResampleMode::MaxPool
                } else {
                    self.en(ResampleMode::ALL)
                };
                let pm = self.en(PaddingMode::ALL);
                let x = self.pick(&x4);
                if Self::OPS[which] == "resample" {
                    let mut a = ResampleFwdAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .pre_padding(pre)
                        .post_padding(post)
                        .stride(stride)
                        .window(window)
                        .resample_mode(rm)
                        .padding_mode(pm);
                    a.generate_index = self.opt_flag();
                    let (y, i) = self.g.resample(x, a);
                    self.keep([y].into_iter().chain(i));
                } else {
                    let index = self.opt_t(&x4);
                    let a = ResampleBwdAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .pre_padding(pre)
                        .post_padding(post)
                        .stride(stride)
                        .window(window)
                        .resample_mode(rm)
                        .padding_mode(pm);
                    let dx = self.g.resample_bwd(x, index, a);
                    self.keep([dx]);
                }
            }
            "block_scale_quantize" => {
                let x = self.pick(&x4);
                let mut a = BlockScaleQuantizeAttributes::new()
                    .name(name)
                    .compute_data_type(cdt)
                    .block_size(1 + self.r.below(32) as i32)
                    .transpose(self.flag());
                a.axis = self.opt_i64();
                let (y, s) = self.g.block_scale_quantize(x, a);
                self.keep([y, s]);
            }
            "block_scale_dequantize" => {
                let (x, s) = (self.pick(&x4), self.pick(&[2, 3, 8, 1]));
                let bs: Vec<i32> = (0..1 + self.r.below(3))
                    .map(|_| 1 + self.r.below(32) as i32)
                    .collect();
                let neg = self.flag();
                let y = self.g.block_scale_dequantize(
                    x,
                    s,
                    BlockScaleDequantizeAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .block_size(bs)
                        .is_negative_scale(neg),
                );
                self.keep([y]);
            }
            "custom_op" => {
                let ins: Vec<TensorId> = (0..1 + self.r.below(3)).map(|_| self.pick(&x4)).collect();
                let data: Vec<u8> = (0..1 + self.r.below(40))
                    .map(|_| self.r.next() as u8)
                    .collect();
                let outs = self.g.custom_op(
                    &ins,
                    1 + self.r.below(3),
                    CustomOpAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .custom_op_id("plugin.my_op")
                        .data(data),
                );
                self.keep(outs);
            }
            "moe_grouped_matmul" => {
                let (t, w, f) = (
                    self.pick(&[32, 16]),
                    self.pick(&[4, 16, 8]),
                    self.pick(&[4]),
                );
                let (ti, tk) = (self.opt_t(&[32]), self.opt_t(&[32]));
                let mode = self.en(MoeGroupedMatmulMode::ALL);
                let y = self.g.moe_grouped_matmul(
                    t,
                    w,
                    f,
                    ti,
                    tk,
                    MoeGroupedMatmulAttributes::new()
                        .name(name)
                        .compute_data_type(cdt)
                        .mode(mode)
                        .top_k(1 + self.r.below(4) as i32),
                );
                self.keep([y]);
            }
            "moe_grouped_matmul_bwd" => {
                let (d, t, f) = (self.pick(&[32, 8]), self.pick(&[32, 16]), self.pick(&[4]));
                let y = self.g.moe_grouped_matmul_bwd(
                    d,
                    t,
                    f,
                    MoeGroupedMatmulBwdAttributes::new()
                        .name(name)
                        .compute_data_type(cdt),
                );
                self.keep([y]);
            }
            other => unreachable!("{other}"),
        }
    }
}

/// A random graph of `nodes` nodes (every op kind possible) with random graph settings.
pub fn random_graph(seed: u64, nodes: usize) -> Graph {
    let mut g = Graph::new();
    {
        let mut gn = Gen::new(&mut g, seed, false);
        for _ in 0..nodes {
            let which = gn.r.below(Gen::OPS.len());
            gn.add_op(which);
        }
        let r = &mut gn.r;
        let (a, b, c, d, e, f, h) = (
            r.below(19),
            r.below(19),
            r.below(19),
            r.coin(),
            r.coin(),
            r.below(3),
            r.next(),
        );
        // Mark a few outputs non-virtual, set ragged offsets.
        let n = gn.g.tensor_count();
        if n > 1 {
            let t = TensorId::from_index(h as usize % n);
            gn.g.set_output(t, true);
            if d {
                let other = TensorId::from_index((h as usize / 7) % n);
                gn.g.tensor_attributes_mut(t).ragged_offset = Some(other);
            }
        }
        let g = &mut *gn.g;
        g.set_name(if e { "graph \u{1F600}" } else { "" });
        g.set_compute_data_type(DataType::ALL[a])
            .set_intermediate_data_type(DataType::ALL[b])
            .set_io_data_type(DataType::ALL[c]);
        g.set_preferred_engine_id(d.then_some(h as i64 >> 3));
        g.set_override_shape_enabled(e);
        if f == 1 {
            g.set_min_required_engine_api_version(Some(EngineApiVersion {
                major: 1,
                minor: (h % 5) as u32,
                patch: 7,
            }));
        }
        if f >= 1 {
            g.set_id(Some(h.to_le_bytes().repeat(2).try_into().unwrap()));
        }
    }
    g.assign_uids();
    g
}

/// Asserts bytes → graph → bytes and legacy JSON → graph → legacy JSON are identities and the
/// graph survives; and that upstream's JSON ([`Graph::to_json`]) → graph → JSON is an identity
/// (every node kind; a non-finite float does not survive it). Returns the bytes and the legacy
/// JSON ([`Graph::to_flatbuffer_json`]).
pub fn assert_round_trips(g: &Graph) -> (Vec<u8>, String) {
    let bytes = g.to_graph_bytes().expect("to_graph_bytes");
    let back = Graph::from_graph_bytes(&bytes).expect("from_graph_bytes");
    assert_eq!(&back, g, "graph changed through bytes");
    assert_eq!(
        back.to_graph_bytes().unwrap(),
        bytes,
        "bytes changed through a round trip"
    );
    let json = g.to_flatbuffer_json().expect("to_flatbuffer_json");
    let back = Graph::from_flatbuffer_json(&json).expect("from_flatbuffer_json");
    assert_eq!(&back, g, "graph changed through legacy JSON");
    assert_eq!(
        back.to_flatbuffer_json().unwrap(),
        json,
        "legacy JSON changed through a round trip"
    );
    let up = g.to_json().expect("to_json");
    match Graph::from_json(&up) {
        Ok(back) => assert_eq!(
            back.to_json().unwrap(),
            up,
            "upstream JSON changed through a round trip"
        ),
        // Upstream's writer prints a non-finite float as `null` (it does not survive; a
        // scalar tensor's `null` value is then refused by the reader).
        Err(e) => assert!(
            g.tensors().any(|(_, t)| matches!(
                t.value,
                Some(TensorValue::Float32(x) | TensorValue::Float16(x) | TensorValue::BFloat16(x)) if !x.is_finite()
            ) || matches!(t.value, Some(TensorValue::Float64(x)) if !x.is_finite())),
            "from_json: {e}\n{up}"
        ),
    }
    (bytes, json)
}

/// `y = mode(x)` over `n` f32 values, uids 1 (x) → 2 (y).
pub fn unary_graph(mode: PointwiseMode, n: usize) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(TensorAttributes::new("x").uid(1).dims([n as i64]));
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(mode));
    g.set_output(y, true).set_uid(y, 2);
    g
}

/// Executes a [`unary_graph`] on `x` and returns the output's bits.
pub fn run_unary(g: &Graph, h: &Handle, x: &[f32]) -> Vec<u32> {
    let xb = Buffer::from_slice_on(h, x).unwrap();
    let mut y = Buffer::<f32>::alloc(h, x.len()).unwrap();
    g.execute(h, VariantPack::new().input(1, &xb).output(2, &mut y), None)
        .unwrap();
    y.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}
