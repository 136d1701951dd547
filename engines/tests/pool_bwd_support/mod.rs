//! Resample (pooling) backward graphs for the pool_bwd family's tests (`triton_pool_bwd.rs`
//! without a device, `gpu_pool_bwd.rs` on one): dy (UID 4) and, for max pooling, a bound index
//! (UID 3) → dx (UID 5), with the inputs and the GPU test's case matrix.
#![allow(dead_code)]

use hipdnn_engines::reference::ops::resample::PoolGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, PoolSpec, TensorSpec, packed_strides, random_values,
};
use hipdnn_schema::graph::{DataType as DT, PaddingMode, ResampleMode};

pub const IDX: i64 = 3;
pub const DY: i64 = 4;
pub const DX: i64 = 5;

/// One backward graph: dx dims `xd`, the forward's geometry, the mode, dx/dy type, the index
/// type (max pooling), and the layout of dx and dy: 0 packed, 1 channels-last, 2 strided (each
/// spatial row padded by 3 elements).
#[derive(Debug, Clone)]
pub struct PoolBwdCase {
    pub xd: Vec<i64>,
    pub window: Vec<usize>,
    pub stride: Vec<usize>,
    pub pre: Vec<usize>,
    pub post: Vec<usize>,
    pub mode: ResampleMode,
    pub dt: DT,
    pub idx_dt: DT,
    pub layout: u8,
}

impl PoolBwdCase {
    /// A packed f32 max-pool case with an INT32 index.
    pub fn new(
        xd: &[i64],
        window: &[usize],
        stride: &[usize],
        pre: &[usize],
        post: &[usize],
    ) -> Self {
        PoolBwdCase {
            xd: xd.to_vec(),
            window: window.to_vec(),
            stride: stride.to_vec(),
            pre: pre.to_vec(),
            post: post.to_vec(),
            mode: ResampleMode::MAXPOOL,
            dt: DT::FLOAT,
            idx_dt: DT::INT32,
            layout: 0,
        }
    }

    pub fn spec(&self) -> PoolSpec {
        PoolSpec {
            geo: PoolGeometry {
                window: self.window.clone(),
                stride: self.stride.clone(),
                pre: self.pre.clone(),
                post: self.post.clone(),
            },
            mode: self.mode,
            padding: PaddingMode::NEG_INF_PAD,
        }
    }

    /// dy's dims: `(N, C, out…)`.
    pub fn yd(&self) -> Vec<i64> {
        let mut v = self.xd[..2].to_vec();
        for d in 0..self.xd.len() - 2 {
            let span = self.xd[d + 2] + (self.pre[d] + self.post[d]) as i64;
            v.push((span - self.window[d] as i64) / self.stride[d] as i64 + 1);
        }
        v
    }

    pub fn max(&self) -> bool {
        self.mode == ResampleMode::MAXPOOL
    }

    fn tensor(&self, uid: i64, name: &str, dims: &[i64]) -> TensorSpec {
        let t = TensorSpec::new(uid, name, self.dt, dims);
        match self.layout {
            1 => t.channels_last(),
            2 => {
                let mut wide = dims.to_vec();
                *wide.last_mut().unwrap() += 3;
                t.strides(&packed_strides(&wide))
            }
            _ => t,
        }
    }

    /// The backward-only graph.
    pub fn graph(&self) -> GraphBuilder {
        let yd = self.yd();
        let index = self.max().then_some(IDX);
        let mut g = GraphBuilder::new("pool_bwd");
        g.tensor(self.tensor(DY, "dy", &yd))
            .tensor(self.tensor(DX, "dx", &self.xd));
        if index.is_some() {
            g.tensor(TensorSpec::new(IDX, "index", self.idx_dt, &yd));
        }
        g.resample_bwd("bwd", DY, index, DX, &self.spec());
        g
    }

    /// dy uniform in [−1, 1) and, for max pooling, an index uniform over the window's
    /// positions (some in the padding, which take nothing).
    pub fn inputs(&self, seed: u64) -> Vec<(i64, Vec<f32>)> {
        let n = self.yd().iter().product::<i64>() as usize;
        let mut v = vec![(DY, random_values(n, seed, -1.0, 1.0))];
        if self.max() {
            let vol: usize = self.window.iter().product();
            let idx = random_values(n, seed + 1, 0.0, vol as f32)
                .into_iter()
                .map(|x| x.floor().min(vol as f32 - 1.0))
                .collect();
            v.push((IDX, idx));
        }
        v
    }
}

/// The GPU test's matrix (also built on a fake device and run through the interpreter by
/// `triton_pool_bwd.rs`): every mode over overlapping 3×3 stride-2 windows with padding
/// (ResNet's stem pool), 2×2 stride 2, a window wider than its stride on one axis, 1-D and
/// 3-D pooling, a global average; f32, f16 and bf16; INT32 and INT64 indices; packed,
/// channels-last and strided layouts; odd sizes and batch 1.
pub fn gpu_cases() -> Vec<PoolBwdCase> {
    let mut v = Vec::new();
    let modes = [
        ResampleMode::MAXPOOL,
        ResampleMode::AVGPOOL_INCLUDE_PADDING,
        ResampleMode::AVGPOOL_EXCLUDE_PADDING,
    ];
    for (i, dt) in [DT::FLOAT, DT::HALF, DT::BFLOAT16].into_iter().enumerate() {
        for (j, mode) in modes.into_iter().enumerate() {
            let mut c = PoolBwdCase::new(&[2, 5, 13, 11], &[3, 3], &[2, 2], &[1, 1], &[1, 1]);
            c.dt = dt;
            c.mode = mode;
            c.layout = ((i + j) % 3) as u8;
            c.idx_dt = if j == 0 && i == 1 {
                DT::INT64
            } else {
                DT::INT32
            };
            v.push(c);
        }
    }
    let mut c = PoolBwdCase::new(&[1, 16, 8, 8], &[2, 2], &[2, 2], &[0, 0], &[0, 0]);
    c.layout = 1;
    v.push(c.clone());
    c.mode = ResampleMode::AVGPOOL_INCLUDE_PADDING;
    v.push(c);
    let mut c = PoolBwdCase::new(&[2, 3, 9, 7], &[3, 2], &[1, 2], &[1, 0], &[1, 1]);
    c.mode = ResampleMode::AVGPOOL_EXCLUDE_PADDING;
    c.dt = DT::HALF;
    v.push(c);
    v.push(PoolBwdCase::new(&[3, 2, 23], &[3], &[2], &[1], &[1]));
    let mut c = PoolBwdCase::new(
        &[1, 2, 5, 6, 7],
        &[2, 3, 2],
        &[2, 2, 1],
        &[0, 1, 1],
        &[1, 1, 0],
    );
    c.layout = 1;
    v.push(c.clone());
    c.mode = ResampleMode::AVGPOOL_EXCLUDE_PADDING;
    v.push(c);
    let mut c = PoolBwdCase::new(&[2, 64, 7, 7], &[7, 7], &[1, 1], &[0, 0], &[0, 0]);
    c.mode = ResampleMode::AVGPOOL_INCLUDE_PADDING;
    c.layout = 1;
    c.dt = DT::HALF;
    v.push(c);
    // ResNet-50's stem pool at batch 2: 64 × 112² → 56², channels-last f16.
    let mut c = PoolBwdCase::new(&[2, 64, 112, 112], &[3, 3], &[2, 2], &[1, 1], &[1, 1]);
    c.layout = 1;
    c.dt = DT::HALF;
    v.push(c);
    v
}
