//! Training a small CNN on the 8×8 handwritten digits with hipdnn graphs only (issue 31): the
//! forward with saved statistics, the softmax cross-entropy loss, every gradient and the SGD
//! update are plans (`cnn.rs`); the host draws batches and moves buffers.
//!
//! ```text
//! python3 hipdnn-rs/examples/train/fetch_digits.py        # once: the data set (13 MB wheel)
//! cargo run --release --example train -- [--steps 200] [--out DIR] [--peer]
//! cargo run --release --example train -- --stop-after 100 --out DIR   # save after step 100
//! cargo run --release --example train -- --resume --out DIR          # fresh process: go on
//! ```
//!
//! Prints one line per epoch (45 steps of 32 images): mean loss, training accuracy (argmax
//! during the epoch) and test accuracy (the inference plans, running batchnorm statistics, on
//! the 352 held-out images in whole batches). Writes into `--out` (default `target/train/cnn`):
//! the six plans (`plans/*.hdgp`, `to_binary`), the training state (`state.safetensors`:
//! parameters, momentum buffers, running statistics, step), the initial state
//! (`init.safetensors`), the batches (`batches.json`: image indices per step), every step's
//! loss (`losses.json`) and the loss curve (`loss.png`). `--peer` also trains the same model
//! from the same initial state and batches in float64 numpy (`numpy_peer.py`), prints the
//! largest relative loss difference over the first 20 steps, and draws both curves.
//!
//! `--resume` loads the plans (no graph is built), checks that each re-saves byte-identically,
//! loads the state and losses, and trains on to `--steps`: the result is bit-identical to an
//! uninterrupted run (the final line prints the SHA-256 of the state to compare). Exit status
//! 1 on any error, 2 when the data set is missing (the message says how to fetch it).

#[path = "cnn.rs"]
mod cnn;
#[path = "data.rs"]
mod data;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use cnn::{Batch, Hyper, PLAN_FILES, Plans, State};
use hipdnn::Handle;

