//! Damaged input never panics: every truncation and a corruption of every byte (xor 0xFF,
//! 0x01 or 0x80 by position) of a valid
//! Graph buffer (>= 20 nodes) gives an error or a graph, and a graph so obtained can be
//! validated and saved again without panicking.

mod common;

use hipdnn::*;

fn exercise(data: &[u8]) -> bool {
    match Graph::from_graph_bytes(data) {
        Ok(g) => {
            let _ = g.validate();
            let _ = g.to_graph_bytes();
            let _ = g.to_json();
            true
        }
        Err(e) => {
            assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
            false
        }
    }
}

fn sample() -> Vec<u8> {
    let g = common::random_graph(0xDA3A9E, 20);
    assert!(g.node_count() >= 20);
    g.to_graph_bytes().unwrap()
}

#[test]
fn every_truncation_is_an_error_or_a_graph() {
    let bytes = sample();
    assert!(exercise(&bytes));
    let mut errors = 0;
    for len in 0..bytes.len() {
        if !exercise(&bytes[..len]) {
            errors += 1;
        }
    }
    // Almost every cut loses the root or a referenced table.
    assert!(
        errors > bytes.len() * 9 / 10,
        "{errors} of {} truncations rejected",
        bytes.len()
    );
}

#[test]
fn every_flipped_byte_is_an_error_or_a_graph() {
    let bytes = sample();
    let mut data = bytes.clone();
    let (mut ok, mut err) = (0, 0);
    for i in 0..bytes.len() {
        let mask = [0xFFu8, 0x01, 0x80][i % 3];
        data[i] ^= mask;
        if exercise(&data) {
            ok += 1
        } else {
            err += 1
        }
        data[i] ^= mask;
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}
