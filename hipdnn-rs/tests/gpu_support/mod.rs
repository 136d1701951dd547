//! What the SDK's GPU tests share: the printed skip, the GPU handle or a skip, and a
//! deterministic input generator.
#![allow(dead_code)]

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, Element, Graph, Handle, TensorAttributes as T,
    VariantPack,
};

/// Prints why a GPU test does nothing here (`skipped: <why>` on stderr).
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// A handle on GPU 0, or `None` after printing why there is none.
pub fn gpu() -> Option<Handle> {
    match Handle::gpu() {
        Ok(h) => Some(h),
        Err(e) => {
            skipped(&e.message);
            None
        }
    }
}

/// `n` values in [-1, 1) from a linear congruential generator seeded with `seed`.
pub fn lcg(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Batch of [`conv_graph`].
pub const N: i64 = 2;
/// Input channels of [`conv_graph`].
pub const C: i64 = 8;
/// Image height and width of [`conv_graph`].
pub const HW: i64 = 9;
/// Filters of [`conv_graph`].
pub const K: i64 = 16;
/// Elements of x.
pub const X_LEN: usize = (N * C * HW * HW) as usize;
/// Elements of w.
pub const W_LEN: usize = (K * C * 9) as usize;
/// Elements of y.
pub const Y_LEN: usize = (N * K * HW * HW) as usize;

/// `name`: y (uid 3) = conv3x3(x (uid 1), w (uid 2)), padding 1, f32 NCHW, one kernel on the
/// GPU.
pub fn conv_graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(T::new("x").uid(1).dims([N, C, HW, HW]).packed_nchw());
    let w = g.tensor(T::new("w").uid(2).dims([K, C, 3, 3]).packed_nchw());
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g
}

/// Executes the built `g` on `h` with `inputs` (uid, f32 values converted by `to`) and its
/// output at uid 4 (`n_out` elements, filled with NaN first, so an element the engine leaves
/// unwritten fails any comparison), returning the output converted by `from`. Panics on any
/// error (test helper).
pub fn exec_as<T: Element>(
    h: &Handle,
    g: &Graph,
    inputs: &[(i64, Vec<f32>)],
    n_out: usize,
    to: fn(f32) -> T,
    from: fn(T) -> f32,
) -> Vec<f32> {
    let bufs: Vec<(i64, Buffer<T>)> = inputs
        .iter()
        .map(|(u, v)| {
            let t: Vec<T> = v.iter().map(|x| to(*x)).collect();
            (*u, Buffer::from_slice_on(h, &t).expect("upload"))
        })
        .collect();
    let mut y = Buffer::<T>::filled(n_out, to(f32::NAN))
        .to_handle(h)
        .expect("y");
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().expect("ws")).expect("ws");
    let mut pack = VariantPack::new();
    for (u, b) in &bufs {
        pack = pack.with(*u, b);
    }
    pack = pack.with(4, &mut y);
    g.execute(h, pack, Some(&mut ws)).expect("execute");
    y.to_vec()
        .expect("download")
        .into_iter()
        .map(from)
        .collect()
}
