//! Resample forward (pooling) graphs for the pool_fwd tests (`triton_pool.rs` without a device,
//! `gpu_pool.rs` on one): UIDs x 1, y 2, index 3. Also the comparison both use: every output
//! bit-identical to the CPU reference engine's (NaN equal to NaN), every index exact.

#![allow(dead_code)]

use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, channels_last_strides, packed_strides, random_values,
};
use hipdnn_schema::graph::{
    DataType as DT, NodeAttributes, PaddingMode, ResampleFwdAttributes, ResampleFwdAttributesArgs,
    ResampleMode,
};

pub const X: i64 = 1;
pub const Y: i64 = 2;
pub const I: i64 = 3;

/// The pooling mode of a case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// MAXPOOL, padding skipped (`NEG_INF_PAD`).
    Max,
    /// MAXPOOL with `ZERO_PAD`.
    MaxZeroPad,
    /// AVGPOOL_INCLUDE_PADDING.
    AvgInclude,
    /// AVGPOOL_EXCLUDE_PADDING.
    AvgExclude,
}

/// Every mode.
pub const MODES: [Mode; 4] = [
    Mode::Max,
    Mode::MaxZeroPad,
    Mode::AvgInclude,
    Mode::AvgExclude,
];

impl Mode {
    pub fn is_max(self) -> bool {
        matches!(self, Mode::Max | Mode::MaxZeroPad)
    }
    /// The pack's `op` mode code.
    pub fn code(self) -> i64 {
        match self {
            Mode::Max => 0,
            Mode::MaxZeroPad => 1,
            Mode::AvgInclude => 2,
            Mode::AvgExclude => 3,
        }
    }
}

/// A memory layout of an (N, C, spatial…) tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Layout {
    /// Row-major over (N, C, spatial…).
    Nchw,
    /// Channels last (N, spatial…, C).
    Nhwc,
}

impl Layout {
    pub fn strides(self, dims: &[i64]) -> Vec<i64> {
        match self {
            Layout::Nchw => packed_strides(dims),
            Layout::Nhwc => channels_last_strides(dims),
        }
    }
}

/// Graph changes for the refusal tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tweak {
    /// The graph as described.
    None,
    /// y declared with one more output column than the rule gives.
    WrongYDims,
    /// `generate_index` set without an index tensor.
    IndexFlagOnly,
    /// The window list has one entry too few.
    ShortWindow,
    /// y virtual.
    VirtualY,
    /// y BFLOAT16 (neither x's type nor FLOAT behind HALF x).
    OtherYType,
}

/// One pooling graph.
#[derive(Debug, Clone)]
pub struct PoolCase {
    pub mode: Mode,
    /// x's type.
    pub dt: DT,
    /// y f32 (else x's type).
    pub y_f32: bool,
    /// x dims (N, C, spatial…).
    pub dims: Vec<i64>,
    pub window: Vec<i64>,
    pub stride: Vec<i64>,
    pub pre: Vec<i64>,
    pub post: Vec<i64>,
    /// x's layout.
    pub x_layout: Layout,
    /// y's (and the index's) layout.
    pub y_layout: Layout,
    /// The index type (max modes only): INT32 or INT64.
    pub index: Option<DT>,
    /// Every 7th input NaN, every 11th +inf, every 13th −inf.
    pub specials: bool,
    /// The resample mode written into the graph when not one of the four (refusal tests).
    pub raw_mode: Option<ResampleMode>,
    pub tweak: Tweak,
}

impl PoolCase {
    /// A 1-D (rank 3), 2-D (rank 4) or 3-D (rank 5) case, NCHW, x-typed y, no index.
    pub fn new(
        mode: Mode,
        dt: DT,
        dims: &[i64],
        window: &[i64],
        stride: &[i64],
        pre: &[i64],
        post: &[i64],
    ) -> PoolCase {
        PoolCase {
            mode,
            dt,
            y_f32: false,
            dims: dims.to_vec(),
            window: window.to_vec(),
            stride: stride.to_vec(),
            pre: pre.to_vec(),
            post: post.to_vec(),
            x_layout: Layout::Nchw,
            y_layout: Layout::Nchw,
            index: None,
            specials: false,
            raw_mode: None,
            tweak: Tweak::None,
        }
    }

    /// The same case in `layout` for x and y.
    pub fn layout(mut self, layout: Layout) -> PoolCase {
        self.x_layout = layout;
        self.y_layout = layout;
        self
    }

    /// The same case with an index of type `dt`.
    pub fn with_index(mut self, dt: DT) -> PoolCase {
        self.index = Some(dt);
        self
    }

