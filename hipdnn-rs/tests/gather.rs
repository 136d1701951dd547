//! The row gather custom op (`hipdnn_rs.gather`, `Graph::gather`) on the CPU reference engine:
//! exact rows against a plain loop, zero rows for indices outside the table, INT64 indices kept
//! exact beyond f32's integers, strided tables / indices / outputs, save → load → execute →
//! re-save byte-identical, and the refusals with their messages.

mod gpu_support;
use gpu_support::skipped;
use half::{bf16, f16};
use hipdnn::{
    Buffer, CustomOpAttributes, DataType, ErrorCode, Graph, Handle, TensorAttributes, VariantPack,
};

const U_TABLE: i64 = 1;
const U_INDEX: i64 = 2;
const U_Y: i64 = 3;

fn graph(table: TensorAttributes, index: TensorAttributes) -> Graph {
    let mut g = Graph::new();
    let t = g.tensor(table.uid(U_TABLE));
    let i = g.tensor(index.uid(U_INDEX));
    let y = g.gather(t, i);
    g.set_output(y, true).set_uid(y, U_Y);
    g
}

fn tensor(name: &str, dt: DataType, dims: &[i64], strides: &[i64]) -> TensorAttributes {
    TensorAttributes::new(name)
        .data_type(dt)
        .dims(dims.to_vec())
        .strides(strides.to_vec())
}

/// A deterministic f32 value per (row, col), distinct for every element.
fn val(r: usize, c: usize) -> f32 {
    (r * 100 + c) as f32 * 0.25 - 7.0
}

#[test]
fn rows_are_copied_and_indices_outside_the_table_give_zero_rows() {
    let (v, h) = (7usize, 5usize);
    let table: Vec<f32> = (0..v * h).map(|e| val(e / h, e % h)).collect();
    // (2, 3) index, out-of-range values -1, 7 and 100 among them.
    let ids: Vec<i32> = vec![3, -1, 0, 7, 6, 100];
    let mut g = graph(
        tensor(
            "table",
            DataType::Float,
            &[v as i64, h as i64],
            &[h as i64, 1],
        ),
        tensor("ids", DataType::Int32, &[2, 3], &[3, 1]),
    );
    let y = g.tensor_by_uid(U_Y).unwrap();
    assert_eq!(g.tensor_attributes(y).dims, vec![2, 3, 5]);
    assert_eq!(g.tensor_attributes(y).data_type, DataType::Float);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let tb = Buffer::from_slice(&table);
    let ib = Buffer::from_slice(&ids);
    let mut out = Buffer::<f32>::filled(ids.len() * h, f32::NAN);
    g.execute(
        &handle,
        VariantPack::new()
            .with(U_TABLE, &tb)
            .with(U_INDEX, &ib)
            .with(U_Y, &mut out),
        None,
    )
    .unwrap();
    let mut want = Vec::new();
    for &i in &ids {
        for c in 0..h {
            want.push(if (0..v as i32).contains(&i) {
                val(i as usize, c)
            } else {
                0.0
            });
        }
    }
    let got = out.to_vec().unwrap();
    assert_eq!(got, want);
    // Row 3 of the table, then a zero row for -1.
    assert_eq!(
        &got[..10],
        &[68.0, 68.25, 68.5, 68.75, 69.0, 0.0, 0.0, 0.0, 0.0, 0.0][..]
    );

    // Saved plan: a fresh graph from the bytes executes to the same rows and re-saves the
    // same bytes.
    let bin = g.to_binary().unwrap();
    let loaded = Graph::from_binary(&handle, &bin).unwrap();
    let mut again = Buffer::<f32>::filled(ids.len() * h, f32::NAN);
    loaded
        .execute(
            &handle,
            VariantPack::new()
                .with(U_TABLE, &tb)
                .with(U_INDEX, &ib)
                .with(U_Y, &mut again),
            None,
        )
        .unwrap();
    assert_eq!(again.to_vec().unwrap(), want);
    assert_eq!(loaded.to_binary().unwrap(), bin);
}

/// INT64 index values are read as integers, not through f32: row 2^24 + 1 of a table of
/// 2^24 + 2 rows is not row 2^24 (which an f32 round trip would read).
#[test]
fn int64_indices_beyond_f32_integers_are_exact() {
    let v = (1usize << 24) + 2;
    let mut table = vec![f16::ZERO; v];
    table[1 << 24] = f16::from_f32(1.0);
    table[(1 << 24) + 1] = f16::from_f32(2.0);
    let ids: Vec<i64> = vec![(1 << 24) + 1, 1 << 24, (1 << 24) + 2, i64::MIN];
    let mut g = graph(
        tensor(
            "table",
            DataType::Half,
            &[1, v as i64, 1],
            &[v as i64, 1, 1],
        ),
        tensor("ids", DataType::Int64, &[4], &[1]),
    );
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let tb = Buffer::from_slice(&table);
    let ib = Buffer::from_slice(&ids);
    let mut out = Buffer::<f16>::filled(4, f16::NAN);
    g.execute(
        &handle,
        VariantPack::new()
            .with(U_TABLE, &tb)
            .with(U_INDEX, &ib)
            .with(U_Y, &mut out),
        None,
    )
    .unwrap();
    let got: Vec<f32> = out.to_vec().unwrap().iter().map(|x| x.to_f32()).collect();
    assert_eq!(got, vec![2.0, 1.0, 0.0, 0.0]);
}