/// Train a small CNN on the 8×8 digits with hipdnn graphs.
#[derive(Parser, Debug)]
#[command(name = "train")]
struct Args {
    /// Total training steps (batches of `--batch` images).
    #[arg(long, default_value_t = 200)]
    steps: usize,
    /// Stop (and save) after this many steps; `--resume` goes on from there.
    #[arg(long)]
    stop_after: Option<usize>,
    /// Load the plans and state saved in `--out` and continue.
    #[arg(long)]
    resume: bool,
    /// Output directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Batch size.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Learning rate.
    #[arg(long, default_value_t = 0.05)]
    lr: f32,
    /// SGD momentum.
    #[arg(long, default_value_t = 0.9)]
    momentum: f32,
    /// Seed of the initial weights and the batch order.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Also train in float64 numpy (numpy_peer.py) and compare the loss curves.
    #[arg(long)]
    peer: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.starts_with("data:") => {
            eprintln!("train: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("train: error: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res<T> = Result<T, String>;

fn io<T>(path: &Path, r: std::io::Result<T>) -> Res<T> {
    r.map_err(|e| format!("{}: {e}", path.display()))
}

fn hipdnn<T>(what: &str, r: hipdnn::Result<T>) -> Res<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn run(args: &Args) -> Res<()> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/train/cnn"));
    let digits = data::Digits::load().map_err(|e| format!("data: {e}"))?;
    let handle = hipdnn("CPU handle", Handle::cpu())?;
    let plan_dir = out.join("plans");
    let (plans, mut state, mut losses) = if args.resume {
        let mut bins = Vec::new();
        for f in PLAN_FILES {
            let p = plan_dir.join(f);
            bins.push(io(&p, std::fs::read(&p))?);
        }
        let plans = hipdnn("loading the plans", Plans::load(&handle, &bins))?;
        for ((f, saved), again) in PLAN_FILES
            .iter()
            .zip(&bins)
            .zip(hipdnn("re-saving", plans.save())?)
        {
            if *saved != again {
                return Err(format!("plan {f} re-saved to other bytes than were loaded"));
            }
        }
        if plans.batch() != args.batch {
            return Err(format!(
                "the saved plans are for batch {}, not {}",
                plans.batch(),
                args.batch
            ));
        }
        let p = out.join("state.safetensors");
        let state = data::read_state(&io(&p, std::fs::read(&p))?)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        let p = out.join("losses.json");
        let losses: Vec<f32> = serde_json::from_slice(&io(&p, std::fs::read(&p))?)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        println!(
            "resumed at step {} from {} ({} plans loaded, each re-saved byte-identically)",
            state.step,
            out.display(),
            PLAN_FILES.len()
        );
        (plans, state, losses)
    } else {
        let hyper = Hyper {
            batch: args.batch,
            lr: args.lr,
            momentum: args.momentum,
        };
        let plans = hipdnn("building the plans", Plans::build(&handle, hyper))?;
        let state = State::init(args.seed);
        io(&out, std::fs::create_dir_all(&out))?;
        let p = out.join("init.safetensors");
        io(&p, hipdnn::write_atomically(&p, &data::write_state(&state)))?;
        (plans, state, Vec::new())
    };
    let order = data::batches(args.seed, digits.train_len(), args.batch, args.steps);
    let stop = args.stop_after.unwrap_or(args.steps).min(args.steps);
    let per_epoch = digits.train_len() / args.batch;
    let (mut epoch_loss, mut epoch_hits, mut epoch_steps) = (0f64, 0usize, 0usize);
    while state.step < stop {
        let idx = &order[state.step];
        let (x, labels) = digits.gather(idx);
        let r = hipdnn(
            &format!("step {}", state.step),
            plans.step(
                &handle,
                &mut state,
                &Batch {
                    x: &x,
                    labels: &labels,
                },
            ),
        )?;
        losses.push(r.loss);
        epoch_loss += f64::from(r.loss);
        epoch_hits += r.correct;
        epoch_steps += 1;
        if state.step % per_epoch == 0 || state.step == stop {
            let (tx, tl) = digits.test();
            let (hit, n) = hipdnn("evaluating", plans.evaluate(&handle, &state, tx, tl))?;
            println!(
                "epoch {:>2} step {:>4}: loss {:.4}, train accuracy {:.1}%, test accuracy {:.1}% ({hit}/{n})",
                state.step.div_ceil(per_epoch),
                state.step,
                epoch_loss / epoch_steps as f64,
                100.0 * epoch_hits as f64 / (epoch_steps * args.batch) as f64,
                100.0 * hit as f64 / n as f64,
            );
            (epoch_loss, epoch_hits, epoch_steps) = (0.0, 0, 0);
        }
    }
    io(&plan_dir, std::fs::create_dir_all(&plan_dir))?;
    for (f, bytes) in PLAN_FILES
        .iter()
        .zip(hipdnn("saving the plans", plans.save())?)
    {
        let p = plan_dir.join(f);
        io(&p, hipdnn::write_atomically(&p, &bytes))?;
    }
    let state_bytes = data::write_state(&state);
    let p = out.join("state.safetensors");
    io(&p, hipdnn::write_atomically(&p, &state_bytes))?;
    let p = out.join("losses.json");
    io(
        &p,
        hipdnn::write_atomically(&p, serde_json::to_string(&losses).expect("json").as_bytes()),
    )?;
    let p = out.join("batches.json");
    io(
        &p,
        hipdnn::write_atomically(&p, serde_json::to_string(&order).expect("json").as_bytes()),
    )?;
    let peer = if args.peer && state.step == args.steps {
        Some(data::run_peer(&out, args.lr, args.momentum)?)
    } else {
        None
    };
    if let Some(peer) = &peer {
        let n = 20.min(losses.len()).min(peer.len());
        let worst = losses[..n]
            .iter()
            .zip(&peer[..n])
            .map(|(&a, &b)| (f64::from(a) - b).abs() / b.abs())
            .fold(0.0, f64::max);
        println!(
            "numpy float64 peer: final loss {:.4} (ours {:.4}); largest relative loss difference over the first {n} steps {worst:.2e}",
            peer.last().copied().unwrap_or(f64::NAN),
            losses.last().copied().unwrap_or(f32::NAN)
        );
    }
    let p = out.join("loss.png");
    io(&p, data::plot(&p, &losses, peer.as_deref()))?;
    println!(
        "step {}: state SHA-256 {}; plans, state, losses and loss.png in {}",
        state.step,
        data::sha256(&state_bytes),
        out.display()
    );
    Ok(())
}