    /// y's dims: `floor((in + pre + post − window) / stride) + 1` per spatial dim.
    pub fn y_dims(&self) -> Vec<i64> {
        let mut v = vec![self.dims[0], self.dims[1]];
        for i in 0..self.dims.len() - 2 {
            v.push(
                (self.dims[i + 2] + self.pre[i] + self.post[i] - self.window[i]) / self.stride[i]
                    + 1,
            );
        }
        if self.tweak == Tweak::WrongYDims {
            *v.last_mut().unwrap() += 1;
        }
        v
    }

    pub fn y_dt(&self) -> DT {
        if self.tweak == Tweak::OtherYType {
            DT::BFLOAT16
        } else if self.y_f32 {
            DT::FLOAT
        } else {
            self.dt
        }
    }

    /// Elements of x and of y.
    pub fn counts(&self) -> (usize, usize) {
        let vol = |d: &[i64]| d.iter().product::<i64>() as usize;
        (vol(&self.dims), vol(&self.y_dims()))
    }

    /// The output UIDs: y, and the index when present.
    pub fn outputs(&self) -> Vec<i64> {
        if self.index.is_some() {
            vec![Y, I]
        } else {
            vec![Y]
        }
    }

    /// Deterministic x in [−3, 3) (with NaN and infinities when `specials`).
    pub fn input(&self, seed: u64) -> Vec<f32> {
        let (n, _) = self.counts();
        let mut v = random_values(n, seed, -3.0, 3.0);
        if self.specials {
            for (i, x) in v.iter_mut().enumerate() {
                if i % 7 == 3 {
                    *x = f32::NAN;
                } else if i % 11 == 5 {
                    *x = f32::INFINITY;
                } else if i % 13 == 6 {
                    *x = f32::NEG_INFINITY;
                }
            }
        }
        v
    }

