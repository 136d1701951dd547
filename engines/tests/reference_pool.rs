//! The CPU reference pooling kernel (`ops::resample::pool`, one scan per `(n, c)` plane)
//! gives exactly the bits of the straightforward definition — one output at a time, its
//! window scanned in row-major order, the first maximum winning, sums in window order in f32 —
//! for 1 to 3 spatial dims, every pooling kind and padding mode, with the index output.

use hipdnn_engines::reference::ops::resample::{PoolGeometry, PoolKind, pool, pool_with};
use hipdnn_engines::reference::testing::random_values;
use ndarray::{ArrayD, IxDyn};

/// The definition: per output, per window tap in row-major order.
fn reference(
    x: &ArrayD<f32>,
    y_dims: &[usize],
    kind: PoolKind,
    g: &PoolGeometry,
) -> (Vec<f32>, Vec<f32>) {
    let sp = x.ndim() - 2;
    let xs: Vec<f32> = x.iter().copied().collect();
    let ind = &x.shape()[2..];
    let outd = &y_dims[2..];
    let ivol: usize = ind.iter().product();
    let ovol: usize = outd.iter().product();
    let wvol: usize = g.window.iter().product();
    let (mut y, mut idx) = (Vec::new(), Vec::new());
    for nc in 0..y_dims[0] * y_dims[1] {
        for o in 0..ovol {
            let mut opos = vec![0; sp];
            let mut r = o;
            for d in (0..sp).rev() {
                opos[d] = r % outd[d];
                r /= outd[d];
            }
            let (mut best, mut bi, mut found, mut sum, mut cnt) =
                (f32::NEG_INFINITY, 0, false, 0f32, 0usize);
            for t in 0..wvol {
                let mut wpos = vec![0; sp];
                let mut r = t;
                for d in (0..sp).rev() {
                    wpos[d] = r % g.window[d];
                    r /= g.window[d];
                }
                let mut pos = 0;
                let mut inside = true;
                for d in 0..sp {
                    let v = (opos[d] * g.stride[d] + wpos[d]) as isize - g.pre[d] as isize;
                    inside &= v >= 0 && v < ind[d] as isize;
                    pos = pos * ind[d] + v.max(0) as usize;
                }
                let val = inside.then(|| xs[nc * ivol + pos]);
                match kind {
                    PoolKind::Max { zero_pad } => {
                        let v = match val {
                            Some(v) => v,
                            None if zero_pad => 0.0,
                            None => continue,
                        };
                        if !found || v > best {
                            (best, bi, found) = (v, t, true);
                        }
                    }
                    _ => {
                        if let Some(v) = val {
                            sum += v;
                            cnt += 1;
                        }
                    }
                }
            }
            y.push(match kind {
                PoolKind::Max { .. } => best,
                PoolKind::AvgIncludePadding => sum / wvol as f32,
                PoolKind::AvgExcludePadding => {
                    if cnt == 0 {
                        0.0
                    } else {
                        sum / cnt as f32
                    }
                }
            });
            idx.push(if matches!(kind, PoolKind::Max { .. }) {
                bi as f32
            } else {
                0.0
            });
        }
    }
    (y, idx)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn pool_planes_give_the_bits_of_one_window_scan_per_output() {
    // (input spatial dims, window, stride, pre, post)
    type Case = (
        &'static [usize],
        &'static [usize],
        &'static [usize],
        &'static [usize],
        &'static [usize],
    );
    let cases: [Case; 5] = [
        (&[11], &[3], &[2], &[1], &[1]),
        (&[9, 8], &[3, 3], &[2, 2], &[1, 1], &[1, 1]),
        (&[7, 6], &[3, 2], &[2, 1], &[2, 0], &[2, 1]),
        (&[5, 4, 6], &[2, 3, 2], &[1, 2, 2], &[1, 1, 0], &[0, 1, 1]),
        (&[6, 6], &[2, 2], &[2, 2], &[0, 0], &[0, 0]),
    ];
    let kinds = [
        PoolKind::Max { zero_pad: false },
        PoolKind::Max { zero_pad: true },
        PoolKind::AvgIncludePadding,
        PoolKind::AvgExcludePadding,
    ];
    for (i, &(ind, win, st, pre, post)) in cases.iter().enumerate() {
        let mut xd = vec![2, 3];
        xd.extend_from_slice(ind);
        let mut yd = vec![2, 3];
        for d in 0..ind.len() {
            yd.push((ind[d] + pre[d] + post[d] - win[d]) / st[d] + 1);
        }
        let n: usize = xd.iter().product();
        // Negative values, so that a zero-padded maximum differs from a skipped one.
        let x = ArrayD::from_shape_vec(IxDyn(&xd), random_values(n, 90 + i as u64, -3.0, 1.0))
            .expect("dims");
        let g = PoolGeometry {
            window: win.to_vec(),
            stride: st.to_vec(),
            pre: pre.to_vec(),
            post: post.to_vec(),
        };
        for kind in kinds {
            let (y, idx) = pool(&x, &yd, kind, &g);
            let (want_y, want_i) = reference(&x, &yd, kind, &g);
            assert_eq!(y.shape(), &yd[..]);
            assert_eq!(
                bits(y.as_slice().unwrap()),
                bits(&want_y),
                "case {i} {kind:?}"
            );
            assert_eq!(
                bits(idx.as_slice().unwrap()),
                bits(&want_i),
                "case {i} {kind:?} index"
            );
            let (y2, none) = pool_with(&x, &yd, kind, &g, false);
            assert!(none.is_none());
            assert_eq!(y2, y, "case {i} {kind:?} without index");
        }
    }
}
