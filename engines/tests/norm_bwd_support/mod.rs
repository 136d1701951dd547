//! Layernorm / rmsnorm backward graphs for the norm_bwd tests (`triton_norm_bwd.rs` without a
//! device, `gpu_norm_bwd.rs` on one): UIDs dy 1, x 2, scale 3, mean 4, inv_variance / inv_rms
//! 5, epsilon 6, dx 7, dscale 8, dbias 9.

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_schema::graph::{
    DataType as DT, LayernormBackwardAttributes, LayernormBackwardAttributesArgs, NodeAttributes,
    RMSNormBackwardAttributes, RMSNormBackwardAttributesArgs,
};
use hipdnn_schema::tensor_value::TensorValue;

pub const DY: i64 = 1;
pub const X: i64 = 2;
pub const SCALE: i64 = 3;
pub const MEAN: i64 = 4;
pub const INV: i64 = 5;
pub const EPS: i64 = 6;
pub const DX: i64 = 7;
pub const DSCALE: i64 = 8;
pub const DBIAS: i64 = 9;

/// One norm backward node's graph.
#[derive(Debug, Clone)]
pub struct NormBwdCase {
    /// rmsnorm (else layernorm).
    pub rms: bool,
    /// x's type (and every other tensor's unless made f32 below).
    pub dt: DT,
    /// x dims (row-major packed unless `x_strides`).
    pub dims: Vec<i64>,
    /// dy, x and dx strides; `None` = packed.
    pub x_strides: Option<Vec<i64>>,
    /// scale, dscale and dbias dims (right-aligned to x).
    pub scale_dims: Vec<i64>,
    /// layernorm's normalized_dim_count (0 = from the scale).
    pub ndc: i64,
    /// dbias requested (always for layernorm).
    pub dbias: bool,
    /// The saved statistics (layernorm without them: recomputed from x with epsilon).
    pub saved: bool,
    /// scale, the statistics and dy f32 (else x's type).
    pub in_f32: bool,
    /// dx, dscale and dbias f32 (else x's type).
    pub out_f32: bool,
}

impl NormBwdCase {
    /// A packed layernorm backward over the last dim of `dims` (scale `[1, …, cols]`), with
    /// the saved statistics.
    pub fn layernorm(dt: DT, dims: &[i64]) -> NormBwdCase {
        let mut scale_dims = vec![1; dims.len()];
        *scale_dims.last_mut().unwrap() = *dims.last().unwrap();
        NormBwdCase {
            rms: false,
            dt,
            dims: dims.to_vec(),
            x_strides: None,
            scale_dims,
            ndc: 0,
            dbias: true,
            saved: true,
            in_f32: false,
            out_f32: false,
        }
    }

    /// As [`Self::layernorm`] for rmsnorm without dbias.
    pub fn rmsnorm(dt: DT, dims: &[i64]) -> NormBwdCase {
        NormBwdCase {
            rms: true,
            dbias: false,
            ..NormBwdCase::layernorm(dt, dims)
        }
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

    /// Output UIDs: dx, dscale, then dbias when requested.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![DX, DSCALE];
        if self.dbias {
            v.push(DBIAS);
        }
        v
    }

