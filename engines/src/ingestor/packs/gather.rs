//! Gather family, contract `hipkernel.gather.dispatch.v1`: the row gather (embedding lookup)
//! custom op `hipdnn_rs.gather` ([`hipdnn_backend::ops::gather`]) on the Triton kernel of
//! `engines/kernels/triton/gather.py`, one launch: `y[r, :] = table[index[r], :]` (the table's
//! element bits; a zero row for an index outside `[0, V)`), as the CPU reference engine does.
//!
//! Serves one `custom_op` node (`[table, index]` → `y`, no data): table f32/f16/bf16 of dims
//! `(V, H)` (leading 1s allowed), any strides; index INT32/INT64 whose dims collapse to one
//! stride; y of the table's type and dims `index.dims ++ [H]`, its leading axes collapsing to
//! one row stride; extents and strides at most 2147483647. Entries `spec` (unit column strides
//! of table and y; H and their row strides multiples of 16; 16-byte aligned table and y,
//! checked at execute) and `generic`; static rule: the 128-column tile for rows of more than 64
//! elements, the 32-column tile otherwise. Launch values: [`GatherInputs`]'s `VALUES`; grid
//! (cdiv(rows, block_m), cdiv(cols, block_n), 1); kernel arguments table, index, y, N, H, V,
//! the strides (spec drops `sth` and `syc`), idx64, two null scratch pointers
//! (`docs/ingestor.md`). This module plus one line of `crate::registry`'s family list is the
//! whole family: the worked example of a [`TritonFamily`] declaration.

use crate::ingestor::framework::prelude::*;
use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_backend::ops::gather::output_dims;
use hipdnn_backend::ops::gather::table_rows_cols;

/// The versioned contract name.
pub const GATHER_V1: &str = "hipkernel.gather.dispatch.v1";
/// The dispatch handler of contract v1.
pub type GatherHandler = TritonHandler<GatherInputs>;
/// Stride value names, in kernel order, and those the spec variant holds constant 1.
const STRIDES: [&str; 5] = ["stv", "sth", "si", "syr", "syc"];
const SPEC_ONE: [&str; 2] = ["sth", "syc"];

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct GatherInputs {
    /// UIDs of the table, the index and y.
    pub uids: [i64; 3],
    /// The table's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// Whether the index is INT64 (else INT32).
    pub idx64: bool,
    /// Index elements N (rows of y), row length H, table rows V.
    pub rows_cols_vocab: [i64; 3],
    /// stv, sth, si, syr, syc (elements).
    pub strides: [i64; 5],
    /// Kernel configuration (`block[0]` rows, `block[1]` columns per program).
    pub config: TritonConfig,
}

