//! The CPU engine reads large bound inputs without converting them whole (issue 30): a gather
//! copies only the rows it reads from the bound table, and a matmul reads f32 operands bound
//! in host memory in place, whatever their strides (a column-major B: PyTorch `Linear`
//! weights). Pinned with a global allocator that records the largest single allocation made
//! during `Graph::execute`: converting (or cloning) the table or the weights needs one block of
//! at least their size.
//!
//! Also pinned: outputs are exact — the gather's rows equal a plain loop for f32, f16 and bf16
//! tables, row- and column-major; a matmul with B bound column-major gives bit for bit the
//! output of the same B bound row-major.
//!
//! This binary holds one test only, so no other test's allocations are recorded.

use half::{bf16, f16};
use hipdnn::{
    Buffer, DataType, Element, Graph, Handle, MatmulAttributes, TensorAttributes, VariantPack,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Records the largest allocation since the last [`reset`].
struct MaxAlloc;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the record is
// a side effect only.
unsafe impl GlobalAlloc for MaxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded with the caller's layout (the caller upholds `alloc`'s contract).
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (forwarded in `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::SeqCst);
        // SAFETY: forwarded unchanged (the caller upholds `realloc`'s contract).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: MaxAlloc = MaxAlloc;

fn reset() {
    LARGEST.store(0, Ordering::SeqCst);
}

fn largest() -> usize {
    LARGEST.load(Ordering::SeqCst)
}

fn tensor(name: &str, uid: i64, dt: DataType, dims: &[i64], strides: &[i64]) -> TensorAttributes {
    TensorAttributes::new(name)
        .uid(uid)
        .data_type(dt)
        .dims(dims.to_vec())
        .strides(strides.to_vec())
}

/// A deterministic value per (row, col), exact in f16 and bf16.
fn val(r: usize, c: usize) -> f32 {
    ((r * 7 + c * 3) % 61) as f32 - 30.0
}

/// Gathers 24 rows of a `v × h` table of type `T` (row-major or column-major) and checks the
/// rows and that no allocation during execute reached the table's size.
fn gather_case<T: Element + Copy>(dt: DataType, col_major: bool, from: fn(f32) -> T) {
    let (v, h) = (8192usize, 128usize);
    let (vi, hi) = (v as i64, h as i64);
    let mut table = Vec::with_capacity(v * h);
    for e in 0..v * h {
        let (r, c) = if col_major {
            (e % v, e / v)
        } else {
            (e / h, e % h)
        };
        table.push(from(val(r, c)));
    }
    let strides = if col_major { [1, vi] } else { [hi, 1] };
    let ids: Vec<i64> = (0..24).map(|i| (i * 997 % (v as i64 + 3)) - 1).collect();
    let mut g = Graph::new();
    let t = g.tensor(tensor("table", 1, dt, &[vi, hi], &strides));
    let i = g.tensor(tensor("ids", 2, DataType::Int64, &[24], &[1]));
    let y = g.gather(t, i);
    g.set_output(y, true).set_uid(y, 3);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let (tb, ib) = (Buffer::from_slice(&table), Buffer::from_slice(&ids));
    let mut out = Buffer::<T>::zeros(24 * h);
    reset();
    g.execute(
        &handle,
        VariantPack::new()
            .input(1, &tb)
            .input(2, &ib)
            .output(3, &mut out),
        None,
    )
    .unwrap();
    let big = largest();
    let table_bytes = v * h * std::mem::size_of::<T>();
    assert!(
        big < table_bytes,
        "{dt:?} gather (column-major {col_major}): an allocation of {big} bytes during execute, \
         the table is {table_bytes}"
    );
    let want: Vec<T> = ids
        .iter()
        .flat_map(|&i| {
            (0..h).map(move |c| {
                from(if (0..v as i64).contains(&i) {
                    val(i as usize, c)
                } else {
                    0.0
                })
            })
        })
        .collect();
    let got = out.to_vec().unwrap();
    assert!(
        got == want,
        "{dt:?} gather (column-major {col_major}): rows differ"
    );
}

/// `24×384 · 384×1536` f32 with B bound row-major or column-major; returns the output bits
/// and the largest allocation during execute.
fn matmul_case(col_major: bool) -> (Vec<u32>, usize) {
    let (m, k, n) = (24usize, 384usize, 1536usize);
    let (mi, ki, ni) = (m as i64, k as i64, n as i64);
    let bs = if col_major { [1, ki] } else { [ni, 1] };
    let mut g = Graph::new();
    let f = DataType::Float;
    let a = g.tensor(tensor("a", 1, f, &[mi, ki], &[ki, 1]));
    let b = g.tensor(tensor("b", 2, f, &[ki, ni], &bs));
    let y = g.matmul(a, b, MatmulAttributes::new());
    g.set_output(y, true).set_uid(y, 3);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let av: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7) % 13) as f32 * 0.1 - 0.6)
        .collect();
    let bv: Vec<f32> = (0..k * n)
        .map(|e| {
            let (r, c) = if col_major {
                (e % k, e / k)
            } else {
                (e / n, e % n)
            };
            ((r * 5 + c * 3) % 11) as f32 * 0.07 - 0.3
        })
        .collect();
    let (ab, bb) = (Buffer::from_slice(&av), Buffer::from_slice(&bv));
    let mut out = Buffer::<f32>::zeros(m * n);
    reset();
    g.execute(
        &handle,
        VariantPack::new()
            .input(1, &ab)
            .input(2, &bb)
            .output(3, &mut out),
        Some(&mut Buffer::zeros(g.workspace_size().unwrap())),
    )
    .unwrap();
    let big = largest();
    let bits = out.to_vec().unwrap().iter().map(|v| v.to_bits()).collect();
    (bits, big)
}

#[test]
fn gather_and_matmul_never_convert_a_bound_table_or_weight_whole() {
    gather_case::<f32>(DataType::Float, false, |x| x);
    gather_case::<f32>(DataType::Float, true, |x| x);
    gather_case::<f16>(DataType::Half, false, f16::from_f32);
    gather_case::<bf16>(DataType::BFloat16, true, bf16::from_f32);

    let b_bytes = 384 * 1536 * 4;
    let (row, big_row) = matmul_case(false);
    let (col, big_col) = matmul_case(true);
    for (layout, big) in [("row-major", big_row), ("column-major", big_col)] {
        assert!(
            big < b_bytes,
            "matmul, B {layout}: an allocation of {big} bytes during execute, B is {b_bytes}"
        );
    }
    assert!(
        row == col,
        "matmul: B column-major gives other bits than B row-major"
    );
}
