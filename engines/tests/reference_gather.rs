//! The CPU reference engine's row gather (`hipdnn_rs.gather`) on the paths its run takes:
//! more rows than one parallel task (written straight into the bound output), indices outside
//! the table (zero rows), a column-major table and half-precision tables (read element by
//! element), each against the rows picked by hand.

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_engines::reference::ReferenceEngine;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, run_graph};
use hipdnn_schema::graph::DataType as DT;

/// table (UID 1, (v, h) of `dt`, column-major when asked) gathered by INT64 ids (UID 2, (n))
/// into y (UID 3, (n, h) of `dt`).
fn gather(dt: DT, (v, h, n): (i64, i64, i64), column_major: bool) -> GraphBuilder {
    let mut t = TensorSpec::new(1, "table", dt, &[v, h]);
    if column_major {
        t = t.strides(&[1, v]);
    }
    let mut g = GraphBuilder::new("gather");
    g.tensor(t)
        .tensor(TensorSpec::new(2, "ids", DT::INT64, &[n]))
        .tensor(TensorSpec::new(3, "y", dt, &[n, h]));
    g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], &[]);
    g
}

/// Row `i` of the (v, h) table whose element (r, c) is `r + c / 4` (exact in f16 and bf16 for
/// the sizes used), zeros outside the table.
fn row(v: i64, h: i64, i: i64) -> Vec<f32> {
    (0..h)
        .map(|c| {
            if (0..v).contains(&i) {
                i as f32 + c as f32 / 4.0
            } else {
                0.0
            }
        })
        .collect()
}

#[test]
fn gathers_rows_on_every_path_with_zero_rows_outside_the_table() {
    let (v, h, n) = (29i64, 5i64, 203i64);
    // Dense row-major values: run_graph lays them out by the tensor's strides.
    let table: Vec<f32> = (0..v).flat_map(|r| row(v, h, r)).collect();
    // Ids walk the table, with some outside it (negative, = v, far beyond) at odd places.
    let ids: Vec<i64> = (0..n)
        .map(|r| match r % 17 {
            3 => -1,
            9 => v,
            13 => 1 << 40,
            _ => (r * 11) % v,
        })
        .collect();
    let want: Vec<f32> = ids.iter().flat_map(|&i| row(v, h, i)).collect();
    let idv: Vec<f32> = ids.iter().map(|&i| i as f32).collect();
    for (dt, column_major) in [
        (DT::FLOAT, false),
        (DT::FLOAT, true),
        (DT::HALF, false),
        (DT::BFLOAT16, true),
    ] {
        let got = run_graph(
            gather(dt, (v, h, n), column_major),
            &[(1, table.clone()), (2, idv.clone())],
            &[3],
        )
        .unwrap();
        assert_eq!(got[0], want, "{dt:?} column-major {column_major}");
    }
}

/// The output buffer is written whole: a y bound with NaN bytes (0xff) gets every row, zero
/// rows included, on both the task-parallel and the single-task path.
#[test]
fn writes_every_row_of_a_dirty_output_buffer() {
    let (v, h) = (29i64, 3i64);
    for n in [5i64, 150] {
        let b = gather(DT::FLOAT, (v, h, n), false);
        let table: Vec<u8> = (0..v)
            .flat_map(|r| row(v, h, r))
            .flat_map(f32::to_le_bytes)
            .collect();
        let ids: Vec<i64> = (0..n)
            .map(|r| if r % 2 == 1 { -7 } else { r % v })
            .collect();
        let id_bytes: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
        let graph = OperationGraph::from_bytes(&b.build()).unwrap();
        let engine = ReferenceEngine::new();
        let config = EngineConfig {
            engine_id: engine.id(),
            knob_choices: vec![],
        };
        let ctx = engine.create_execution_context(&config, &graph).unwrap();
        let mut y = vec![0xffu8; (n * h * 4) as usize];
        let mut bindings = [
            TensorBinding {
                uid: 1,
                data: BufferRef::Host(&table),
            },
            TensorBinding {
                uid: 2,
                data: BufferRef::Host(&id_bytes),
            },
            TensorBinding {
                uid: 3,
                data: BufferRef::HostMut(&mut y),
            },
        ];
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut bindings,
        })
        .unwrap();
        let got: Vec<f32> = y
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let want: Vec<f32> = ids.iter().flat_map(|&i| row(v, h, i)).collect();
        assert_eq!(got, want, "n {n}");
    }
}
