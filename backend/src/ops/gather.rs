//! Row gather (embedding lookup) facts: the `hipdnn_rs.gather` custom op.
//!
//! hipDNN and cuDNN have no gather operation; graphs reach plugin-defined operations through
//! `CustomOpAttributes` (`custom_op_id` `"<plugin>.<operation>"`, inputs, outputs, opaque
//! data). hipdnn-rs defines one: [`GATHER_OP_ID`], the lookup of a model's token embeddings
//! (PyTorch `torch.nn.functional.embedding`, ONNX `Gather` on axis 0):
//!
//! - inputs `[table, index]`: `table` of dims `(V, H)` (or more axes, every leading one of
//!   extent 1), a float type; `index` INT32 or INT64 of any dims;
//! - one output `y` of the table's data type and dims `index.dims ++ [H]` ([`output_dims`]);
//! - `y[r, :] = table[index[r], :]` for every row `r` of the index in row-major order, a copy
//!   of the table's elements; an index value outside `[0, V)` gives a row of zeros (no error:
//!   a device kernel cannot report one; TensorFlow's GPU gather does the same);
//! - `data` empty (a non-empty `data` is reserved for later versions and refused).
//!
//! The CPU reference engine and the kernel ingestor's `gather` pack serve it.

/// The `custom_op_id` of the row gather.
pub const GATHER_OP_ID: &str = "hipdnn_rs.gather";

/// `(V, H)` of a gather table's dims: the last two, when every leading dim is 1 and there are
/// at least two; `None` otherwise.
///
/// ```
/// use hipdnn_backend::ops::gather::table_rows_cols;
/// assert_eq!(table_rows_cols(&[1, 1, 30522, 384]), Some((30522, 384)));
/// assert_eq!(table_rows_cols(&[2, 5, 4]), None);
/// ```
pub fn table_rows_cols(table_dims: &[i64]) -> Option<(i64, i64)> {
    let r = table_dims.len();
    if r < 2 || table_dims[..r - 2].iter().any(|&d| d != 1) {
        return None;
    }
    Some((table_dims[r - 2], table_dims[r - 1]))
}

/// The output dims of a gather: the index dims followed by the table's row length `H`;
/// `None` when the table dims do not name `(V, H)` ([`table_rows_cols`]).
///
/// ```
/// use hipdnn_backend::ops::gather::output_dims;
/// assert_eq!(output_dims(&[32, 1, 128], &[30522, 384]), Some(vec![32, 1, 128, 384]));
/// ```
pub fn output_dims(index_dims: &[i64], table_dims: &[i64]) -> Option<Vec<i64>> {
    let (_, h) = table_rows_cols(table_dims)?;
    let mut v = index_dims.to_vec();
    v.push(h);
    Some(v)
}
