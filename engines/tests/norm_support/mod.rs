//! Layernorm / rmsnorm graphs for the norm_fwd tests (`triton_norm.rs` without a device,
//! `gpu_norms.rs` on one): UIDs x 1, scale 2, bias 3, epsilon 4 (a pass-by-value f32 scalar),
//! y 5, mean 6, inv_variance / inv_rms 7.

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_schema::graph::{
    DataType as DT, LayernormAttributes, LayernormAttributesArgs, NodeAttributes, NormFwdPhase,
    RMSNormAttributes, RMSNormAttributesArgs,
};
use hipdnn_schema::tensor_value::TensorValue;

pub const X: i64 = 1;
pub const SCALE: i64 = 2;
pub const BIAS: i64 = 3;
pub const EPS: i64 = 4;
pub const Y: i64 = 5;
pub const MEAN: i64 = 6;
pub const INV: i64 = 7;

/// One norm node's graph.
#[derive(Debug, Clone)]
pub struct NormCase {
    /// rmsnorm (else layernorm).
    pub rms: bool,
    /// x's type (y's too unless `y_f32`).
    pub dt: DT,
    /// x dims (row-major packed unless `x_strides`).
    pub dims: Vec<i64>,
    /// x (and y) strides; `None` = packed.
    pub x_strides: Option<Vec<i64>>,
    /// scale and bias dims (right-aligned to x).
    pub scale_dims: Vec<i64>,
    /// layernorm's normalized_dim_count (0 = from the scale).
    pub ndc: i64,
    /// A bias (always for layernorm).
    pub bias: bool,
    /// Training phase: the statistics outputs.
    pub training: bool,
    /// Epsilon.
    pub eps: f32,
    /// Epsilon a runtime pass-by-value scalar (bound at execute).
    pub eps_runtime: bool,
    /// Epsilon a HALF scalar (else FLOAT).
    pub eps_half: bool,
    /// scale and bias f32 (else x's type).
    pub affine_f32: bool,
    /// y and the statistics f32 (else x's type).
    pub out_f32: bool,
}

impl NormCase {
    /// A packed layernorm over the last dim of `dims` (scale/bias `[1, …, cols]`), inference.
    pub fn layernorm(dt: DT, dims: &[i64]) -> NormCase {
        let mut scale_dims = vec![1; dims.len()];
        *scale_dims.last_mut().unwrap() = *dims.last().unwrap();
        NormCase {
            rms: false,
            dt,
            dims: dims.to_vec(),
            x_strides: None,
            scale_dims,
            ndc: 0,
            bias: true,
            training: false,
            eps: 1e-5,
            eps_runtime: false,
            eps_half: false,
            affine_f32: false,
            out_f32: false,
        }
    }

    /// As [`Self::layernorm`] for rmsnorm without bias.
    pub fn rmsnorm(dt: DT, dims: &[i64]) -> NormCase {
        NormCase {
            rms: true,
            bias: false,
            ..NormCase::layernorm(dt, dims)
        }
    }

    pub fn training(mut self) -> Self {
        self.training = true;
        self
    }

    /// The first normalized axis (the reference engine's rule).
    pub fn first_axis(&self) -> usize {
        let r = self.dims.len();
        if self.ndc > 0 {
            return r.saturating_sub(self.ndc as usize);
        }
        let off = r - self.scale_dims.len();
        (1..r)
            .find(|&i| i >= off && self.scale_dims[i - off] != 1)
            .unwrap_or(1)
    }

    /// Rows (statistics values) and columns.
    pub fn rows_cols(&self) -> (usize, usize) {
        let f = self.first_axis();
        (
            self.dims[..f].iter().product::<i64>() as usize,
            self.dims[f..].iter().product::<i64>() as usize,
        )
    }

