//! Batchnorm backward graphs for the bn_bwd tests (`triton_bn_bwd.rs` without a device,
//! `gpu_bn_bwd.rs` on one): UIDs dy 1, x 2, scale 3, mean 4, inv_variance 5, dx 7, dscale 8,
//! dbias 9, and with the fused ReLU backward dy_in 10 and r 11 (`RELU_BWD(dy_in, r) → dy`, dy
//! virtual).

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, pw_args, random_values};
use hipdnn_schema::graph::{
    BatchnormBackwardAttributes, BatchnormBackwardAttributesArgs, DataType as DT, NodeAttributes,
    PointwiseMode,
};

pub const DY: i64 = 1;
pub const X: i64 = 2;
pub const SCALE: i64 = 3;
pub const MEAN: i64 = 4;
pub const INV: i64 = 5;
pub const DX: i64 = 7;
pub const DSCALE: i64 = 8;
pub const DBIAS: i64 = 9;
pub const DY_IN: i64 = 10;
pub const R: i64 = 11;

/// One batchnorm backward graph.
#[derive(Debug, Clone)]
pub struct BnBwdCase {
    /// x's type (and every other tensor's unless made f32 below).
    pub dt: DT,
    /// x dims `(N, C, spatial…)`.
    pub dims: Vec<i64>,
    /// dy, x, dx (dy_in, r) channels-last (NHWC memory); else packed NCHW.
    pub channels_last: bool,
    /// `RELU_BWD(dy_in, r) → dy` in front of the node.
    pub relu: bool,
    /// scale and the saved statistics f32 (else x's type).
    pub in_f32: bool,
    /// dscale and dbias f32 (else x's type).
    pub out_f32: bool,
    /// Peer statistics (refused by both engines' rules for this pack).
    pub peer: bool,
    /// Tensors that replace the graph's tensor of the same UID (refusal tests).
    pub replace: Vec<TensorSpec>,
}

impl BnBwdCase {
    /// A packed NCHW batchnorm backward without the ReLU.
    pub fn new(dt: DT, dims: &[i64]) -> BnBwdCase {
        BnBwdCase {
            dt,
            dims: dims.to_vec(),
            channels_last: false,
            relu: false,
            in_f32: false,
            out_f32: false,
            peer: false,
            replace: Vec::new(),
        }
    }

    /// `t`, or the replacement of its UID.
    fn pick(&self, t: TensorSpec) -> TensorSpec {
        let r = self.replace.iter().find(|r| r.uid == t.uid);
        r.cloned().unwrap_or(t)
    }

    /// Channels.
    pub fn c(&self) -> usize {
        self.dims[1] as usize
    }

    /// Per-channel dims `[1, C, 1, …]`.
    pub fn channel_dims(&self) -> Vec<i64> {
        let mut d = vec![1; self.dims.len()];
        d[1] = self.dims[1];
        d
    }

    /// Output UIDs: dx, dscale, dbias.
    pub fn outputs(&self) -> Vec<i64> {
        vec![DX, DSCALE, DBIAS]
    }

    /// Input UIDs the caller binds.
    pub fn inputs(&self) -> Vec<i64> {
        let mut v = vec![if self.relu { DY_IN } else { DY }, X, SCALE, MEAN, INV];
        if self.relu {
            v.push(R);
        }
        v
    }

    /// Element counts per UID.
    pub fn count(&self, uid: i64) -> usize {
        match uid {
            DY | X | DX | DY_IN | R => self.dims.iter().product::<i64>() as usize,
            _ => self.c(),
        }
    }