    /// Input UIDs: dy, x, scale, then the saved statistics (epsilon is in the graph).
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![DY, X, SCALE];
        if self.saved {
            if !self.rms {
                v.push(MEAN);
            }
            v.push(INV);
        }
        v
    }

    /// Element counts per UID.
    pub fn count(&self, uid: i64) -> usize {
        let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
        match uid {
            DY | X | DX => vol(&self.dims),
            SCALE | DSCALE | DBIAS => vol(&self.scale_dims),
            _ => vol(&self.stat_dims()),
        }
    }

    pub fn graph(&self) -> GraphBuilder {
        let name = if self.rms {
            "rmsnorm_backward"
        } else {
            "layernorm_backward"
        };
        let mut g = GraphBuilder::new(name);
        let in_dt = if self.in_f32 { DT::FLOAT } else { self.dt };
        let out_dt = if self.out_f32 { DT::FLOAT } else { self.dt };
        let with = |t: TensorSpec| match &self.x_strides {
            Some(s) => t.strides(s),
            None => t,
        };
        g.tensor(with(TensorSpec::new(DY, "dy", in_dt, &self.dims)))
            .tensor(with(TensorSpec::new(X, "x", self.dt, &self.dims)))
            .tensor(with(TensorSpec::new(DX, "dx", out_dt, &self.dims)))
            .tensor(TensorSpec::new(SCALE, "scale", in_dt, &self.scale_dims))
            .tensor(TensorSpec::new(DSCALE, "dscale", out_dt, &self.scale_dims));
        if self.dbias {
            g.tensor(TensorSpec::new(DBIAS, "dbias", out_dt, &self.scale_dims));
        }
        let sd = self.stat_dims();
        if self.saved {
            if !self.rms {
                g.tensor(TensorSpec::new(MEAN, "mean", in_dt, &sd));
            }
            g.tensor(TensorSpec::new(INV, "inv", in_dt, &sd));
        } else {
            g.tensor(TensorSpec::scalar(EPS, "eps", TensorValue::Float32(1e-5)));
        }
        let (rms, dbias, saved, ndc) = (self.rms, self.dbias, self.saved, self.ndc);
        g.node(
            "norm_bwd",
            Box::new(move |fbb| {
                if rms {
                    let a = RMSNormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        inv_rms_tensor_uid: INV,
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: dbias.then_some(DBIAS),
                    };
                    (
                        NodeAttributes::RMSNormBackwardAttributes,
                        RMSNormBackwardAttributes::create(fbb, &a).as_union_value(),
                    )
                } else {
                    let a = LayernormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        mean_tensor_uid: saved.then_some(MEAN),
                        inv_variance_tensor_uid: saved.then_some(INV),
                        epsilon_tensor_uid: (!saved).then_some(EPS),
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: DBIAS,
                        normalized_dim_count: ndc,
                    };
                    (
                        NodeAttributes::LayernormBackwardAttributes,
                        LayernormBackwardAttributes::create(fbb, &a).as_union_value(),
                    )
                }
            }),
        );
        g
    }

    /// Input values: x in [-2, 3], scale in [0.5, 1.5], dy in [-1, 1], and the saved
    /// statistics as a forward computes them from x (rounded to their type by the reference
    /// engine when it reads them), so the gradients are those of a real training step.
    pub fn input_values(&self, seed: u64) -> Vec<(i64, Vec<f32>)> {
        use hipdnn_engines::reference::testing::random_values;
        let x = random_values(self.count(X), seed * 31 + 2, -2.0, 3.0);
        let (rows, cols) = self.rows_cols();
        let mut v = vec![
            (DY, random_values(self.count(DY), seed * 31 + 1, -1.0, 1.0)),
            (X, x.clone()),
            (
                SCALE,
                random_values(self.count(SCALE), seed * 31 + 3, 0.5, 1.5),
            ),
        ];
        if self.saved {
            let (mut mean, mut inv) = (Vec::new(), Vec::new());
            for r in 0..rows {
                let row = &x[r * cols..(r + 1) * cols];
                let m = if self.rms {
                    0.0
                } else {
                    row.iter().map(|&v| f64::from(v)).sum::<f64>() / cols as f64
                };
                let var =
                    row.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / cols as f64;
                mean.push(m as f32);
                inv.push((1.0 / (var + 1e-5).sqrt()) as f32);
            }
            if !self.rms {
                v.push((MEAN, mean));
            }
            v.push((INV, inv));
        }
        v
    }
}

/// The shape matrix of `gpu_norm_bwd.rs` (also built on a fake device and run through the
/// Triton interpreter by `triton_norm_bwd.rs`): rows of 1, 7, 384, 1000, 4097 elements × 1, 3,
/// 17 rows (every other case a 3-D `(1, rows, cols)` when cols > 1) × f32/f16/bf16 × layernorm / rmsnorm
/// without dbias / rmsnorm with dbias, f32 dy/scale/statistics and outputs for some 16-bit
/// cases, a transposed dy/x/dx, a 3-D normalized block (normalized_dim_count 2), and a case
/// of 1200 rows (several row blocks per phase-0 program).
pub fn gpu_cases() -> Vec<NormBwdCase> {
    let mut v = Vec::new();
    let mut k = 0;
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for cols in [1, 7, 384, 1000, 4097] {
            for rows in [1, 3, 17] {
                k += 1;
                // (1, rows, 1) would normalize (rows, 1) under a scale of ones: a scale
                // broadcast over the normalized axes, which the pack leaves to the CPU engine.
                let dims: Vec<i64> = if k % 2 == 0 && cols > 1 {
                    vec![1, rows, cols]
                } else {
                    vec![rows, cols]
                };
                for (rms, dbias) in [(false, true), (true, false), (true, true)] {
                    let mut c = if rms {
                        NormBwdCase::rmsnorm(dt, &dims)
                    } else {
                        NormBwdCase::layernorm(dt, &dims)
                    };
                    c.dbias = dbias;
                    if dt != DT::FLOAT && k % 4 == 1 {
                        c.in_f32 = true;
                        c.out_f32 = k % 8 == 1;
                    }
                    v.push(c);
                }
            }
        }
    }
    for dt in [DT::FLOAT, DT::HALF] {
        // A transposed dy, x and dx (rows contiguous down the columns).
        v.push(NormBwdCase {
            x_strides: Some(vec![1, 5]),
            ..NormBwdCase::layernorm(dt, &[5, 384])
        });
        // Two normalized axes: (4, 6, 64) normalized over (6, 64).
        v.push(NormBwdCase {
            ndc: 2,
            scale_dims: vec![1, 6, 64],
            ..NormBwdCase::layernorm(dt, &[4, 6, 64])
        });
    }
    // More row blocks than phase-0 programs: 1200 rows of 64 in blocks of 8 → 150 blocks;
    // and 4500 rows of 384 in blocks of 2 → 2250 blocks on 450 programs of 5.
    v.push(NormBwdCase::layernorm(DT::FLOAT, &[1200, 64]));
    v.push(NormBwdCase {
        dbias: true,
        ..NormBwdCase::rmsnorm(DT::BFLOAT16, &[4500, 384])
    });
    v
}
