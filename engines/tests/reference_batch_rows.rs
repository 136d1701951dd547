//! Issue 37, class 5 on the CPU reference engine: every fused path of the shared row matrix
//! (`batch_rows_support`: matmul with bias/activation/residual epilogues and an `[N, 1]`
//! output, conv fprop with a fused epilogue, conv dgrad, layernorm/rmsnorm, norm backward's dx,
//! reductions, softmax, SDPA, pooling, batchnorm inference, a fused pointwise chain, gather) run
//! at batch N and compared row by row, bitwise, with the same graph run at batch 1 for each row.
//!
//! The reference engine has one code path per op whatever the batch, so every row must be
//! bitwise equal (the harness's tolerance branch is for executors that pick another kernel at
//! batch 1; this one reports the same "kernel" for every run).

mod batch_rows_support;
mod batchnorm_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{Run, check_rows};
use hipdnn_engines::reference::testing::{GraphBuilder, run_graph};

fn reference(
    b: GraphBuilder,
    ins: &[(i64, Vec<f32>)],
    outs: &[i64],
    _force: Option<&str>,
) -> Result<Run, String> {
    let outputs = run_graph(b, ins, outs).map_err(|e| e.message)?;
    Ok(Run {
        outputs,
        kernel: "reference".into(),
    })
}

#[test]
fn every_fused_path_gives_each_row_the_bits_of_its_batch_one_run() {
    let mut rows = 0;
    for (i, case) in batch_rows_support::cases().iter().enumerate() {
        for n in batch_rows_support::GPU_BATCHES {
            let rep = check_rows(case, n, i as u64, &mut reference).unwrap();
            assert_eq!(rep.bitwise_rows, n as usize, "{}", case.label);
            assert!(rep.tolerance_rows.is_empty());
            rows += rep.bitwise_rows;
        }
    }
    // 30 cases × (2 + 3 + 5 + 17) rows.
    assert_eq!(rows, 30 * 27);
}

/// The check itself catches burn's bug: an executor whose batched run gets every row after the
/// first one ulp wrong (the `[N, 1]` MLP head) fails at row 1 with the element named.
#[test]
fn a_batched_run_with_rows_after_the_first_one_ulp_off_is_caught() {
    let cases = batch_rows_support::cases();
    let case = &cases[0];
    let mut wrong = |b: GraphBuilder, ins: &[(i64, Vec<f32>)], outs: &[i64], f: Option<&str>| {
        let batched = f.is_none();
        let mut run = reference(b, ins, outs, f)?;
        if batched {
            for v in run.outputs[0].iter_mut().skip(1) {
                *v = f32::from_bits(v.to_bits() ^ 1);
            }
        }
        Ok(run)
    };
    let err = check_rows(case, 3, 0, &mut wrong).unwrap_err();
    assert!(
        err.starts_with(
            "matmul FLOAT k 32 -> (n, 1) + bias RELU_FWD at batch 3: output uid 9 row 1 element 0: batch 3 gave "
        ),
        "{err}"
    );
    assert!(
        err.ends_with("(same kernel reference: must be bitwise equal)"),
        "{err}"
    );
}
