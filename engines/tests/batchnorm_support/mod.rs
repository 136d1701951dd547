//! Batchnorm graphs for the batchnorm_fwd tests (`triton_batchnorm.rs` without a device,
//! `gpu_batchnorm.rs` on one): UIDs x 1, scale 2, bias 3, epsilon 4 (a pass-by-value scalar),
//! y 5, inference mean 6 and inv_variance / variance 7, saved mean 8 and inv_variance 9, prev
//! running mean 10 and variance 11, momentum 12 (a pass-by-value scalar), next running mean 13
//! and variance 14.

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values};
use hipdnn_schema::graph::{
    BatchnormAttributes, BatchnormAttributesArgs, BatchnormInferenceAttributes,
    BatchnormInferenceAttributesArgs, BatchnormInferenceAttributesVarianceExt,
    BatchnormInferenceAttributesVarianceExtArgs, DataType as DT, NodeAttributes,
};
use hipdnn_schema::tensor_value::TensorValue;

pub const X: i64 = 1;
pub const SCALE: i64 = 2;
pub const BIAS: i64 = 3;
pub const EPS: i64 = 4;
pub const Y: i64 = 5;
pub const MEAN: i64 = 6;
pub const VAR: i64 = 7;
pub const SAVED_MEAN: i64 = 8;
pub const SAVED_INV: i64 = 9;
pub const PREV_MEAN: i64 = 10;
pub const PREV_VAR: i64 = 11;
pub const MOMENTUM: i64 = 12;
pub const NEXT_MEAN: i64 = 13;
pub const NEXT_VAR: i64 = 14;

/// The node kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `batchnorm_inference` (mean + inv_variance).
    Inv,
    /// `batchnorm_inference_variance_ext` (mean + variance + epsilon).
    Var,
    /// `batchnorm` training forward.
    Train,
}

/// One batchnorm node's graph.
#[derive(Debug, Clone)]
pub struct BnCase {
    /// Node kind.
    pub form: Form,
    /// x's type (y's too unless `y_f32`).
    pub dt: DT,
    /// x dims `(N, C, spatial…)`.
    pub dims: Vec<i64>,
    /// x and y channels-last (NHWC, NDHWC, …; else packed NCHW).
    pub channels_last: bool,
    /// Explicit x and y strides (wins over `channels_last`).
    pub strides: Option<Vec<i64>>,
    /// Dims of every per-channel tensor; `None` = `(1, C, 1, …)` of x's rank.
    pub stat_dims: Option<Vec<i64>>,
    /// Per-channel tensors (scale, bias, statistics) f32 (else x's type).
    pub aux_f32: bool,
    /// y f32 (else x's type).
    pub y_f32: bool,
    /// y's type (wins over `y_f32`).
    pub y_dt: Option<DT>,
    /// Dims of the saved and running statistics (else [`Self::channel_dims`]).
    pub out_dims: Option<Vec<i64>>,
    /// Training: the saved mean and inv_variance outputs.
    pub saved: bool,
    /// Training: running statistics.
    pub running: bool,
    /// Epsilon.
    pub eps: f32,
    /// Epsilon a HALF scalar (else FLOAT).
    pub eps_half: bool,
    /// Epsilon (and momentum) runtime pass-by-value scalars (bound at execute).
    pub scalars_runtime: bool,
    /// Momentum.
    pub momentum: f32,
}

impl BnCase {
    /// A packed NCHW case of `form` (training without saved or running statistics).
    pub fn new(form: Form, dt: DT, dims: &[i64]) -> BnCase {
        BnCase {
            form,
            dt,
            dims: dims.to_vec(),
            channels_last: false,
            strides: None,
            stat_dims: None,
            aux_f32: false,
            y_f32: false,
            y_dt: None,
            out_dims: None,
            saved: false,
            running: false,
            eps: 1e-5,
            eps_half: false,
            scalars_runtime: false,
            momentum: 0.1,
        }
    }

    /// Channels-last x and y.
    pub fn nhwc(mut self) -> Self {
        self.channels_last = true;
        self
    }

