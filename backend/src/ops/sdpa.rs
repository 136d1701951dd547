//! Scaled dot-product attention facts (forward): operand rank, head grouping, output and
//! statistics shapes, the dropout probability range (upstream `hipdnn_frontend` `SdpaNode`).
//!
//! Layouts: q `(B, H, S_q, D)`, k `(B, H_kv, S_kv, D)`, v `(B, H_kv, S_kv, D_v)`,
//! o `(B, H, S_q, D_v)`, statistics `(B, H, S_q, 1)`.

/// The rank of q, k, v and o: `(B, H, S, D)`.
pub const RANK: usize = 4;

/// Whether `h_kv` key/value heads serve `h_q` query heads (grouped-query attention):
/// `h_kv > 0` and `h_kv` divides `h_q`.
pub fn heads_compatible(h_q: i64, h_kv: i64) -> bool {
    h_kv > 0 && h_q % h_kv == 0
}

/// Dims of o for q and v dims: q's dims with the last replaced by v's last (`D_v`). Empty
/// inputs leave q's dims as they are.
///
/// ```
/// use hipdnn_backend::ops::sdpa::output_dims;
/// assert_eq!(output_dims::<i64>(&[2, 8, 16, 64], &[2, 2, 32, 128]), vec![2, 8, 16, 128]);
/// ```
pub fn output_dims<T: Copy>(q: &[T], v: &[T]) -> Vec<T> {
    let mut o = q.to_vec();
    if let (Some(l), Some(&dv)) = (o.last_mut(), v.last()) {
        *l = dv;
    }
    o
}

/// Dims of the softmax statistics (stats, max, sum-exp): q's dims with the last set to 1.
pub fn stats_dims<T: Copy + From<u8>>(q: &[T]) -> Vec<T> {
    let mut s = q.to_vec();
    if let Some(l) = s.last_mut() {
        *l = T::from(1);
    }
    s
}

/// Whether a dropout probability is meaningful: `0 <= p < 1` (NaN is not).
pub fn dropout_probability_ok(p: f32) -> bool {
    (0.0..1.0).contains(&p)
}
