//! The conv fprop family's `grouped` variant on fake sm_90 and gfx942 devices: every grouped
//! case of `conv_grouped_support::cases` (depthwise, channel multiplier 2, 4 and 16 channels per
//! group; f16, bf16, f32 NHWC; epilogues) is served by the grouped entry, launched once on grid
//! (cdiv(N·P·Q, 64)·cdiv(K, 64), 1, 1) with the kernel's argument count; the others (32 channels
//! per group, groups 1, NCHW, C not a multiple of 16) by another conv fprop entry. So
//! `gpu_conv_grouped.rs` cannot pass on the wrong kernel. The launch values of a saved grouped
//! plan are refused when they name variant 4 or break the variant's hints.

#[path = "ingestor_support.rs"]
mod support;

mod batch_rows_support;
mod batchnorm_support;
mod conv_grouped_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::ingestor_plan;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::ingestor::device::KernelArgValue;

#[test]
fn grouped_convs_take_the_grouped_entry_and_its_grid_on_sm_90_and_gfx942() {
    for arch in ["sm_90", "gfx942"] {
        let (e, dev) = support::fake_gpu_engine(arch);
        for (case, grouped) in conv_grouped_support::cases() {
            let b = conv_grouped_support::graph(&case);
            let uids: Vec<i64> = conv_grouped_support::inputs(&case)
                .iter()
                .map(|(u, _)| *u)
                .chain([conv_grouped_support::Y])
                .collect();
            let lens: Vec<usize> = uids.iter().map(|u| b.spec(*u).bytes_len()).collect();
            let og = OperationGraph::from_bytes(&b.build()).unwrap();
            let (ctx, kernel, dispatch) =
                ingestor_plan(&e, &og, None).unwrap_or_else(|err| panic!("{arch} {case:?}: {err}"));
            assert_eq!(
                dispatch, "hipkernel.conv_fprop.dispatch.v2",
                "{arch} {case:?}"
            );
            assert_eq!(
                kernel.contains("_grouped_"),
                grouped,
                "{arch} {case:?} is served by {kernel}"
            );
            let before = dev.launches.lock().unwrap().len();
            let bound: Vec<(i64, usize)> = uids.iter().copied().zip(lens).collect();
            support::fake_execute(ctx.as_ref(), &bound)
                .unwrap_or_else(|err| panic!("{arch} {case:?}: execute: {}", err.message));
            let launches = dev.launches.lock().unwrap();
            if grouped {
                assert_eq!(launches.len(), before + 1, "{arch} {case:?}");
                let (geometry, args) = launches.last().unwrap();
                let (p, q) = case.out();
                let tiles = ((case.n * p * q) as u64).div_ceil(64) * (case.k as u64).div_ceil(64);
                assert_eq!(geometry.grid, [tiles as u32, 1, 1], "{arch} {case:?}");
                // 6 pointers, 15 shape values and groups, 12 strides and 4 residual strides
                // less sxc, syk and srk, the epilogue, 2 scratch pointers.
                assert_eq!(args.len(), 6 + 16 + 16 - 3 + 1 + 2, "{arch} {case:?}");
                let ints: Vec<i32> = args
                    .iter()
                    .filter_map(|a| match a {
                        KernelArgValue::I32(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                // n c h w k p q r s pad_h pad_w stride_h stride_w dil_h dil_w groups.
                let (n, c, k) = (case.n as i32, case.c as i32, case.k as i32);
                assert_eq!(&ints[..5], &[n, c, case.h as i32, case.w as i32, k]);
                assert_eq!(ints[15], case.groups as i32, "{arch} {case:?}");
            }
        }
    }
}

#[test]
fn a_saved_grouped_plan_restores_and_launch_values_that_break_the_variant_are_refused() {
    use hipdnn_backend::engine::Engine;
    use hipdnn_engines::ingestor::launch_values::LaunchValue;
    use hipdnn_engines::ingestor::payload::{decode_payload, encode_payload};
    let (e, _dev) = support::fake_gpu_engine("sm_90");
    let (case, _) = conv_grouped_support::cases()[1];
    let og = OperationGraph::from_bytes(&conv_grouped_support::graph(&case).build()).unwrap();
    let (ctx, kernel, _) = ingestor_plan(&e, &og, None).unwrap();
    assert!(kernel.contains("_grouped_"), "{kernel}");
    let ser = e.serialization().unwrap();
    let saved = ser
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.launch_values.get("spec"), Some(&LaunchValue::Int(5)));
    assert!(ser.create_execution_context_from_serialized(&saved).is_ok());
    let refused = |name: &str, v: i64| {
        let mut q = p.clone();
        q.launch_values.insert(name.into(), LaunchValue::Int(v));
        match ser.create_execution_context_from_serialized(&encode_payload(&q).unwrap()) {
            Ok(_) => panic!("{name} = {v} restored"),
            Err(err) => err.message,
        }
    };
    // Variant 4 on the grouped kernel: its signature is not variant 4's (the generic list).
    let m = refused("spec", 4);
    assert!(
        m.contains("the saved kernel's arguments do not match"),
        "{m}"
    );
    let m = refused("sxc", 2);
    assert!(
        m.contains("name the grouped variant, whose 'sxc', 'syk' and 'srk' must be 1"),
        "{m}"
    );
    let m = refused("syp", 24);
    assert!(m.contains("name the grouped variant"), "{m}");
    // Variant 4 on a generic conv plan, whose signature variant 4 shares.
    let (case, _) = *conv_grouped_support::cases().last().unwrap();
    let og = OperationGraph::from_bytes(&conv_grouped_support::graph(&case).build()).unwrap();
    let (ctx, kernel, _) = ingestor_plan(&e, &og, None).unwrap();
    assert!(kernel.contains("_generic_"), "{kernel}");
    let mut q = decode_payload(
        &ser.serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap(),
    )
    .unwrap();
    q.launch_values.insert("spec".into(), LaunchValue::Int(4));
    let m = ser
        .create_execution_context_from_serialized(&encode_payload(&q).unwrap())
        .err()
        .expect("variant 4 restored")
        .message;
    assert!(m.contains("name variant 4 (bcol), a matmul variant"), "{m}");
}