    /// Statistics dims (x's with the normalized axes set to 1).
    pub fn stat_dims(&self) -> Vec<i64> {
        let f = self.first_axis();
        self.dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if i >= f { 1 } else { d })
            .collect()
    }

    /// Output UIDs: y, then the statistics.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![Y];
        if self.training {
            if !self.rms {
                v.push(MEAN);
            }
            v.push(INV);
        }
        v
    }

    /// Input UIDs (epsilon is in the graph).
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![X, SCALE];
        if self.bias {
            v.push(BIAS);
        }
        v
    }

    /// Element counts per UID.
    pub fn count(&self, uid: i64) -> usize {
        let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
        match uid {
            X | Y => vol(&self.dims),
            SCALE | BIAS => vol(&self.scale_dims),
            _ => vol(&self.stat_dims()),
        }
    }

    pub fn graph(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new(if self.rms { "rmsnorm" } else { "layernorm" });
        let out_dt = if self.out_f32 { DT::FLOAT } else { self.dt };
        let aff_dt = if self.affine_f32 { DT::FLOAT } else { self.dt };
        let with = |t: TensorSpec| match &self.x_strides {
            Some(s) => t.strides(s),
            None => t,
        };
        g.tensor(with(TensorSpec::new(X, "x", self.dt, &self.dims)))
            .tensor(with(TensorSpec::new(Y, "y", out_dt, &self.dims)))
            .tensor(TensorSpec::new(SCALE, "scale", aff_dt, &self.scale_dims))
            .tensor({
                let v = if self.eps_half {
                    TensorValue::Float16(self.eps)
                } else {
                    TensorValue::Float32(self.eps)
                };
                let e = TensorSpec::scalar(EPS, "eps", v);
                if self.eps_runtime { e.runtime() } else { e }
            });
        if self.bias {
            g.tensor(TensorSpec::new(BIAS, "bias", aff_dt, &self.scale_dims));
        }
        let sd = self.stat_dims();
        if self.training {
            if !self.rms {
                g.tensor(TensorSpec::new(MEAN, "mean", out_dt, &sd));
            }
            g.tensor(TensorSpec::new(INV, "inv", out_dt, &sd));
        }
        let phase = if self.training {
            NormFwdPhase::TRAINING
        } else {
            NormFwdPhase::INFERENCE
        };
        let (rms, bias, training, ndc) = (self.rms, self.bias, self.training, self.ndc);
        g.node(
            "norm",
            Box::new(move |fbb| {
                if rms {
                    let a = RMSNormAttributesArgs {
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        epsilon_tensor_uid: EPS,
                        y_tensor_uid: Y,
                        bias_tensor_uid: bias.then_some(BIAS),
                        inv_rms_tensor_uid: training.then_some(INV),
                        forward_phase: phase,
                    };
                    (
                        NodeAttributes::RMSNormAttributes,
                        RMSNormAttributes::create(fbb, &a).as_union_value(),
                    )
                } else {
                    let a = LayernormAttributesArgs {
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        bias_tensor_uid: BIAS,
                        epsilon_tensor_uid: EPS,
                        y_tensor_uid: Y,
                        normalized_dim_count: ndc,
                        mean_tensor_uid: training.then_some(MEAN),
                        inv_variance_tensor_uid: training.then_some(INV),
                        forward_phase: phase,
                    };
                    (
                        NodeAttributes::LayernormAttributes,
                        LayernormAttributes::create(fbb, &a).as_union_value(),
                    )
                }
            }),
        );
        g
    }
}

/// The shape matrix of `gpu_norms.rs` (also built on a fake device and run on the CPU
/// reference by `triton_norm.rs`): rows of 1, 7, 384, 1000, 4097 elements × 1, 3, 17 rows
/// (every other case a 3-D `(1, rows, cols)`) × f32/f16/bf16 × layernorm/rmsnorm × inference/
/// training, f32 scale/bias (and y/statistics in training) for some 16-bit cases, a transposed
/// x/y, a HALF epsilon scalar, and MiniLM's `(2, 1, 128, 384)` layernorm with eps 1e-12.
pub fn gpu_cases() -> Vec<NormCase> {
    let mut v = Vec::new();
    let mut k = 0;
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for cols in [1, 7, 384, 1000, 4097] {
            for rows in [1, 3, 17] {
                k += 1;
                // Batch 1: a 3-D x (1, rows, cols) every other case.
                let dims: Vec<i64> = if k % 2 == 0 {
                    vec![1, rows, cols]
                } else {
                    vec![rows, cols]
                };
                for (rms, training) in [(false, false), (false, true), (true, false), (true, true)]
                {
                    let mut c = if rms {
                        NormCase::rmsnorm(dt, &dims)
                    } else {
                        NormCase::layernorm(dt, &dims)
                    };
                    c.training = training;
                    c.bias = !rms || k % 3 == 0;
                    if dt != DT::FLOAT && k % 4 == 1 {
                        c.affine_f32 = true;
                        c.out_f32 = training;
                    }
                    v.push(c);
                }
            }
        }
    }
    // A transposed x and y (rows contiguous down the columns).
    for dt in [DT::FLOAT, DT::HALF] {
        v.push(NormCase {
            x_strides: Some(vec![1, 5]),
            ..NormCase::layernorm(dt, &[5, 384]).training()
        });
    }
    // A HALF epsilon scalar (the kernel gets its value rounded to f16, as the reference reads
    // it), rmsnorm training with bias.
    v.push(NormCase {
        eps: 1e-3,
        eps_half: true,
        bias: true,
        ..NormCase::rmsnorm(DT::HALF, &[3, 100]).training()
    });
    // MiniLM's layernorm (embeddings and every encoder layer): (B, 1, S, 384), eps 1e-12.
    v.push(NormCase {
        eps: 1e-12,
        ..NormCase::layernorm(DT::FLOAT, &[2, 1, 128, 384])
    });
    v
}