impl TritonFamily for GatherInputs {
    const FAMILY: &'static str = "gather";
    const CONTRACT: &'static str = GATHER_V1;
    #[rustfmt::skip]
    const VALUES: &'static [IntValue] = &concat::<19>(&[
        &strides(STRIDES),
        &tile_config(1, (1, 1024), (16, 1024)),
        &[uid("table.uid"), uid("index.uid"), uid("y.uid"), int("dtype", 1, 3), int("idx64", 0, 1)],
        &[int("rows", 1, I32_MAX), int("cols", 1, I32_MAX), int("vocab", 1, I32_MAX)],
    ]);
    const POINTERS: &'static [&'static str] = &["table.uid", "index.uid", "y.uid"];
    const ALIGNED: &'static [&'static str] = &["table.uid", "y.uid"];
    const ALIGNED_TEXT: &'static str = "a 16-byte aligned table and y";
    const SPEC_HINTS: &'static str =
        "unit column strides of the table and y, H and their row strides multiples of 16";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let (ins, outs, data) = custom_op_node(graph, "gather", GATHER_OP_ID)?;
        if ins.len() != 2 || outs.len() != 1 || data != 0 {
            return Err(na(format!(
                "the gather pack needs two inputs (table, index), one output and no data; the node has {} inputs, {} outputs and {data} bytes of data",
                ins.len(),
                outs.len()
            )));
        }
        let t = |uid| tensor(graph, uid);
        let (tt, it, yt) = (t(ins[0])?, t(ins[1])?, t(outs[0])?);
        let dtype = float_dtype(&tt, "gather", "tables")?;
        let idx64 = match it.data_type() {
            DataType::INT32 => false,
            DataType::INT64 => true,
            dt => {
                return Err(na(format!(
                    "the gather pack needs an INT32 or INT64 index, not {dt:?}"
                )));
            }
        };
        if yt.data_type() != dtype {
            return Err(na(format!(
                "the gather pack needs y of the table's type ({dtype:?}), not {:?}",
                yt.data_type()
            )));
        }
        let ((td, ts), (id, is), (yd, ys)) =
            (dims_strides(&tt), dims_strides(&it), dims_strides(&yt));
        let (Some((vocab, cols)), Some(want)) = (table_rows_cols(&td), output_dims(&id, &td))
        else {
            return Err(na(format!(
                "the gather pack needs table dims (V, H) (every leading dim 1); table {td:?}"
            )));
        };
        if yd != want {
            return Err(na(format!(
                "the gather pack needs y dims {want:?} (index dims, then H); y {yd:?}"
            )));
        }
        let rows = id.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
        let r = yd.len();
        let in_range = |v: i64, lo: i64| (lo..=I32_MAX).contains(&v);
        match (
            rows,
            collapse(&id, &is),
            collapse(&yd[..r - 1], &ys[..r - 1]),
        ) {
            (Some(rows), Some(si), Some(syr))
                if [rows, cols, vocab].iter().all(|v| in_range(*v, 1))
                    && [ts[ts.len() - 2], ts[ts.len() - 1], si, syr, ys[r - 1]]
                        .iter()
                        .all(|v| in_range(*v, 0)) =>
            {
                Ok(GatherInputs {
                    uids: [ins[0], ins[1], outs[0]],
                    dtype: dtype.0,
                    idx64,
                    rows_cols_vocab: [rows, cols, vocab],
                    strides: [ts[ts.len() - 2], ts[ts.len() - 1], si, syr, ys[r - 1]],
                    config: TritonConfig::restored(Self::FAMILY, 0, [8, 128, 1], 1, 4, 0, 32),
                })
            }
            _ => Err(na(format!(
                "the gather pack needs the index dims to collapse to one stride and y's leading axes to one row stride, every extent in [1, 2147483647] and stride in [0, 2147483647]; index dims {id:?} strides {is:?}, y dims {yd:?} strides {ys:?}, table strides {ts:?}"
            ))),
        }
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn fits_spec(&self) -> bool {
        let (s, cols) = (self.strides, self.rows_cols_vocab[1]);
        s[1] == 1 && s[4] == 1 && cols % 16 == 0 && s[0] % 16 == 0 && s[3] % 16 == 0
    }

    /// The static rule: the 128-column tile for rows of more than 64 elements, the 32-column
    /// tile otherwise.
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let (bn, cols) = (self.config.block[1], self.rows_cols_vocab[1]);
        if (bn > 64) != (cols > 64) {
            let want = if cols > 64 { 128 } else { 32 };
            return Err(static_rule(
                kernel,
                format_args!(
                    "rows of {cols} elements take the {want}-column tile, this entry has {bn} columns"
                ),
            ));
        }
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let (u, [rows, cols, vocab]) = (self.uids, self.rows_cols_vocab);
        let kinds = [self.dtype.into(), self.idx64.into(), rows, cols, vocab];
        let config = tile_config_ints(&self.config);
        [&self.strides[..], &config, &u, &kinds].concat()
    }

    fn from_ints(v: &[i64]) -> Self {
        let config = tile_config_of(Self::FAMILY, &v[5..11]);
        GatherInputs {
            strides: [v[0], v[1], v[2], v[3], v[4]],
            config,
            uids: [v[11], v[12], v[13]],
            dtype: v[14] as i8,
            idx64: v[15] == 1,
            rows_cols_vocab: [v[16], v[17], v[18]],
        }
    }

    /// The spec variant's unit strides, then the geometry: warp size 32 or 64 and at most 1024
    /// threads per block, at most 65535 column blocks.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        if self.config.spec && (self.strides[1] != 1 || self.strides[4] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' name the spec variant, whose 'sth' and 'syc' must be 1",
                quote(dispatch)
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = vec!["t_ptr", "i_ptr", "y_ptr", "N", "H", "V"];
        v.extend(STRIDES.iter().filter(|n| !(spec && SPEC_ONE.contains(n))));
        v.extend(["idx64", "global_scratch", "profile_scratch"]);
        v
    }

    fn scalars(&self) -> Vec<i64> {
        let spec = self.config.spec;
        let strides = STRIDES.iter().zip(self.strides);
        let mut v = self.rows_cols_vocab.to_vec();
        v.extend(
            strides
                .filter(|(n, _)| !(spec && SPEC_ONE.contains(n)))
                .map(|(_, s)| s),
        );
        v.push(i64::from(self.idx64));
        v
    }

    /// Grid (cdiv(rows, block_m), cdiv(cols, block_n), 1). Errors: `NOT_APPLICABLE`
    /// [`TritonConfig::threads_per_block`]'s text; `launch values 'cols' and 'block_n' of
    /// dispatch '<d>' give <n> column blocks; the grid takes at most 65535`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let (c, [rows, cols, _]) = (&self.config, self.rows_cols_vocab);
        let threads = c.threads_per_block(dispatch)?;
        let col_blocks = (cols + c.block[1] - 1) / c.block[1];
        if col_blocks > 65_535 {
            return Err(incompatible(format!(
                "launch values 'cols' and 'block_n' of dispatch '{}' give {col_blocks} column blocks; the grid takes at most 65535",
                quote(dispatch)
            )));
        }
        Ok(block_geometry(
            c,
            [
                ((rows + c.block[0] - 1) / c.block[0]) as u32,
                col_blocks as u32,
                1,
            ],
            threads,
        ))
    }
}