    /// Training with the saved statistics and (when `running`) the running statistics.
    pub fn with_stats(mut self, running: bool) -> Self {
        self.saved = true;
        self.running = running;
        self
    }

    /// C.
    pub fn c(&self) -> i64 {
        self.dims[1]
    }

    /// N·spatial (values per channel).
    pub fn per_channel(&self) -> usize {
        (self.dims.iter().product::<i64>() / self.c()) as usize
    }

    /// Dims of the per-channel tensors.
    pub fn channel_dims(&self) -> Vec<i64> {
        self.stat_dims.clone().unwrap_or_else(|| {
            let mut d = vec![1; self.dims.len()];
            d[1] = self.c();
            d
        })
    }

    /// Input UIDs (epsilon and momentum are in the graph unless runtime).
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![X, SCALE, BIAS];
        match self.form {
            Form::Inv | Form::Var => v.extend([MEAN, VAR]),
            Form::Train if self.running => v.extend([PREV_MEAN, PREV_VAR]),
            Form::Train => {}
        }
        v
    }

    /// Output UIDs: y, then the saved and running statistics.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![Y];
        if self.form == Form::Train {
            if self.saved {
                v.extend([SAVED_MEAN, SAVED_INV]);
            }
            if self.running {
                v.extend([NEXT_MEAN, NEXT_VAR]);
            }
        }
        v
    }

    /// Element count of `uid`.
    pub fn count(&self, uid: i64) -> usize {
        let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
        match (&self.out_dims, uid) {
            (_, X | Y) => vol(&self.dims),
            (Some(d), SAVED_MEAN | SAVED_INV | PREV_MEAN | PREV_VAR | NEXT_MEAN | NEXT_VAR) => {
                vol(d)
            }
            _ => vol(&self.channel_dims()),
        }
    }

    /// The type of `uid`.
    pub fn type_of(&self, uid: i64) -> DT {
        match uid {
            X => self.dt,
            Y if self.y_dt.is_some() => self.y_dt.unwrap_or(self.dt),
            Y if self.y_f32 => DT::FLOAT,
            Y => self.dt,
            _ if self.aux_f32 => DT::FLOAT,
            _ => self.dt,
        }
    }

    /// Deterministic inputs: x in [−2, 3) plus a per-channel offset in [−2, 2), scale in
    /// [0.5, 1.5), bias, means in [−1, 1), variances in [0.5, 2), inv_variance in [0.7, 1.4).
    pub fn input_values(&self, seed: u64) -> Vec<(i64, Vec<f32>)> {
        self.inputs()
            .into_iter()
            .map(|u| {
                let n = self.count(u);
                let s = seed * 31 + u as u64;
                let v = match u {
                    X => {
                        let off = random_values(self.c() as usize, s + 7, -2.0, 2.0);
                        let inner = self.per_channel() / self.dims[0] as usize;
                        random_values(n, s, -2.0, 3.0)
                            .into_iter()
                            .enumerate()
                            .map(|(i, x)| x + off[(i / inner) % self.c() as usize])
                            .collect()
                    }
                    SCALE => random_values(n, s, 0.5, 1.5),
                    VAR if self.form == Form::Inv => random_values(n, s, 0.7, 1.4),
                    VAR | PREV_VAR => random_values(n, s, 0.5, 2.0),
                    _ => random_values(n, s, -1.0, 1.0),
                };
                (u, v)
            })
            .collect()
    }

    fn scalar(&self, uid: i64, name: &str, v: f32, half: bool) -> TensorSpec {
        let t = TensorSpec::scalar(
            uid,
            name,
            if half {
                TensorValue::Float16(v)
            } else {
                TensorValue::Float32(v)
            },
        );
        if self.scalars_runtime { t.runtime() } else { t }
    }

    pub fn graph(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new("batchnorm");
        let with = |t: TensorSpec| match (&self.strides, self.channels_last) {
            (Some(s), _) => t.strides(s),
            (None, true) => t.channels_last(),
            (None, false) => t,
        };
        let cd = self.channel_dims();
        g.tensor(with(TensorSpec::new(X, "x", self.dt, &self.dims)))
            .tensor(with(TensorSpec::new(Y, "y", self.type_of(Y), &self.dims)));
        let names = [
            (SCALE, "scale"),
            (BIAS, "bias"),
            (MEAN, "mean"),
            (VAR, "var"),
            (SAVED_MEAN, "saved_mean"),
            (SAVED_INV, "saved_inv"),
            (PREV_MEAN, "prev_mean"),
            (PREV_VAR, "prev_var"),
            (NEXT_MEAN, "next_mean"),
            (NEXT_VAR, "next_var"),
        ];
        let mut uids = self.inputs();
        uids.extend(self.outputs());
        for (u, n) in names {
            let dims = match (&self.out_dims, u) {
                (Some(d), SAVED_MEAN | SAVED_INV | PREV_MEAN | PREV_VAR | NEXT_MEAN | NEXT_VAR) => {
                    d.clone()
                }
                _ => cd.clone(),
            };
            if uids.contains(&u) {
                g.tensor(TensorSpec::new(u, n, self.type_of(u), &dims));
            }
        }
        if self.form != Form::Inv {
            g.tensor(self.scalar(EPS, "eps", self.eps, self.eps_half));
        }
        if self.running {
            g.tensor(self.scalar(MOMENTUM, "momentum", self.momentum, false));
        }
        let (form, saved, running) = (self.form, self.saved, self.running);
        g.node(
            "bn",
            Box::new(move |fbb| match form {
                Form::Inv => (
                    NodeAttributes::BatchnormInferenceAttributes,
                    BatchnormInferenceAttributes::create(
                        fbb,
                        &BatchnormInferenceAttributesArgs {
                            x_tensor_uid: X,
                            mean_tensor_uid: MEAN,
                            inv_variance_tensor_uid: VAR,
                            scale_tensor_uid: SCALE,
                            bias_tensor_uid: BIAS,
                            y_tensor_uid: Y,
                        },
                    )
                    .as_union_value(),
                ),
                Form::Var => (
                    NodeAttributes::BatchnormInferenceAttributesVarianceExt,
                    BatchnormInferenceAttributesVarianceExt::create(
                        fbb,
                        &BatchnormInferenceAttributesVarianceExtArgs {
                            x_tensor_uid: X,
                            mean_tensor_uid: MEAN,
                            variance_tensor_uid: VAR,
                            scale_tensor_uid: SCALE,
                            bias_tensor_uid: BIAS,
                            y_tensor_uid: Y,
                            epsilon_tensor_uid: EPS,
                        },
                    )
                    .as_union_value(),
                ),
                Form::Train => (
                    NodeAttributes::BatchnormAttributes,
                    BatchnormAttributes::create(
                        fbb,
                        &BatchnormAttributesArgs {
                            x_tensor_uid: X,
                            scale_tensor_uid: SCALE,
                            bias_tensor_uid: BIAS,
                            epsilon_tensor_uid: EPS,
                            y_tensor_uid: Y,
                            mean_tensor_uid: saved.then_some(SAVED_MEAN),
                            inv_variance_tensor_uid: saved.then_some(SAVED_INV),
                            prev_running_mean_tensor_uid: running.then_some(PREV_MEAN),
                            prev_running_variance_tensor_uid: running.then_some(PREV_VAR),
                            momentum_tensor_uid: running.then_some(MOMENTUM),
                            next_running_mean_tensor_uid: running.then_some(NEXT_MEAN),
                            next_running_variance_tensor_uid: running.then_some(NEXT_VAR),
                            ..Default::default()
                        },
                    )
                    .as_union_value(),
                ),
            }),
        );
        g
    }

    /// A one-line description for test output.
    pub fn label(&self) -> String {
        let form = match (self.form, self.saved, self.running) {
            (Form::Inv, ..) => "inference inv_variance",
            (Form::Var, ..) => "inference variance+eps",
            (Form::Train, false, false) => "training",
            (Form::Train, true, false) => "training +saved",
            (Form::Train, _, true) => "training +saved +running",
        };
        let dt = |d: DT| match d {
            DT::FLOAT => "f32",
            DT::HALF => "f16",
            _ => "bf16",
        };
        format!(
            "{} {} {:?} {}{}{}",
            form,
            dt(self.dt),
            self.dims,
            if self.strides.is_some() {
                "strided"
            } else if self.channels_last {
                "NHWC"
            } else {
                "NCHW"
            },
            if self.aux_f32 { " f32-aux" } else { "" },
            if self.y_f32 { " f32-y" } else { "" },
        )
    }
}

