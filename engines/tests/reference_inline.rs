//! A small CPU reference plan runs on the calling thread (`Plan::inline`): its execute
//! finishes while every thread of rayon's global pool is busy, where handing the steps to the
//! pool would wait for a free thread. A plan too large to run inline waits.
//!
//! One test per file: it holds the whole global pool for a moment.

use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, run_graph};
use hipdnn_schema::graph::DataType;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// `table (1000, 8)[ids]`, `n` INT64 ids.
fn gather(n: i64) -> GraphBuilder {
    let mut g = GraphBuilder::new("gather");
    g.tensor(TensorSpec::new(1, "table", DataType::FLOAT, &[1000, 8]))
        .tensor(TensorSpec::new(2, "ids", DataType::INT64, &[n]))
        .tensor(TensorSpec::new(3, "y", DataType::FLOAT, &[n, 8]));
    g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], &[]);
    g
}

/// Runs the gather of `n` ids on a thread of its own; its first row, or `None` when it has not
/// finished within `wait`.
fn gather_within(n: i64, wait: Duration) -> Option<f32> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let table: Vec<f32> = (0..8000).map(|v| v as f32).collect();
        let ids: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let y = run_graph(gather(n), &[(1, table), (2, ids)], &[3]).unwrap();
        let _ = tx.send(y[0][0]);
    });
    rx.recv_timeout(wait).ok()
}

#[test]
fn a_small_plan_runs_while_every_pool_thread_is_busy() {
    let threads = rayon::current_num_threads();
    // Every pool thread waits on `hold` (after meeting the test at `started`).
    let started = Arc::new(Barrier::new(threads + 1));
    let hold = Arc::new(Barrier::new(threads + 1));
    for _ in 0..threads {
        let (s, h) = (Arc::clone(&started), Arc::clone(&hold));
        rayon::spawn(move || {
            s.wait();
            h.wait();
        });
    }
    started.wait();
    // 16 ids: 16 · 8 · 2 + 16 elements of work, inline.
    let small = gather_within(16, Duration::from_secs(20));
    // 4096 ids: 69 632 elements, handed to the pool, which is busy.
    let large = gather_within(4096, Duration::from_millis(500));
    hold.wait();
    assert_eq!(
        small,
        Some(0.0),
        "the small plan did not finish on its own thread"
    );
    assert_eq!(large, None, "the large plan finished without the pool");
}
