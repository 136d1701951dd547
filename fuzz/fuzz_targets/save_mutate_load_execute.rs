//! Structure-aware: build a random valid graph (pointwise ops over random shapes and strides,
//! f32/f16), build it on the CPU engine, save it (container or plan alone), mutate the bytes
//! (byte writes, truncation, junk), load them, and execute what loads with buffers of the
//! sizes the loaded graph records. Nothing may panic; a loaded container's plan must agree
//! with its graph (the load cross-checks) so execution never reads or writes out of bounds.
#![no_main]
use arbitrary::Arbitrary;
use hipdnn::{
    Buffer, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode, TensorAttributes,
    VariantPack,
};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

#[derive(Debug, Arbitrary)]
struct Input {
    dims: Vec<u8>,
    transpose: bool,
    half: bool,
    modes: Vec<u8>,
    plan_only: bool,
    edits: Vec<(u16, u8)>,
    cut: Option<u16>,
    junk: Vec<u8>,
}

const MODES: [PointwiseMode; 4] = [
    PointwiseMode::Add,
    PointwiseMode::Mul,
    PointwiseMode::Sub,
    PointwiseMode::Div,
];

fn handle() -> &'static Handle {
    static H: OnceLock<Handle> = OnceLock::new();
    H.get_or_init(|| Handle::cpu().expect("a CPU handle"))
}

fn graph(inp: &Input) -> Option<Graph> {
    let dims: Vec<i64> = inp
        .dims
        .iter()
        .take(3)
        .map(|d| i64::from(d % 4) + 1)
        .collect();
    if dims.is_empty() {
        return None;
    }
    let mut order: Vec<usize> = (0..dims.len()).collect();
    if inp.transpose {
        order.reverse();
    }
    let strides = hipdnn::packed_strides(&dims, &order);
    let dt = if inp.half {
        DataType::Half
    } else {
        DataType::Float
    };
    let mut g = Graph::new();
    g.set_io_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims(dims.clone())
            .strides(strides.clone()),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .dims(dims)
            .strides(strides),
    );
    let mut y = g.pointwise(a, b, PointwiseAttributes::with_mode(MODES[0]));
    for m in inp.modes.iter().take(3) {
        y = g.pointwise(
            y,
            b,
            PointwiseAttributes::with_mode(MODES[usize::from(*m) % 4]),
        );
    }
    g.set_output(y, true);
    Some(g)
}

/// Executes `g` with zeroed buffers of the sizes its tensors record (skipped above 1 MiB).
fn execute(g: &Graph) {
    let mut bufs: Vec<(i64, Buffer<u8>)> = Vec::new();
    for (_, t) in g.tensors() {
        if t.is_virtual {
            continue;
        }
        let Some(uid) = t.uid else { return };
        let mut span: i64 = 1;
        for (d, s) in t.dims.iter().zip(&t.strides) {
            let Some(x) = (d - 1).checked_mul(*s).and_then(|x| span.checked_add(x)) else {
                return;
            };
            span = x;
        }
        let Some(bytes) = usize::try_from(span).ok().and_then(|s| s.checked_mul(8)) else {
            return;
        };
        if bytes > 1 << 20 {
            return;
        }
        bufs.push((uid, Buffer::zeros(bytes)));
    }
    let pack = bufs
        .iter_mut()
        .fold(VariantPack::new(), |p, (u, b)| p.with(*u, b));
    let Ok(ws) = g.workspace_size() else { return };
    if ws > 1 << 20 {
        return;
    }
    let mut w = Buffer::<u8>::zeros(ws);
    let _ = g.execute(handle(), pack, Some(&mut w));
}

fuzz_target!(|inp: Input| {
    let Some(mut g) = graph(&inp) else { return };
    if g.build(handle()).is_err() {
        return;
    }
    let saved = if inp.plan_only {
        g.to_compiled_plan_binary()
    } else {
        g.to_binary()
    };
    let Ok(mut bytes) = saved else { return };
    for (at, v) in inp.edits.iter().take(8) {
        if !bytes.is_empty() {
            let i = usize::from(*at) % bytes.len();
            bytes[i] = *v;
        }
    }
    if let Some(c) = inp.cut {
        bytes.truncate(usize::from(c) % (bytes.len() + 1));
    }
    bytes.extend_from_slice(&inp.junk);
    let loaded = if inp.plan_only {
        Graph::from_compiled_plan_binary(handle(), &bytes)
    } else {
        Graph::from_binary(handle(), &bytes)
    };
    if let Ok(l) = loaded {
        execute(&l);
    }
});
