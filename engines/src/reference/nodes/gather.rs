//! Row gather nodes (the `hipdnn_rs.gather` custom op, [`hipdnn_backend::ops::gather`]) of
//! the CPU reference engine: parse (the op's inputs, types and dims) and run (a copy of the
//! indexed table rows, zero rows for indices outside the table).

use crate::reference::check::Cx;
use crate::reference::dtype::Elem;
use crate::reference::env::Env;
use crate::reference::tensor::TensorDesc;
use half::{bf16, f16};
use hipdnn_backend::ops::gather::{GATHER_OP_ID, output_dims, table_rows_cols};
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;
use std::sync::Arc;

/// A gather step: `y[r, :] = table[index[r], :]`.
#[derive(Debug, Clone)]
pub struct GatherStep {
    /// Table UID, dims `(V, H)` (leading dims of 1 allowed).
    pub table: i64,
    /// Index UID (INT32 / INT64).
    pub index: i64,
    /// Output UID, dims `index.dims ++ [H]`.
    pub y: i64,
    /// Table rows `V`.
    pub rows: usize,
    /// Row length `H` (elements).
    pub cols: usize,
}

impl GatherStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.table, self.index]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y]
    }
}

/// Reads and checks one custom-op node: only `custom_op_id` [`GATHER_OP_ID`] is served.
///
/// # Errors
/// `NOT_APPLICABLE`: `custom_op '<name>': custom_op_id '<id>' is not supported by the CPU
/// reference engine`; `… inputs <n> …` / `outputs <n> …` (the gather takes two inputs and one
/// output); `… data of <n> bytes …` (reserved, must be empty); the table not a float type or
/// not of dims `(V, H)`; the index not INT32 / INT64; y not of the table's type or of dims
/// `index.dims ++ [H]`.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<GatherStep> {
    let a = node
        .attributes_as_custom_op_attributes()
        .expect("type checked");
    let id = a.custom_op_id().unwrap_or("");
    if id != GATHER_OP_ID {
        return Err(cx.refuse("custom_op_id", format!("'{id}'")));
    }
    let ins: Vec<i64> = a
        .input_tensor_uids()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let outs: Vec<i64> = a
        .output_tensor_uids()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    if ins.len() != 2 {
        return Err(cx.bad(format!(
            "{GATHER_OP_ID} takes two inputs (table, index), the node has {}",
            ins.len()
        )));
    }
    if outs.len() != 1 {
        return Err(cx.bad(format!(
            "{GATHER_OP_ID} writes one output, the node has {}",
            outs.len()
        )));
    }
    let data = a.data().map(|d| d.len()).unwrap_or(0);
    if data != 0 {
        return Err(cx.refuse(&format!("{GATHER_OP_ID} data of"), format!("{data} bytes")));
    }
    let table = cx.float("table (input 0)", ins[0])?;
    let index = cx.t("index (input 1)", ins[1])?;
    let y = cx.t("y (output 0)", outs[0])?;
    if !matches!(index.elem, Elem::I32 | Elem::I64) {
        return Err(cx.refuse(
            &format!("index (uid {}) data_type", index.uid),
            format!("{:?}", index.elem),
        ));
    }
    let td: Vec<i64> = table.dims.iter().map(|&d| d as i64).collect();
    let id_dims: Vec<i64> = index.dims.iter().map(|&d| d as i64).collect();
    let (Some((rows, cols)), Some(want)) = (table_rows_cols(&td), output_dims(&id_dims, &td))
    else {
        return Err(cx.bad(format!(
            "table (uid {}) dims {:?} are not (V, H) (every leading dim 1)",
            table.uid, table.dims
        )));
    };
    if y.elem != table.elem {
        return Err(cx.bad(format!(
            "y (uid {}) is {:?}, the table {:?}; the gather copies the table's elements",
            y.uid, y.elem, table.elem
        )));
    }
    let want: Vec<usize> = want.into_iter().map(|d| d as usize).collect();
    cx.dims_eq("y (output 0)", y, &want)?;
    Ok(GatherStep {
        table: table.uid,
        index: index.uid,
        y: y.uid,
        rows: rows as usize,
        cols: cols as usize,
    })
}

/// Rows of y per parallel task: big enough that a task's copy (≥ 64 rows) outweighs its
/// scheduling, small enough that 2–64 threads share a batch of sentences.
const ROWS_PER_TASK: usize = 64;