/// The five forms the matrix cycles through: inference inv_variance, inference variance +
/// epsilon, training, training with the saved statistics, training with saved and running
/// statistics.
pub fn forms(dt: DT, dims: &[i64]) -> Vec<BnCase> {
    vec![
        BnCase::new(Form::Inv, dt, dims),
        BnCase::new(Form::Var, dt, dims),
        BnCase::new(Form::Train, dt, dims),
        BnCase::new(Form::Train, dt, dims).with_stats(false),
        BnCase::new(Form::Train, dt, dims).with_stats(true),
    ]
}

/// The shape matrix of `gpu_batchnorm.rs` (also built on a fake device and run on the CPU
/// reference by `triton_batchnorm.rs`): x dims with odd channel counts and spatial sizes,
/// batch 1 included, 2-D to 5-D (`[1, 3, 7, 7]`, `[2, 5, 9, 11]`, `[4, 16, 8, 8]`, `[3, 7,
/// 13]`, `[8, 33]`, `[2, 32, 56, 56]`, `[1, 64, 14, 14]`, `[2, 3, 2, 5, 3]`, `[16, 24, 1,
/// 1]`) × NCHW / NHWC × f32 / f16 / bf16 × the five [`forms`]; every third 16-bit case with
/// f32 per-channel tensors and every fifth with an f32 y; plus x and y with padded channel
/// planes (`[2, 3, 1, 37]`, channel stride 40), a HALF epsilon, per-channel tensors of dims `[C]` on a 2-D x and `[C, 1, 1]` on a 4-D x.
pub fn gpu_cases() -> Vec<BnCase> {
    let shapes: [&[i64]; 9] = [
        &[1, 3, 7, 7],
        &[2, 5, 9, 11],
        &[4, 16, 8, 8],
        &[3, 7, 13],
        &[8, 33],
        &[2, 32, 56, 56],
        &[1, 64, 14, 14],
        &[2, 3, 2, 5, 3],
        &[16, 24, 1, 1],
    ];
    let mut v = Vec::new();
    let mut k = 0;
    for dims in shapes {
        for nhwc in [false, true] {
            for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
                for mut c in forms(dt, dims) {
                    k += 1;
                    c.channels_last = nhwc;
                    if dt != DT::FLOAT {
                        c.aux_f32 = k % 3 == 0;
                        c.y_f32 = k % 5 == 0;
                    }
                    v.push(c);
                }
            }
        }
    }
    // x and y with padded channel planes (37 values at a channel stride of 40).
    v.push(BnCase {
        strides: Some(vec![3 * 40, 40, 40, 1]),
        ..BnCase::new(Form::Train, DT::FLOAT, &[2, 3, 1, 37]).with_stats(true)
    });
    // A HALF epsilon (rounded to f16 as the reference reads it).
    v.push(BnCase {
        eps: 1e-3,
        eps_half: true,
        ..BnCase::new(Form::Var, DT::HALF, &[2, 6, 5, 5])
    });
    // Per-channel tensors [C] on a 2-D x, [C, 1, 1] on a 4-D x.
    v.push(BnCase {
        stat_dims: Some(vec![9]),
        ..BnCase::new(Form::Train, DT::FLOAT, &[5, 9]).with_stats(true)
    });
    v.push(BnCase {
        stat_dims: Some(vec![4, 1, 1]),
        ..BnCase::new(Form::Inv, DT::BFLOAT16, &[3, 4, 6, 6])
    });
    v
}
