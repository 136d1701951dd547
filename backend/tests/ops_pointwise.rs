//! The pointwise op table against a hand-written list of the schema's modes (`graph.fbs`
//! `PointwiseMode`, numbers 0..=47).

use hipdnn_backend::ops::broadcast::{broadcast_shape, broadcasts_to};
use hipdnn_backend::ops::pointwise::{
    Arity, POINTWISE_OPS, arity, gen_index_axis_ok, is_backward, op,
};
use hipdnn_schema::graph::PointwiseMode;

/// (schema number, schema name, inputs, backward) — copied by hand from `graph.fbs`.
const SCHEMA: [(i8, &str, usize, bool); 48] = [
    (0, "UNSET", 0, false),
    (1, "ABS", 1, false),
    (2, "ADD", 2, false),
    (3, "ADD_SQUARE", 2, false),
    (4, "BINARY_SELECT", 3, false),
    (5, "CEIL", 1, false),
    (6, "CMP_EQ", 2, false),
    (7, "CMP_GE", 2, false),
    (8, "CMP_GT", 2, false),
    (9, "CMP_LE", 2, false),
    (10, "CMP_LT", 2, false),
    (11, "CMP_NEQ", 2, false),
    (12, "DIV", 2, false),
    (13, "ELU_BWD", 2, true),
    (14, "ELU_FWD", 1, false),
    (15, "ERF", 1, false),
    (16, "EXP", 1, false),
    (17, "FLOOR", 1, false),
    (18, "GELU_APPROX_TANH_BWD", 2, true),
    (19, "GELU_APPROX_TANH_FWD", 1, false),
    (20, "GELU_BWD", 2, true),
    (21, "GELU_FWD", 1, false),
    (22, "GEN_INDEX", 1, false),
    (23, "IDENTITY", 1, false),
    (24, "LOG", 1, false),
    (25, "LOGICAL_AND", 2, false),
    (26, "LOGICAL_NOT", 1, false),
    (27, "LOGICAL_OR", 2, false),
    (28, "MAX_OP", 2, false),
    (29, "MIN_OP", 2, false),
    (30, "MUL", 2, false),
    (31, "NEG", 1, false),
    (32, "RECIPROCAL", 1, false),
    (33, "RELU_BWD", 2, true),
    (34, "RELU_FWD", 1, false),
    (35, "RSQRT", 1, false),
    (36, "SIGMOID_BWD", 2, true),
    (37, "SIGMOID_FWD", 1, false),
    (38, "SIN", 1, false),
    (39, "SOFTPLUS_BWD", 2, true),
    (40, "SOFTPLUS_FWD", 1, false),
    (41, "SQRT", 1, false),
    (42, "SUB", 2, false),
    (43, "SWISH_BWD", 2, true),
    (44, "SWISH_FWD", 1, false),
    (45, "TAN", 1, false),
    (46, "TANH_BWD", 2, true),
    (47, "TANH_FWD", 1, false),
];

#[test]
fn every_schema_mode_has_the_hand_written_arity() {
    assert_eq!(PointwiseMode::ENUM_VALUES.len(), SCHEMA.len());
    for (n, name, inputs, backward) in SCHEMA {
        let mode = PointwiseMode(n);
        assert_eq!(mode.variant_name(), Some(name), "schema number {n}");
        assert_eq!(
            arity(mode).map_or(0, Arity::inputs),
            inputs,
            "arity of {name}"
        );
        assert_eq!(is_backward(mode), backward, "backward flag of {name}");
    }
}

#[test]
fn unset_and_unknown_modes_have_no_row() {
    assert_eq!(op(PointwiseMode::UNSET), None);
    assert_eq!(arity(PointwiseMode(48)), None);
    assert_eq!(arity(PointwiseMode(-1)), None);
    assert!(!is_backward(PointwiseMode(99)));
}

#[test]
fn the_table_lists_each_mode_once_in_schema_order() {
    let numbers: Vec<i8> = POINTWISE_OPS.iter().map(|r| r.mode.0).collect();
    assert_eq!(numbers, (1..=47).collect::<Vec<i8>>());
    assert_eq!(
        POINTWISE_OPS
            .iter()
            .filter(|r| r.arity == Arity::Ternary)
            .count(),
        1
    );
    assert!(
        POINTWISE_OPS
            .iter()
            .filter(|r| r.backward)
            .all(|r| r.arity == Arity::Binary)
    );
}

#[test]
fn arity_counts_inputs() {
    assert_eq!(Arity::Unary.inputs(), 1);
    assert_eq!(Arity::Binary.inputs(), 2);
    assert_eq!(Arity::Ternary.inputs(), 3);
}

#[test]
fn gen_index_axis_must_name_an_output_dim() {
    assert!(gen_index_axis_ok(0, 1));
    assert!(gen_index_axis_ok(3, 4));
    assert!(!gen_index_axis_ok(4, 4));
    assert!(!gen_index_axis_ok(-1, 4));
    assert!(!gen_index_axis_ok(0, 0));
}

#[test]
fn broadcasting_follows_numpy() {
    assert!(broadcasts_to::<i64>(&[1, 3, 1], &[2, 3, 4]));
    assert!(broadcasts_to::<i64>(&[4], &[2, 3, 4]));
    assert!(broadcasts_to::<usize>(&[], &[5]));
    assert!(!broadcasts_to::<i64>(&[2, 4], &[2, 3, 4]));
    assert!(!broadcasts_to::<usize>(&[1, 2, 3, 4], &[2, 3, 4]));
    assert_eq!(broadcast_shape(&[&[2, 1, 4], &[3, 1]]), vec![2, 3, 4]);
    assert_eq!(broadcast_shape(&[&[1], &[1, 1], &[5]]), vec![1, 5]);
    // Conflicts are an inference, not a check: the larger size wins.
    assert_eq!(broadcast_shape(&[&[2], &[3]]), vec![3]);
    assert_eq!(broadcast_shape(&[]), Vec::<i64>::new());
}