/// Runs one gather step on host arrays. A bound table is read in place, only the rows the
/// index names (the table is never converted whole: a 30522×384 embedding costs the ~24 rows a
/// sentence reads); a constant or computed table is read from its value. A table bound
/// read-only is written from straight into a dense f32 output buffer. Rows are copied in
/// parallel (a copy: the result does not depend on the thread count).
pub fn run(
    s: &GatherStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let index = env.get_ints(s.index)?;
    let table = (s.rows, s.cols);
    if let Some((d, bytes)) = env.bound_input_bytes(s.table) {
        let source = Source::bound(d, bytes);
        if let Some(out) = env.dense_f32_output(s.y) {
            fill(&source, table, &index, out);
            return Ok(());
        }
    }
    let mut out = vec![0.0f32; index.len() * s.cols];
    match env.bound_bytes(s.table) {
        Some((d, bytes)) => fill(&Source::bound(d, bytes), table, &index, &mut out),
        None => fill(&Source::Value(env.get(s.table)?), table, &index, &mut out),
    }
    let dims = env.desc(s.y).dims.clone();
    let y = ArrayD::from_shape_vec(IxDyn(&dims), out).expect("volume checked at parse");
    env.put(s.y, y)
}

/// `out[r, :] = table[index[r], :]` for a `(v, h)` table, zero rows for indices outside it;
/// `ROWS_PER_TASK` rows per parallel task once there is more than one task.
fn fill(source: &Source<'_>, (v, h): (usize, usize), index: &[i64], out: &mut [f32]) {
    let task = |(t, rows): (usize, &mut [f32])| {
        let ids = &index[t * ROWS_PER_TASK..];
        for (row, &i) in rows.chunks_exact_mut(h.max(1)).zip(ids) {
            match (0..v as i64).contains(&i).then_some(i as usize) {
                Some(i) => source.read(i, row),
                None => row.fill(0.0),
            }
        }
    };
    let len = (ROWS_PER_TASK * h).max(1);
    if index.len() > ROWS_PER_TASK {
        out.par_chunks_mut(len).enumerate().for_each(task);
    } else {
        out.chunks_mut(len).enumerate().for_each(task);
    }
}

/// Where the table's rows are read from.
enum Source<'b> {
    /// A bound, aligned f32 table with unit column stride: row `i` starts at element `i · rs`.
    Rows(&'b [f32], usize),
    /// Any other bound table: element type, bytes, row and column strides (elements).
    Bytes(Elem, &'b [u8], usize, usize),
    /// A constant or computed table (dense row-major).
    Value(Arc<ArrayD<f32>>),
}

impl<'b> Source<'b> {
    /// The rows of the table `d` bound as `bytes`.
    fn bound(d: &TensorDesc, bytes: &'b [u8]) -> Self {
        // Leading dims are 1: the row and column strides are those of the last two dims.
        let r = d.dims.len();
        let (rs, cs) = (d.strides[r - 2], d.strides[r - 1]);
        match bytemuck::try_cast_slice::<u8, f32>(bytes) {
            Ok(f) if d.elem == Elem::F32 && cs == 1 => Source::Rows(f, rs),
            _ => Source::Bytes(d.elem, bytes, rs, cs),
        }
    }

    /// Copies row `i` (inside the table) into `row`.
    fn read(&self, i: usize, row: &mut [f32]) {
        let h = row.len();
        match self {
            Source::Rows(f, rs) => row.copy_from_slice(&f[i * rs..i * rs + h]),
            Source::Bytes(elem, bytes, rs, cs) => read_row(*elem, bytes, i * rs, *cs, row),
            Source::Value(t) => {
                let t = t
                    .as_slice()
                    .expect("the engine's arrays are dense row-major");
                row.copy_from_slice(&t[i * h..(i + 1) * h]);
            }
        }
    }
}

/// Reads `row.len()` elements of type `elem` from `bytes`, the first at element offset
/// `start`, the next ones `step` elements apart (the buffer's length was checked against the
/// table's dims and strides before execution).
fn read_row(elem: Elem, bytes: &[u8], start: usize, step: usize, row: &mut [f32]) {
    let es = elem.size();
    if step == 1 {
        let src = bytes[start * es..(start + row.len()) * es].chunks_exact(es);
        match elem {
            Elem::F32 => {
                for (o, b) in row.iter_mut().zip(src) {
                    *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Elem::F16 => {
                for (o, b) in row.iter_mut().zip(src) {
                    *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
                }
            }
            Elem::Bf16 => {
                for (o, b) in row.iter_mut().zip(src) {
                    *o = bf16::from_le_bytes([b[0], b[1]]).to_f32();
                }
            }
            _ => {
                for (o, b) in row.iter_mut().zip(src) {
                    *o = elem.read(b);
                }
            }
        }
        return;
    }
    for (c, o) in row.iter_mut().enumerate() {
        let at = (start + c * step) * es;
        *o = elem.read(&bytes[at..at + es]);
    }
}
