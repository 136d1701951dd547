//! Plan load against a build with benchmarking, same graph, same run (issue 10): the wall
//! time of [`Graph::build`] (static rule), of [`Graph::build_benchmarked`] (every applicable
//! kernel timed on the device, the fastest kept), and of [`Graph::from_compiled_plan_binary`]
//! of the benchmarked plan's saved bytes on a new handle (median of 5 loads; handle creation
//! not timed), once while the benchmarked plan is alive (its module resident, reused by the
//! load) and once after it is dropped (cold: the load calls the driver's module load).

use super::*;

fn wall_ms(f: &mut dyn FnMut() -> R<()>) -> R<f64> {
    let t = std::time::Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn conv(n: i64, c: i64, h: i64, k: i64, nhwc: bool, epilogue: bool) -> ConvCase {
    ConvCase {
        n,
        c,
        h,
        k,
        r: 3,
        pad: 1,
        stride: 1,
        dil: 1,
        groups: 1,
        nhwc,
        epilogue,
    }
}

/// One row per graph: static build, benchmarked build, plan load, ratio.
pub(super) fn plans_section(gpu: &Handle) -> R<Vec<serde_json::Value>> {
    let mm = Case {
        ba: 1,
        bb: 1,
        m: 4096,
        n: 4096,
        k: 4096,
        b_col: false,
        epilogue: false,
    };
    let graphs: Vec<(String, Box<dyn Fn() -> Graph>)> = vec![
        (
            "matmul 4096³ f16".into(),
            Box::new(move || graph(mm, DataType::Half)),
        ),
        (
            "conv+bias+ReLU [32,64,56,64,3×3] f16 NHWC".into(),
            Box::new(|| conv_graph(conv(32, 64, 56, 64, true, true), DataType::Half)),
        ),
        (
            "conv+bias+ReLU [32,128,28,128,3×3] f32 NHWC".into(),
            Box::new(|| conv_graph(conv(32, 128, 28, 128, true, true), DataType::Float)),
        ),
        (
            "conv [32,256,14,256,3×3] f16 NCHW".into(),
            Box::new(|| conv_graph(conv(32, 256, 14, 256, false, false), DataType::Half)),
        ),
    ];
    let mut rows = Vec::new();
    for (name, mk) in &graphs {
        let build_ms = wall_ms(&mut || mk().build(gpu).map_err(e))?;
        println!("benchmarking build for {name}:");
        let mut g = mk();
        let bench_build_ms = wall_ms(&mut || g.build_benchmarked(gpu).map_err(e))?;
        let plan = g.to_compiled_plan_binary().map_err(e)?;
        // Resident: the benchmarked plan is alive, so its module is resident and the load
        // reuses it. Cold: no plan of this process holds the module, so the load calls
        // hipModuleLoadData / cuModuleLoadData.
        let load_ms = median_load(name, &plan)?;
        drop(g);
        let cold_load_ms = median_load(name, &plan)?;
        let row = json!({"graph": name, "build_ms": build_ms, "bench_build_ms": bench_build_ms,
            "load_ms": load_ms, "cold_load_ms": cold_load_ms, "plan_bytes": plan.len(),
            "bench_build_over_load": bench_build_ms / load_ms,
            "bench_build_over_cold_load": bench_build_ms / cold_load_ms});
        println!("plans: {row}");
        rows.push(row);
    }
    Ok(rows)
}

/// Median wall time of 5 [`Graph::from_compiled_plan_binary`] of `plan` on a new handle each
/// (handle creation not timed; each loaded plan is dropped before the next load), checking
/// that every loaded plan re-saves to the same bytes.
fn median_load(name: &str, plan: &[u8]) -> R<f64> {
    let mut loads = Vec::new();
    for _ in 0..5 {
        let h2 = Handle::gpu().map_err(e)?;
        let mut loaded = None;
        loads.push(wall_ms(&mut || {
            loaded = Some(Graph::from_compiled_plan_binary(&h2, plan).map_err(e)?);
            Ok(())
        })?);
        let again = loaded
            .ok_or("no plan")?
            .to_compiled_plan_binary()
            .map_err(e)?;
        if again != plan {
            return Err(format!(
                "{name}: re-save of the loaded benchmarked plan differs"
            ));
        }
    }
    loads.sort_by(f64::total_cmp);
    Ok(loads[2])
}
