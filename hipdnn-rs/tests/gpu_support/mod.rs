//! What the SDK's GPU tests share: the printed skip, the GPU handle or a skip, and a
//! deterministic input generator.
#![allow(dead_code)]

use hipdnn::Handle;

/// Prints why a GPU test does nothing here (`skipped: <why>` on stderr).
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// A handle on GPU 0, or `None` after printing why there is none.
pub fn gpu() -> Option<Handle> {
    match Handle::gpu() {
        Ok(h) => Some(h),
        Err(e) => {
            skipped(&e.message);
            None
        }
    }
}

/// `n` values in [-1, 1) from a linear congruential generator seeded with `seed`.
pub fn lcg(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
