//! The `train` example's CNN (issue 31, item 3) on the CPU reference engine: its loss curve
//! against the same model trained in float64 numpy (`examples/train/numpy_peer.py`) from the
//! same initial state and batches, 1 vs N threads bit-identical, and a run stopped, saved,
//! reloaded (plans and state) and continued bit-identical to an uninterrupted one.
//!
//! Needs the digits (`python3 hipdnn-rs/examples/train/fetch_digits.py`, or
//! `$HIPDNN_DIGITS_DIR`); without them each test prints `skipped: …` and passes, unless
//! `HIPDNN_DIGITS_REQUIRED` is set (`.ci/run` sets it after fetching), which makes their
//! absence a failure. The peer comparison needs python3 with numpy in the same way.

#[path = "../examples/train/cnn.rs"]
mod cnn;
#[path = "../examples/train/data.rs"]
mod data;
#[path = "../examples/train/optim.rs"]
mod optim;

use cnn::{Batch, Hyper, Plans, State};
use hipdnn::Handle;
use optim::Opt;

const OPT: Opt = Opt::Sgd {
    lr: 0.05,
    momentum: 0.9,
};
const HYPER: Hyper = Hyper {
    batch: 32,
    opt: OPT,
};
const SEED: u64 = 7;

fn digits() -> Option<data::Digits> {
    match data::Digits::load() {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("HIPDNN_DIGITS_REQUIRED").is_some() => {
            panic!("HIPDNN_DIGITS_REQUIRED is set and the data set is unusable: {e}")
        }
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

/// `steps` steps from `state` with `plans`; every step's loss.
fn train(
    plans: &Plans,
    handle: &Handle,
    d: &data::Digits,
    state: &mut State,
    order: &[Vec<usize>],
    steps: usize,
) -> Vec<f32> {
    let mut losses = Vec::new();
    while state.step < steps {
        let (x, labels) = d.gather(&order[state.step]);
        let r = plans
            .step(
                handle,
                state,
                &Batch {
                    x: &x,
                    labels: &labels,
                },
            )
            .expect("step");
        losses.push(r.loss);
    }
    losses
}

/// 30 steps follow numpy's float64 curve: relative loss difference ≤ 1e-4 at every step (the
/// issue asks it over the first 20; measured 2.5e-7 over 20 and the same order over 200), and the
/// first loss is ln 10-ish (random init) while the 30th is well below it (it learns).
#[test]
fn loss_curve_follows_the_float64_numpy_peer() {
    let Some(d) = digits() else { return };
    let handle = Handle::cpu().unwrap();
    let plans = Plans::build(&handle, HYPER).unwrap();
    let mut state = State::init(SEED, OPT);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("init.safetensors"), state.to_bytes(OPT)).unwrap();
    let order = data::batches(SEED, d.train_len(), HYPER.batch, 30);
    std::fs::write(
        dir.path().join("batches.json"),
        serde_json::to_string(&order).unwrap(),
    )
    .unwrap();
    let ours = train(&plans, &handle, &d, &mut state, &order, 30);
    assert!(ours[0] > 2.0 && ours[29] < 1.0, "{ours:?}");
    let peer = match data::run_peer(
        dir.path(),
        &["--lr", "0.05", "--momentum", "0.9"].map(String::from),
    ) {
        Ok(p) => p,
        Err(e) if std::env::var_os("HIPDNN_DIGITS_REQUIRED").is_some() => panic!("{e}"),
        Err(e) => {
            println!("skipped the peer: {e}");
            return;
        }
    };
    assert_eq!(peer.len(), 30);
    for (i, (&a, &b)) in ours.iter().zip(&peer).enumerate() {
        let rel = (f64::from(a) - b).abs() / b.abs();
        assert!(
            rel <= 1e-4,
            "step {i}: ours {a}, numpy {b} (relative {rel:.2e})"
        );
    }
}

/// The same 12 steps on 1 thread and on the default pool give the same bits (losses and the
/// whole state).
#[test]
fn one_and_many_threads_train_bit_identically() {
    let Some(d) = digits() else { return };
    let order = data::batches(SEED, d.train_len(), HYPER.batch, 12);
    let run = || {
        let handle = Handle::cpu().unwrap();
        let plans = Plans::build(&handle, HYPER).unwrap();
        let mut state = State::init(SEED, OPT);
        let losses = train(&plans, &handle, &d, &mut state, &order, 12);
        (losses, state.to_bytes(OPT))
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(run);
    let many = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap()
        .install(run);
    assert_eq!(one.0, many.0, "losses");
    assert!(one.1 == many.1, "the states after 12 steps differ");
}

/// Stopped after 8 steps, every plan saved and reloaded without a graph build (each re-saves
/// byte-identically), the state written and read back, 8 more steps: the same losses and
/// state bytes as 16 uninterrupted steps.
#[test]
fn a_resumed_run_is_bit_identical_to_an_uninterrupted_one() {
    let Some(d) = digits() else { return };
    let handle = Handle::cpu().unwrap();
    let order = data::batches(SEED, d.train_len(), HYPER.batch, 16);
    let plans = Plans::build(&handle, HYPER).unwrap();
    let mut straight = State::init(SEED, OPT);
    let want = train(&plans, &handle, &d, &mut straight, &order, 16);

    let mut state = State::init(SEED, OPT);
    let mut got = train(&plans, &handle, &d, &mut state, &order, 8);
    let bins = plans.save().unwrap();
    let state_bytes = state.to_bytes(OPT);
    drop(plans);
    let handle = Handle::cpu().unwrap();
    let loaded = Plans::load(&handle, &bins).unwrap();
    assert!(
        loaded.save().unwrap() == bins,
        "a reloaded plan re-saved other bytes"
    );
    let mut state = State::from_bytes(&state_bytes, OPT).unwrap();
    assert_eq!(state.step, 8);
    got.extend(train(&loaded, &handle, &d, &mut state, &order, 16));
    assert_eq!(got, want, "losses");
    assert!(
        state.to_bytes(OPT) == straight.to_bytes(OPT),
        "the resumed state differs from the uninterrupted one"
    );
}
