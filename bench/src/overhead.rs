//! `hipdnn-bench overhead [--rounds N] [--batch N]`: host overhead of `Graph::execute` over a
//! raw launch of the same kernel (issue 29's acceptance: at most 0.5 µs).
//!
//! Both sides launch the kernel of a 1-element IDENTITY graph's plan. The raw side reads that
//! plan's own payload (code object, symbol, recorded signature, launch values), restores its
//! launch with the GPU engine's dispatch registry (pointer order, scalar arguments, geometry),
//! loads the code object with `hip::safe` and calls `Function::launch` with arguments built
//! once: the same function and the same arguments (its own two device buffers of one
//! element). The graph side calls `Graph::execute` with a variant pack built per call, as a
//! user does. Two sides in between show where the overhead goes: the engine's device layer
//! (`HipIngestorDevice::launch` with the handler's kernel arguments built per call) and the
//! backend (`ExecutionPlanDescriptor::execute_bindings` on the plan restored from the graph's
//! bytes, bindings built per call).
//!
//! Each round times `batch` enqueues of one side with no synchronize inside the timed loop
//! (the stream is synchronized, untimed, after each round); the four sides take turns within
//! each round so all see the same machine. The figure per side is the median round divided by `batch`; the
//! overhead is the difference. Without a GPU it prints `skipped: no GPU (<reason>)` and exits 0.