/// A column-major bf16 table, an index read every other element and an output with padded
/// rows: the strided positions are read and written, the padding untouched.
#[test]
fn strided_table_index_and_output() {
    let (v, h) = (6usize, 3usize);
    // Column-major: element (r, c) at c * v + r.
    let mut table = vec![bf16::ZERO; v * h];
    for r in 0..v {
        for c in 0..h {
            table[c * v + r] = bf16::from_f32(val(r, c));
        }
    }
    let ids: Vec<i32> = vec![5, 99, 0, 99, 2, 99];
    let mut g = Graph::new();
    let t = g.tensor(tensor("table", DataType::BFloat16, &[6, 3], &[1, 6]).uid(U_TABLE));
    let i = g.tensor(tensor("ids", DataType::Int32, &[3], &[2]).uid(U_INDEX));
    let y = g.gather(t, i);
    g.set_output(y, true).set_uid(y, U_Y).set_strides(y, [4, 1]);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let tb = Buffer::from_slice(&table);
    let ib = Buffer::from_slice(&ids);
    let pad = bf16::from_f32(-1.5);
    let mut out = Buffer::<bf16>::filled(12, pad);
    g.execute(
        &handle,
        VariantPack::new()
            .with(U_TABLE, &tb)
            .with(U_INDEX, &ib)
            .with(U_Y, &mut out),
        None,
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    let mut want = vec![pad; 12];
    for (row, r) in [5usize, 0, 2].into_iter().enumerate() {
        for c in 0..h {
            want[row * 4 + c] = bf16::from_f32(val(r, c));
        }
    }
    assert_eq!(got, want);
}

fn refusal(g: &mut Graph, code: ErrorCode) -> String {
    let e = g.build(&Handle::cpu().unwrap()).unwrap_err();
    assert_eq!(e.code, code, "{}", e.message);
    e.message
}

/// A malformed gather is refused by the SDK's validation (INVALID_VALUE, before any engine is
/// asked) with the node, the tensor and the rule; another plugin's custom op passes
/// validation and is refused by every engine (GRAPH_NOT_SUPPORTED).
#[test]
fn what_the_gather_refuses_is_named() {
    let table = || tensor("table", DataType::Float, &[4, 2], &[2, 1]);
    let ids = || tensor("ids", DataType::Int32, &[3], &[1]);
    let node = "custom_op 'Gather_0': hipdnn_rs.gather";
    let invalid = ErrorCode::InvalidValue;

    let mut g = graph(table(), tensor("ids", DataType::Float, &[3], &[1]));
    assert_eq!(
        refusal(&mut g, invalid),
        format!("{node} index 'ids' is Float, expected Int32 or Int64")
    );
    let mut g = graph(
        tensor("table", DataType::Float, &[2, 4, 2], &[8, 2, 1]),
        ids(),
    );
    assert_eq!(
        refusal(&mut g, invalid),
        format!(
            "{node} table 'table' has dims [2, 4, 2], expected (V, H) with every leading dim 1"
        )
    );
    let mut g = graph(tensor("table", DataType::Int32, &[4, 2], &[2, 1]), ids());
    assert_eq!(
        refusal(&mut g, invalid),
        format!("{node} table 'table' is Int32; the table holds floating-point rows")
    );
    let mut g = graph(table(), ids());
    let y = g.tensor_by_uid(U_Y).unwrap();
    g.set_data_type(y, DataType::Half);
    assert_eq!(
        refusal(&mut g, invalid),
        format!(
            "{node} output 'Gather_0::OUT_0' is Half [3, 2], expected the table's type Float and dims [3, 2] (index dims, then H)"
        )
    );
    let mut g = graph(table(), ids());
    g.set_dims(y, [3, 4]);
    assert_eq!(
        refusal(&mut g, invalid),
        format!(
            "{node} output 'Gather_0::OUT_0' is Float [3, 4], expected the table's type Float and dims [3, 2] (index dims, then H)"
        )
    );
    let mut g = Graph::new();
    let t = g.tensor(table().uid(U_TABLE));
    let i = g.tensor(ids().uid(U_INDEX));
    let outs = g.custom_op(
        &[t, i],
        1,
        CustomOpAttributes::new()
            .custom_op_id("hipdnn_rs.gather")
            .data(vec![1u8]),
    );
    g.set_dims(outs[0], [3, 2]).set_output(outs[0], true);
    assert_eq!(
        refusal(&mut g, invalid),
        "custom_op 'CustomOp_0': hipdnn_rs.gather takes no data, the node has 1 bytes"
    );

    // Another plugin's operation: valid, and no engine serves it.
    let mut g = Graph::new();
    let t = g.tensor(table().uid(U_TABLE));
    let i = g.tensor(ids().uid(U_INDEX));
    let outs = g.custom_op(
        &[t, i],
        1,
        CustomOpAttributes::new().custom_op_id("other.op"),
    );
    g.set_dims(outs[0], [3, 2]).set_output(outs[0], true);
    assert!(refusal(&mut g, ErrorCode::GraphNotSupported).starts_with(
        "No engine supports the graph: no engine is applicable to the graph: hipdnn.reference.cpu: custom_op 'CustomOp_0': custom_op_id 'other.op' is not supported by the CPU reference engine"
    ));
}

/// Prints `skipped: <why>` on the test process's stderr directly (shown for a passing test).
/// One GPU case: a (V, H) table of `T` (row-major, or column-major when `transposed`), N
/// indices (INT32 or INT64; every seventh one outside the table).
fn gpu_case<T: hipdnn::Element + Copy>(
    gpu: &Handle,
    cpu: &Handle,
    (v, h, n): (usize, usize, usize),
    idx64: bool,
    transposed: bool,
    conv: impl Fn(f32) -> T,
) -> String {
    let dt = T::DATA_TYPE;
    let (sv, sh) = if transposed {
        (1, v as i64)
    } else {
        (h as i64, 1)
    };
    let mut table = vec![conv(0.0); v * h];
    for r in 0..v {
        for c in 0..h {
            table[r * sv as usize + c * sh as usize] = conv(val(r, c) * 0.01);
        }
    }
    let ids: Vec<i64> = (0..n as i64)
        .map(|i| {
            if i % 7 == 3 {
                v as i64 + i
            } else {
                (i * 13 + 5) % v as i64
            }
        })
        .map(|i| if i % 11 == 9 { -i } else { i })
        .collect();
    let it = if idx64 {
        DataType::Int64
    } else {
        DataType::Int32
    };
    let make = || {
        graph(
            tensor("table", dt, &[v as i64, h as i64], &[sv, sh]),
            tensor("ids", it, &[n as i64], &[1]),
        )
    };
    let run = |handle: &Handle, g: &Graph| -> Vec<u8> {
        let tb = Buffer::from_slice_on(handle, &table).unwrap();
        let mut out = Buffer::<T>::alloc(handle, n * h).unwrap();
        let pack = if idx64 {
            let ib = Buffer::from_slice_on(handle, &ids).unwrap();
            g.execute(
                handle,
                VariantPack::new()
                    .with(U_TABLE, &tb)
                    .with(U_INDEX, &ib)
                    .with(U_Y, &mut out),
                None,
            )
        } else {
            let i32s: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
            let ib = Buffer::from_slice_on(handle, &i32s).unwrap();
            g.execute(
                handle,
                VariantPack::new()
                    .with(U_TABLE, &tb)
                    .with(U_INDEX, &ib)
                    .with(U_Y, &mut out),
                None,
            )
        };
        pack.unwrap();
        T::le_bytes(&out.to_vec().unwrap()).into_owned()
    };
    let mut gg = make();
    gg.build(gpu).unwrap();
    let engine = gg.engine_name().unwrap().to_string();
    let mut gc = make();
    gc.build(cpu).unwrap();
    let want = run(cpu, &gc);
    let got = run(gpu, &gg);
    let tag = format!(
        "{dt:?} v{v} h{h} n{n} idx{} {}",
        if idx64 { 64 } else { 32 },
        if transposed {
            "column-major"
        } else {
            "row-major"
        }
    );
    assert_eq!(engine, "hipkernel.ingestor.gpu", "{tag}");
    assert!(got == want, "{tag}: GPU rows differ from the CPU reference");
    // Saved and reloaded on a fresh handle: the same bytes out, the same plan bytes back.
    let bin = gg.to_binary().unwrap();
    let g2 = Graph::from_binary(&Handle::gpu().unwrap(), &bin).unwrap();
    assert!(run(gpu, &g2) == want, "{tag}: reloaded plan");
    assert_eq!(g2.to_binary().unwrap(), bin, "{tag}: re-save");
    tag
}

/// Every data type, index type and layout on the GPU engine against the CPU reference engine,
/// bit for bit: row lengths below, at and above the 64-column rule and not multiples of 16
/// (generic entries), 384 (spec), one row, a column-major table; each plan saved, reloaded on
/// a fresh handle, executed and re-saved byte-identical. Without a GPU: `skipped: …`.
#[test]
fn gpu_gather_matches_the_cpu_reference_bit_for_bit() {
    let gpu = match Handle::gpu() {
        Ok(h) => h,
        Err(e) => return skipped(&e.message),
    };
    let cpu = Handle::cpu().unwrap();
    let mut n = 0;
    for shape in [
        (1, 1, 1),
        (50, 7, 33),
        (300, 64, 129),
        (300, 65, 100),
        (1000, 384, 4096),
    ] {
        for idx64 in [false, true] {
            for transposed in [false, true] {
                gpu_case(&gpu, &cpu, shape, idx64, transposed, |x| x);
                gpu_case(&gpu, &cpu, shape, idx64, transposed, f16::from_f32);
                gpu_case(&gpu, &cpu, shape, idx64, transposed, bf16::from_f32);
                n += 3;
            }
        }
    }
    println!("{n} gather cases on the GPU equal the CPU reference, reloaded and re-saved");
}
