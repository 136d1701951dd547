//! The convolution and resample extent rules: odd padding, stride and dilation, the inverse
//! rules of dgrad/wgrad, overflow and non-positive results as typed errors.

use hipdnn_backend::ops::conv::{
    ExtentError, SpatialAttr, Window, data_grad_extent, filter_grad_extent, groups, output_extent,
};
use hipdnn_backend::ops::matmul::{inner_dims_agree, output_dims};
use hipdnn_backend::ops::resample;

fn w(pre: i64, post: i64, stride: i64, dilation: i64) -> Window {
    Window {
        pre,
        post,
        stride,
        dilation,
    }
}

/// Brute force: count the window positions whose dilated taps all lie in the padded input.
fn brute(input: i64, filter: i64, g: Window) -> i64 {
    let padded = input + g.pre + g.post;
    (0..)
        .map(|o| o * g.stride + g.dilation * (filter - 1))
        .take_while(|&last| last < padded)
        .count() as i64
}

#[test]
fn output_extent_matches_brute_force_for_odd_geometries() {
    for input in 1..12 {
        for filter in 1..5 {
            for (pre, post) in [(0, 0), (1, 0), (0, 2), (2, 1), (3, 3)] {
                for stride in 1..4 {
                    for dil in 1..4 {
                        let g = w(pre, post, stride, dil);
                        let want = brute(input, filter, g);
                        let got = output_extent(input, filter, g);
                        if want > 0 {
                            assert_eq!(got, Ok(want), "{input} {filter} {g:?}");
                        } else {
                            assert!(
                                matches!(got, Err(ExtentError::NonPositive(v)) if v <= 0),
                                "{input} {filter} {g:?}: {got:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn output_extent_pins() {
    // 224 input, 7x7 filter, pad 3, stride 2: ResNet stem -> 112.
    assert_eq!(output_extent(224, 7, w(3, 3, 2, 1)), Ok(112));
    // Asymmetric padding, stride 3, dilation 2: (10 + 1 + 2 - 5) / 3 + 1 = 3.
    assert_eq!(output_extent(10, 3, w(1, 2, 3, 2)), Ok(3));
    // The dilated filter (span 7) does not fit 5: floor((5 - 7) / 1) + 1 = -1.
    assert_eq!(
        output_extent(5, 4, w(0, 0, 1, 2)),
        Err(ExtentError::NonPositive(-1))
    );
    // Exactly fitting gives 1; one less gives 0.
    assert_eq!(output_extent(7, 4, w(0, 0, 5, 2)), Ok(1));
    assert_eq!(
        output_extent(6, 4, w(0, 0, 5, 2)),
        Err(ExtentError::NonPositive(0))
    );
}

#[test]
fn output_extent_refuses_bad_stride_and_overflow() {
    assert_eq!(
        output_extent(8, 3, w(0, 0, 0, 1)),
        Err(ExtentError::NonPositiveStride(0))
    );
    assert_eq!(
        output_extent(8, 3, w(0, 0, -2, 1)),
        Err(ExtentError::NonPositiveStride(-2))
    );
    assert_eq!(
        output_extent(i64::MAX, 1, w(1, 0, 1, 1)),
        Err(ExtentError::Overflow)
    );
    // Wrapping arithmetic would give NonPositive(-1) here.
    assert_eq!(
        output_extent(i64::MAX, 1, w(2, 0, i64::MAX, 1)),
        Err(ExtentError::Overflow)
    );
    assert_eq!(
        output_extent(8, i64::MAX, w(0, 0, 1, 3)),
        Err(ExtentError::Overflow)
    );
    assert_eq!(
        output_extent(8, i64::MIN, w(0, 0, 1, 1)),
        Err(ExtentError::Overflow)
    );
    // Large but representable: no false overflow.
    assert_eq!(output_extent(i64::MAX - 2, 1, w(1, 1, 1, 1)), Ok(i64::MAX));
    assert_eq!(output_extent(i64::MAX - 2, 1, w(1, 0, i64::MAX, 1)), Ok(1));
}

#[test]
fn data_grad_extent_inverts_the_forward_rule() {
    for input in 1..12 {
        for filter in 1..4 {
            for stride in 1..4 {
                for dil in 1..3 {
                    let g = w(1, 0, stride, dil);
                    let Ok(out) = output_extent(input, filter, g) else {
                        continue;
                    };
                    match data_grad_extent(out, filter, g) {
                        Ok(back) => {
                            assert!(back <= input, "{input} {filter} {g:?}");
                            assert_eq!(output_extent(back, filter, g), Ok(out));
                        }
                        // Only the padding alone covers the one output position.
                        Err(e) => {
                            assert_eq!(e, ExtentError::NonPositive(0), "{input} {filter} {g:?}")
                        }
                    }
                }
            }
        }
    }
    assert_eq!(data_grad_extent(4, 3, w(1, 1, 2, 1)), Ok(7));
    assert_eq!(
        data_grad_extent(1, 1, w(1, 1, 1, 1)),
        Err(ExtentError::NonPositive(-1))
    );
    assert_eq!(
        data_grad_extent(i64::MAX, 2, w(0, 0, 2, 1)),
        Err(ExtentError::Overflow)
    );
}

#[test]
fn filter_grad_extent_recovers_the_filter() {
    // x 10, pad 1/2, stride 3, dilation 2: filters 3 and 4 both give y 3; wgrad infers the
    // largest consistent filter.
    assert_eq!(filter_grad_extent(10, 3, w(1, 2, 3, 2)), Ok(4));
    assert_eq!(output_extent(10, 4, w(1, 2, 3, 2)), Ok(3));
    assert_eq!(output_extent(10, 5, w(1, 2, 3, 2)), Ok(2));
    assert_eq!(filter_grad_extent(224, 112, w(3, 3, 2, 1)), Ok(8));
    assert_eq!(filter_grad_extent(9, 3, w(0, 0, 3, 1)), Ok(3));
    assert_eq!(
        filter_grad_extent(8, 3, w(0, 0, 1, 0)),
        Err(ExtentError::NonPositiveDilation(0))
    );
    assert_eq!(
        filter_grad_extent(2, 9, w(0, 0, 1, 1)),
        Err(ExtentError::NonPositive(-6))
    );
    assert_eq!(
        filter_grad_extent(8, i64::MIN, w(0, 0, 1, 1)),
        Err(ExtentError::Overflow)
    );
}

#[test]
fn resample_uses_the_window_as_an_undilated_filter() {
    assert_eq!(resample::output_extent(7, 3, 1, 1, 2), Ok(4));
    assert_eq!(resample::output_extent(6, 2, 0, 0, 2), Ok(3));
    assert_eq!(
        resample::output_extent(1, 3, 0, 0, 1),
        Err(ExtentError::NonPositive(-1))
    );
    assert_eq!(
        resample::output_extent(4, 2, 0, 0, 0),
        Err(ExtentError::NonPositiveStride(0))
    );
    assert_eq!(resample::input_extent(4, 3, 1, 1, 2), Ok(7));
    assert_eq!(resample::input_extent(3, 2, 0, 0, 2), Ok(6));
}

#[test]
fn spatial_attributes_have_names_minimums_and_defaults() {
    assert_eq!(SpatialAttr::PrePadding.name(), "pre_padding");
    assert_eq!(SpatialAttr::PostPadding.name(), "post_padding");
    assert_eq!(SpatialAttr::Stride.name(), "stride");
    assert_eq!(SpatialAttr::Dilation.name(), "dilation");
    assert_eq!(SpatialAttr::Window.name(), "window");
    assert_eq!(SpatialAttr::PrePadding.default_entry(), 0);
    assert_eq!(SpatialAttr::Stride.default_entry(), 1);
    assert_eq!(
        SpatialAttr::PrePadding.first_bad_entry(&[0, 2, -1, -3]),
        Some(-1)
    );
    assert_eq!(SpatialAttr::PostPadding.first_bad_entry(&[0, 0]), None);
    assert_eq!(SpatialAttr::Stride.first_bad_entry(&[1, 0, -1]), Some(0));
    assert_eq!(SpatialAttr::Dilation.first_bad_entry(&[2, 1]), None);
    assert_eq!(SpatialAttr::Window.first_bad_entry(&[3, -2]), Some(-2));
}

#[test]
fn channel_groups() {
    assert_eq!(groups(8, 8, 16), Some(1));
    assert_eq!(groups(8, 2, 12), Some(4));
    assert_eq!(groups(8, 1, 8), Some(8));
    assert_eq!(groups(8, 3, 12), None);
    assert_eq!(groups(8, 2, 10), None);
    assert_eq!(groups(0, 2, 10), None);
}

#[test]
fn matmul_output_dims_broadcast_batches() {
    assert_eq!(output_dims(&[2, 1, 4, 8], &[3, 8, 5]), vec![2, 3, 4, 5]);
    assert_eq!(output_dims(&[4, 8], &[8, 5]), vec![4, 5]);
    assert!(inner_dims_agree(&[2, 4, 8], &[8, 5]));
    assert!(!inner_dims_agree(&[2, 4, 8], &[7, 5]));
    assert!(!inner_dims_agree(&[8], &[8, 5]));
}