use crate::{R, e, pw_graph};
use hipdnn::{Buffer, Graph, Handle, PointwiseMode, VariantPack};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_engines::ingestor::HipIngestorDevice;
use hipdnn_engines::ingestor::device::{IngestorDevice, KernelArgValue};
use hipdnn_hip::{ArgKind, ArgSpec, KernelArg, LaunchConfig, Stream};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the comparison; prints one `overhead:` line (and the JSON to `out` when given).
pub fn overhead(rounds: usize, batch: usize, out: Option<&str>) -> R<()> {
    let h = match Handle::gpu() {
        Ok(h) => h,
        Err(x) => {
            println!("skipped: no GPU ({})", x.message);
            return Ok(());
        }
    };
    let dev = h
        .gpu_device()
        .ok_or("this handle executes on the CPU")?
        .clone();
    let mut g: Graph = pw_graph(PointwiseMode::Identity, &[1, 1, 1, 1]);
    g.build(&h).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();

    // The plan's own kernel and launch, for the raw side.
    let plan = g.to_compiled_plan_binary().map_err(e)?;
    let env = hipdnn_backend::PlanEnvelope::parse(&plan).map_err(|x| x.message)?;
    let p = hipdnn_engines::ingestor::payload::decode_payload(env.plugin_payload)
        .map_err(|x| x.message)?;
    let handler = hipdnn_engines::gpu::gpu_registry()
        .resolve(&p.dispatch_symbol)
        .ok_or_else(|| format!("no dispatch handler for '{}'", p.dispatch_symbol))?;
    let launch = handler
        .restore_launch(&p.dispatch_symbol, &p.launch_values)
        .map_err(|x| x.message)?;
    if launch.workspace_bytes > 0 {
        return Err(format!(
            "the plan's kernel '{}' needs a workspace; this bench compares workspace-free launches",
            p.symbol
        ));
    }
    let specs = p
        .signature
        .iter()
        .map(|a| {
            Ok(ArgSpec {
                kind: ArgKind::parse(&a.kind).ok_or_else(|| format!("argument kind {}", a.kind))?,
                size: a.size,
                offset: a.offset,
            })
        })
        .collect::<R<Vec<_>>>()?;
    let module = dev.load_module(&p.code_object).map_err(e)?;
    let f = module.function(&p.symbol, &specs).map_err(e)?;
    // Leaked (three small buffers for the process's life), so that the raw arguments are
    // `'static` and can be packed once as well (`Function::pack`).
    let leak = |b: hipdnn_hip::safe::DeviceBuffer<f32>| &*Box::leak(Box::new(b));
    let (rx, ry) = (
        leak(dev.alloc::<f32>(1).map_err(e)?),
        leak(dev.alloc::<f32>(1).map_err(e)?),
    );
    // The arguments exactly as the engine passes them (its handler's kernel_args over the same
    // addresses); a null pointer (an absent optional tensor, the scratch pointers the kernel
    // never touches) becomes a small unused buffer, since the safe layer has no null argument.
    let spare = &*Box::leak(Box::new(dev.alloc::<u8>(16).map_err(e)?));
    let bound = |uid: i64, b: &hipdnn_hip::safe::DeviceBuffer<f32>| TensorBinding {
        uid,
        data: BufferRef::Device {
            addr: b.device_ptr(),
            len: 4,
        },
    };
    let bindings = [bound(1, rx), bound(4, ry)];
    let kernel_args = handler
        .kernel_args(&launch, &bindings)
        .map_err(|x| x.message)?;
    let mut args: Vec<KernelArg<'static>> = Vec::new();
    for a in &kernel_args {
        args.push(match *a {
            KernelArgValue::Pointer(p) if p == rx.device_ptr() => rx.into(),
            KernelArgValue::Pointer(p) if p == ry.device_ptr() => ry.into(),
            KernelArgValue::Pointer(0) => spare.into(),
            KernelArgValue::Pointer(p) => {
                return Err(format!(
                    "the plan passes device address {p:#x}, which this bench lacks"
                ));
            }
            KernelArgValue::I32(v) => v.into(),
            KernelArgValue::U32(v) => v.into(),
            KernelArgValue::I64(v) => v.into(),
            KernelArgValue::F32(v) => v.into(),
        });
    }
    let geom = launch.geometry;
    let cfg = LaunchConfig {
        grid: (geom.grid[0], geom.grid[1], geom.grid[2]),
        block: (geom.block[0], geom.block[1], geom.block[2]),
        shared_bytes: geom.shared_mem_bytes,
    };
    let stream = Stream::default_stream(&dev);
    let raw = || f.launch(&stream, cfg, &args).map_err(e);
    // The same arguments packed once (`Function::pack`), the two tensor addresses written per
    // launch (`Function::launch_packed`): the cheapest launch the safe layer offers, which is
    // what the engine does on a plan's home device.
    let packed_args = f.pack(&args).map_err(e)?;
    let at = |b: &hipdnn_hip::safe::DeviceBuffer<f32>| {
        kernel_args
            .iter()
            .position(|a| *a == KernelArgValue::Pointer(b.device_ptr()))
            .ok_or("the plan's arguments lack a tensor address")
    };
    let (ix, iy) = (at(rx)?, at(ry)?);
    let raw_packed = || {
        f.launch_packed(
            &stream,
            cfg,
            &packed_args,
            &[(ix, rx.into()), (iy, ry.into())],
        )
        .map_err(e)
    };

    // Two sides in between, to show where the overhead goes. The engine's device layer: the
    // handler's kernel arguments built per call and the ingestor device's launch (argument
    // conversion, the bound signature). The backend: the plan restored from the graph's own
    // bytes, executed through `execute_bindings` with bindings built per call (backend checks,
    // the engine's context, the device layer).
    let idev = HipIngestorDevice::new(dev.clone());
    let module = idev.load_module(&p.code_object).map_err(e)?;
    let kf = idev.bind_signature(module.get_function(&p.symbol).map_err(e)?, &p.signature);
    let device_side = || {
        let ka = handler
            .kernel_args(&launch, &bindings)
            .map_err(|x| x.message)?;
        idev.launch(kf.as_ref(), launch.geometry, &ka, &p.signature, 0)
            .map_err(e)
    };
    // Diagnostics: the device layer with arguments built once, and the handler's argument
    // building alone (no launch).
    let ka_once = handler
        .kernel_args(&launch, &bindings)
        .map_err(|x| x.message)?;
    let device_prebuilt = || {
        idev.launch(kf.as_ref(), launch.geometry, &ka_once, &p.signature, 0)
            .map_err(e)
    };
    let args_only = || {
        std::hint::black_box(
            handler
                .kernel_args(&launch, std::hint::black_box(&bindings))
                .map_err(|x| x.message)?,
        );
        Ok::<(), String>(())
    };
    let bplan = hipdnn_backend::ExecutionPlanDescriptor::from_bytes(h.backend(), &plan)
        .map_err(|x| x.message)?;
    let backend_side = || {
        let mut b = [bound(1, rx), bound(4, ry)];
        bplan
            .execute_bindings(h.backend(), &mut b, None)
            .map_err(|x| x.message)
    };

    // The graph side: its own buffers, a variant pack per call.
    let x = Buffer::from_slice_on(&h, &[0.5f32]).map_err(e)?;
    let mut y = Buffer::<f32>::alloc(&h, 1).map_err(e)?;
    let mut exec = || {
        g.execute(&h, VariantPack::new().with(1, &x).with(4, &mut y), None)
            .map_err(e)
    };

    for _ in 0..batch {
        exec()?;
        raw()?;
        device_side()?;
        backend_side()?;
    }
    stream.synchronize().map_err(e)?;
    let mut times: [Vec<f64>; 7] = Default::default();
    for _ in 0..rounds.max(1) {
        for (side, t_side) in times.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..batch {
                match side {
                    0 => exec()?,
                    1 => raw()?,
                    2 => device_side()?,
                    3 => backend_side()?,
                    4 => device_prebuilt()?,
                    5 => args_only()?,
                    _ => raw_packed()?,
                }
            }
            t_side.push(t.elapsed().as_secs_f64() / batch as f64);
            stream.synchronize().map_err(e)?;
        }
    }
    let [te, tr, td, tb, tp, ta, tk] = times;
    let packed_us = median(tk) * 1e6;
    println!(
        "overhead diagnostics: device layer with arguments built once {:.3} µs; handler kernel_args alone {:.3} µs; raw packed launch {packed_us:.3} µs",
        median(tp) * 1e6,
        median(ta) * 1e6
    );
    let (exec_us, raw_us) = (median(te) * 1e6, median(tr) * 1e6);
    let (device_us, backend_us) = (median(td) * 1e6, median(tb) * 1e6);
    let report = serde_json::json!({
        "device": format!("{:?}", h.device()),
        "engine": engine,
        "kernel": p.symbol,
        "rounds": rounds,
        "batch": batch,
        "graph_execute_us": exec_us,
        "raw_launch_us": raw_us,
        "device_layer_us": device_us,
        "backend_execute_us": backend_us,
        "raw_packed_launch_us": packed_us,
        "overhead_over_packed_us": exec_us - packed_us,
        "overhead_us": exec_us - raw_us,
    });
    println!(
        "overhead: Graph::execute {exec_us:.3} µs, raw launch {raw_us:.3} µs, host overhead {:.3} µs per execute (kernel '{}', engine {engine}, median of {rounds} rounds of {batch}); in between: engine device layer {device_us:.3} µs, backend execute {backend_us:.3} µs; over a raw packed launch: {:.3} µs",
        exec_us - raw_us,
        p.symbol,
        exec_us - packed_us
    );
    if let Some(out) = out {
        if let Some(dir) = std::path::Path::new(out).parent() {
            std::fs::create_dir_all(dir).map_err(e)?;
        }
        std::fs::write(out, serde_json::to_string_pretty(&report).map_err(e)?).map_err(e)?;
        println!("wrote {out}");
    }
    Ok(())
}