    pub fn graph(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new("bn_bwd");
        let in_dt = if self.in_f32 { DT::FLOAT } else { self.dt };
        let out_dt = if self.out_f32 { DT::FLOAT } else { self.dt };
        let cl = self.channels_last;
        let like_x = |t: TensorSpec| if cl { t.channels_last() } else { t };
        let cd = self.channel_dims();
        let dy = like_x(TensorSpec::new(DY, "dy", self.dt, &self.dims));
        g.tensor(self.pick(if self.relu { dy.virtual_() } else { dy }))
            .tensor(self.pick(like_x(TensorSpec::new(X, "x", self.dt, &self.dims))))
            .tensor(self.pick(like_x(TensorSpec::new(DX, "dx", self.dt, &self.dims))))
            .tensor(self.pick(TensorSpec::new(SCALE, "scale", in_dt, &cd)))
            .tensor(self.pick(TensorSpec::new(MEAN, "mean", in_dt, &cd)))
            .tensor(self.pick(TensorSpec::new(INV, "inv", in_dt, &cd)))
            .tensor(self.pick(TensorSpec::new(DSCALE, "dscale", out_dt, &cd)))
            .tensor(self.pick(TensorSpec::new(DBIAS, "dbias", out_dt, &cd)));
        if self.relu {
            g.tensor(self.pick(like_x(TensorSpec::new(DY_IN, "dy_in", self.dt, &self.dims))))
                .tensor(self.pick(like_x(TensorSpec::new(R, "r", self.dt, &self.dims))));
            g.pointwise(
                "relu_bwd",
                pw_args(PointwiseMode::RELU_BWD, &[DY_IN, R], DY),
            );
        }
        let peer = self.peer;
        g.node(
            "bn_bwd",
            Box::new(move |fbb| {
                let peer = peer.then(|| fbb.create_vector(&[12i64]));
                (
                    NodeAttributes::BatchnormBackwardAttributes,
                    BatchnormBackwardAttributes::create(
                        fbb,
                        &BatchnormBackwardAttributesArgs {
                            dy_tensor_uid: DY,
                            x_tensor_uid: X,
                            mean_tensor_uid: Some(MEAN),
                            inv_variance_tensor_uid: Some(INV),
                            scale_tensor_uid: SCALE,
                            peer_stats_tensor_uid: peer,
                            dx_tensor_uid: DX,
                            dscale_tensor_uid: DSCALE,
                            dbias_tensor_uid: DBIAS,
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        g
    }

    /// Input values: x in [-2, 3], scale in [0.5, 1.5], dy (dy_in) in [-1, 1], r in [-1, 1],
    /// and the saved statistics as a training forward computes them from x (per channel over
    /// N and the spatial dims), so the gradients are those of a real training step.
    pub fn input_values(&self, seed: u64) -> Vec<(i64, Vec<f32>)> {
        let x = random_values(self.count(X), seed * 31 + 2, -2.0, 3.0);
        let (n, c) = (self.dims[0] as usize, self.c());
        let s = self.count(X) / (n * c);
        let (mut mean, mut inv) = (Vec::new(), Vec::new());
        for ch in 0..c {
            let vals: Vec<f64> = (0..n)
                .flat_map(|i| (0..s).map(move |p| (i, p)))
                .map(|(i, p)| f64::from(x[(i * c + ch) * s + p]))
                .collect();
            let m = vals.iter().sum::<f64>() / vals.len() as f64;
            let var = vals.iter().map(|v| (v - m).powi(2)).sum::<f64>() / vals.len() as f64;
            mean.push(m as f32);
            inv.push((1.0 / (var + 1e-5).sqrt()) as f32);
        }
        let dy = random_values(self.count(DY), seed * 31 + 1, -1.0, 1.0);
        let mut v = vec![
            (if self.relu { DY_IN } else { DY }, dy),
            (X, x),
            (SCALE, random_values(c, seed * 31 + 3, 0.5, 1.5)),
            (MEAN, mean),
            (INV, inv),
        ];
        if self.relu {
            v.push((R, random_values(self.count(R), seed * 31 + 4, -1.0, 1.0)));
        }
        v
    }
}

/// The shape matrix of `gpu_bn_bwd.rs` (also built on a fake device and run through the Triton
/// interpreter by `triton_bn_bwd.rs`): f32/f16/bf16 × NCHW / NHWC × without / with the fused
/// ReLU backward over 2-D to 5-D x with odd N·spatial and C, batch 1, one position per channel,
/// C multiples of 16 (the spec and nchw entries), f32 per-channel tensors behind 16-bit x, and
/// two larger shapes with several splits.
pub fn gpu_cases() -> Vec<BnBwdCase> {
    let shapes: [&[i64]; 8] = [
        &[1, 3, 7, 5],
        &[2, 5, 3, 3],
        &[4, 17],
        &[1, 16, 8, 8],
        &[3, 32, 5, 7],
        &[2, 7, 3, 4, 5],
        &[8, 64, 14, 14],
        &[1, 48, 33, 31],
    ];
    let mut v = Vec::new();
    let mut k = 0;
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for dims in shapes {
            for channels_last in [false, true] {
                for relu in [false, true] {
                    k += 1;
                    let mut c = BnBwdCase::new(dt, dims);
                    c.channels_last = channels_last && dims.len() > 2;
                    c.relu = relu;
                    if dt != DT::FLOAT && k % 3 == 0 {
                        c.in_f32 = true;
                        c.out_f32 = k % 2 == 0;
                    }
                    v.push(c);
                }
            }
        }
    }
    v
}
