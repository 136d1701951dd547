//! Shape and attribute rules of the normalization, reduction and SDPA op tables.

use hipdnn_backend::ops::{norm, reduction, sdpa};
use hipdnn_schema::graph::ReductionMode;

#[test]
fn batchnorm_statistics_are_per_channel() {
    assert_eq!(
        norm::channel_stats_dims::<i64>(&[8, 3, 5, 7]),
        vec![1, 3, 1, 1]
    );
    assert_eq!(norm::channel_stats_dims::<usize>(&[2, 16]), vec![1, 16]);
    assert_eq!(
        norm::channel_stats_dims::<i64>(&[4, 6, 2, 2, 2]),
        vec![1, 6, 1, 1, 1]
    );
    assert_eq!(norm::channel_stats_dims::<i64>(&[9]), vec![1]);
}

#[test]
fn reduction_operators_are_the_schema_modes_after_not_set() {
    for n in 0..=10i8 {
        assert_eq!(
            reduction::is_operator(ReductionMode(n)),
            (1..=9).contains(&n),
            "mode {n}"
        );
    }
    assert!(!reduction::is_operator(ReductionMode(-1)));
}

#[test]
fn reduction_output_keeps_rank_and_reduces_to_one() {
    assert!(reduction::output_dims_ok::<i64>(&[2, 3, 4], &[2, 3, 4]));
    assert!(reduction::output_dims_ok::<i64>(&[2, 3, 4], &[1, 1, 1]));
    assert!(reduction::output_dims_ok::<usize>(&[2, 3, 4], &[2, 1, 4]));
    assert!(!reduction::output_dims_ok::<i64>(&[2, 3, 4], &[2, 2, 4]));
    assert!(!reduction::output_dims_ok::<i64>(&[2, 3, 4], &[3, 4]));
}

#[test]
fn sdpa_shapes_and_attributes() {
    assert_eq!(sdpa::RANK, 4);
    assert_eq!(
        sdpa::output_dims::<i64>(&[2, 8, 16, 64], &[2, 2, 32, 128]),
        vec![2, 8, 16, 128]
    );
    assert_eq!(
        sdpa::stats_dims::<usize>(&[2, 8, 16, 64]),
        vec![2, 8, 16, 1]
    );
    assert!(sdpa::heads_compatible(8, 2));
    assert!(sdpa::heads_compatible(8, 8));
    assert!(!sdpa::heads_compatible(8, 3));
    assert!(!sdpa::heads_compatible(8, 0));
    assert!(sdpa::dropout_probability_ok(0.0));
    assert!(sdpa::dropout_probability_ok(0.5));
    assert!(!sdpa::dropout_probability_ok(1.0));
    assert!(!sdpa::dropout_probability_ok(-0.1));
    assert!(!sdpa::dropout_probability_ok(f32::NAN));
}