    pub fn graph(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new("pool");
        g.tensor(
            TensorSpec::new(X, "x", self.dt, &self.dims)
                .strides(&self.x_layout.strides(&self.dims)),
        );
        let yd = self.y_dims();
        let ys = self.y_layout.strides(&yd);
        let y = TensorSpec::new(Y, "y", self.y_dt(), &yd).strides(&ys);
        g.tensor(if self.tweak == Tweak::VirtualY {
            y.virtual_()
        } else {
            y
        });
        if let Some(dt) = self.index {
            g.tensor(TensorSpec::new(I, "index", dt, &yd).strides(&ys));
        }
        let mode = self.raw_mode.unwrap_or(match self.mode {
            Mode::Max | Mode::MaxZeroPad => ResampleMode::MAXPOOL,
            Mode::AvgInclude => ResampleMode::AVGPOOL_INCLUDE_PADDING,
            Mode::AvgExclude => ResampleMode::AVGPOOL_EXCLUDE_PADDING,
        });
        let padding_mode = if self.mode == Mode::MaxZeroPad {
            PaddingMode::ZERO_PAD
        } else {
            PaddingMode::NEG_INF_PAD
        };
        let mut win = self.window.clone();
        if self.tweak == Tweak::ShortWindow {
            win.pop();
        }
        let (st, pre, post) = (self.stride.clone(), self.pre.clone(), self.post.clone());
        let index = self.index.map(|_| I);
        let generate = index.is_some() || self.tweak == Tweak::IndexFlagOnly;
        g.node(
            "pool",
            Box::new(move |fbb| {
                let (window, stride) = (fbb.create_vector(&win), fbb.create_vector(&st));
                let (pre_padding, post_padding) =
                    (fbb.create_vector(&pre), fbb.create_vector(&post));
                (
                    NodeAttributes::ResampleFwdAttributes,
                    ResampleFwdAttributes::create(
                        fbb,
                        &ResampleFwdAttributesArgs {
                            x_tensor_uid: X,
                            y_tensor_uid: Y,
                            index_tensor_uid: index,
                            pre_padding: Some(pre_padding),
                            post_padding: Some(post_padding),
                            stride: Some(stride),
                            window: Some(window),
                            resample_mode: mode,
                            padding_mode,
                            generate_index: generate.then_some(true),
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        g
    }
}

/// Compares outputs with the CPU reference's: `Ok(n)` (the elements compared) when every value
/// has the same bits as the reference's (NaN equal to NaN; values decoded to f32 from the
/// tensor's type, which is exact), else the first difference, named.
pub fn compare(what: &str, got: &[f32], want: &[f32]) -> Result<usize, String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, the reference has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        if !(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())) {
            return Err(format!("{what}: element {i}: gpu {a}, cpu {b}"));
        }
    }
    Ok(got.len())
}

/// The shape matrix of `gpu_pool.rs` (also built on a fake device and run on the CPU reference
/// by `triton_pool.rs`): every mode × f32/f16/bf16 × NCHW and NHWC over 2-D shapes with odd
/// sizes, odd and asymmetric paddings, windows larger than the stride (overlap) and smaller
/// (gaps), windows wholly inside the padding, batch 1, a global window, 64 channels (the spec
/// entries in NHWC) and ResNet's 3×3/2 max pool over 112² × 64; 1-D and 3-D shapes; the index
/// (INT32 and INT64) on the max cases; an f32 y behind 16-bit x; x NHWC with y NCHW; NaN and
/// infinite inputs for max.
pub fn gpu_cases() -> Vec<PoolCase> {
    type Shape = (
        &'static [i64],
        &'static [i64],
        &'static [i64],
        &'static [i64],
        &'static [i64],
    );
    let shapes: [Shape; 8] = [
        // Overlap (3x3 stride 2), odd sizes, asymmetric padding.
        (&[2, 3, 7, 9], &[3, 3], &[2, 2], &[1, 1], &[1, 0]),
        // Gaps (window 2x3, stride 3x4), batch 1.
        (&[1, 20, 11, 6], &[2, 3], &[3, 4], &[0, 2], &[1, 1]),
        // 64 channels: the spec entries in NHWC.
        (&[2, 64, 13, 13], &[3, 3], &[2, 2], &[1, 1], &[1, 1]),
        // A global window.
        (&[1, 32, 8, 8], &[8, 8], &[8, 8], &[0, 0], &[0, 0]),
        // 2x2 stride 2, no padding, an odd last row dropped.
        (&[3, 5, 6, 17], &[2, 2], &[2, 2], &[0, 0], &[0, 0]),
        // Windows wholly inside the padding (pre 3 > window 2).
        (&[2, 16, 5, 5], &[2, 2], &[1, 1], &[3, 3], &[3, 3]),
        // 1-D.
        (&[2, 5, 13], &[4], &[3], &[2], &[3]),
        // 3-D.
        (
            &[1, 4, 5, 6, 7],
            &[2, 3, 2],
            &[2, 1, 2],
            &[1, 1, 0],
            &[0, 2, 1],
        ),
    ];
    let mut v = Vec::new();
    let mut k = 0usize;
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for mode in MODES {
            for (dims, win, st, pre, post) in shapes {
                for layout in [Layout::Nchw, Layout::Nhwc] {
                    k += 1;
                    let mut c = PoolCase::new(mode, dt, dims, win, st, pre, post).layout(layout);
                    if mode.is_max() {
                        c.index = [None, Some(DT::INT32), Some(DT::INT64)][k % 3];
                    }
                    c.y_f32 = dt != DT::FLOAT && k % 4 == 1;
                    v.push(c);
                }
            }
        }
    }
    // ResNet-50's stem max pool (3x3 stride 2, padding 1) over 112² × 64, both layouts.
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for layout in [Layout::Nchw, Layout::Nhwc] {
            v.push(
                PoolCase::new(
                    Mode::Max,
                    dt,
                    &[1, 64, 112, 112],
                    &[3, 3],
                    &[2, 2],
                    &[1, 1],
                    &[1, 1],
                )
                .layout(layout)
                .with_index(DT::INT32),
            );
        }
    }
    // x NHWC, y and index NCHW; and the reverse.
    for mode in MODES {
        let mut c = PoolCase::new(
            mode,
            DT::HALF,
            &[2, 48, 9, 10],
            &[3, 2],
            &[2, 2],
            &[1, 0],
            &[1, 1],
        );
        c.x_layout = Layout::Nhwc;
        if mode.is_max() {
            c.index = Some(DT::INT32);
        }
        v.push(c.clone());
        c.x_layout = Layout::Nchw;
        c.y_layout = Layout::Nhwc;
        v.push(c);
    }
    // NaN and infinities: the first NaN in scan order stays, later ones lose.
    for mode in [Mode::Max, Mode::MaxZeroPad] {
        for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                let mut c =
                    PoolCase::new(mode, dt, &[2, 16, 7, 9], &[3, 3], &[2, 2], &[1, 1], &[1, 0])
                        .layout(layout)
                        .with_index(DT::INT32);
                c.specials = true;
                v.push(c);
            }
        }
    }
    v
}
