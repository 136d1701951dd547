//! all-MiniLM-L6-v2 over every visible GPU at once (issue 38): one thread and one handle per
//! device (`Handle::gpu_on`), each with its own copy of the weights, plans and buffers,
//! embedding batches of sentences; the throughput is measured with 1, 2, …, N devices working
//! at the same time and printed with the speed-up over one device.
//!
//! ```text
//! python3 hipdnn-rs/examples/minilm/fetch.py          # once: the weights and tokenizer
//! HIPDNN_KERNEL_DIR=$PWD/engines/kernels/packed \
//!   cargo run --release -p hipdnn --no-default-features --example minilm_multi -- \
//!     [--devices N] [--batch 32] [--pad-to 128] [--batches 20] ["sentence" ...]
//! ```
//!
//! Every device embeds the same tokens; the embeddings of every device of device 0's
//! architecture must be bit-identical to device 0's, and every timed pass must repeat its
//! device's first embeddings bit for bit (exit status 1 otherwise). The model graphs and the
//! forward pass are `minilm/model.rs`'s (the `minilm` example's). Setup (weights upload, plan
//! builds, one warm-up pass) happens before the timing. Exit status 2 when the model files are
//! missing (the message says how to fetch them), 1 on any other error or when no GPU is usable.
//!
//! The issue's target: with N GPUs, at least 0.9·N × the throughput of one.

#[path = "minilm/model.rs"]
mod model;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use clap::Parser;
use hipdnn::Handle;
use model::{MiniLm, MiniLmError, Plans, Timings};

/// all-MiniLM-L6-v2 on every visible GPU: throughput per device count.
#[derive(Parser, Debug)]
#[command(name = "minilm_multi")]
struct Args {
    /// Sentences of a batch (repeated in order up to --batch); a built-in set when none given.
    sentences: Vec<String>,
    /// Use the first N visible GPUs (default: all).
    #[arg(long)]
    devices: Option<usize>,
    /// Sentences per batch.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Tokens per sentence (padded).
    #[arg(long, default_value_t = 128)]
    pad_to: usize,
    /// Batches each device embeds per measurement.
    #[arg(long, default_value_t = 20)]
    batches: usize,
}

const SENTENCES: [&str; 4] = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "A monkey is playing drums.",
];

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ MiniLmError::Missing(_)) => {
            eprintln!("minilm_multi: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("minilm_multi: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What one device's thread reports: its architecture and first embeddings, or its error.
type Setup = Result<(String, Vec<f32>), String>;

fn run(args: &Args) -> model::Result<()> {
    let dir = model::model_dir();
    model::check_present(&dir)?;
    let visible = hipdnn::devices()?;
    for d in &visible {
        println!(
            "GPU {}: {} ({}, {:?})",
            d.ordinal, d.name, d.arch, d.platform
        );
    }
    let n = args.devices.unwrap_or(visible.len()).min(visible.len());
    if n == 0 {
        return Err(MiniLmError::Input("no GPU is visible".into()));
    }
    let given: Vec<&str> = if args.sentences.is_empty() {
        SENTENCES.to_vec()
    } else {
        args.sentences.iter().map(String::as_str).collect()
    };
    let sentences: Vec<&str> = given
        .iter()
        .copied()
        .cycle()
        .take(args.batch.max(1))
        .collect();
    println!(
        "{n} device(s); {} batches of {} × {} tokens per device per measurement",
        args.batches,
        sentences.len(),
        args.pad_to
    );

    // Workers: set up once, then take part in every measurement whose device count covers
    // them. The barriers include the main thread, which times each measurement.
    let ready = Barrier::new(n + 1);
    let start = Barrier::new(n + 1);
    let end = Barrier::new(n + 1);
    let failed = AtomicBool::new(false);
    let setups: Mutex<Vec<Option<Setup>>> = Mutex::new(vec![None; n]);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut rows = Vec::new();
    std::thread::scope(|s| {
        for i in 0..n {
            let (ready, start, end, failed, setups, errors, sentences, dir) = (
                &ready, &start, &end, &failed, &setups, &errors, &sentences, &dir,
            );
            s.spawn(move || {
                let setup = (|| -> model::Result<_> {
                    let handle = Handle::gpu_on(i)?;
                    let model = MiniLm::load(&handle, dir, &mut Timings::new())?;
                    let tokens = model.tokenize(sentences, Some(args.pad_to))?;
                    let plans = Plans::build(&handle, tokens.batch, tokens.seq)?;
                    let first = model.embed_untimed(&handle, &plans, &tokens)?;
                    Ok((handle, model, tokens, plans, first))
                })();
                let state = match setup {
                    Ok((handle, model, tokens, plans, first)) => {
                        setups.lock().unwrap()[i] =
                            Some(Ok((handle.device_arch().to_string(), first.clone())));
                        Some((handle, model, tokens, plans, first))
                    }
                    Err(e) => {
                        setups.lock().unwrap()[i] = Some(Err(e.to_string()));
                        failed.store(true, Ordering::SeqCst);
                        None
                    }
                };
                ready.wait();
                for d in 1..=n {
                    start.wait();
                    if let (true, Some((handle, model, tokens, plans, first))) = (i < d, &state)
                        && !failed.load(Ordering::SeqCst)
                    {
                        for _ in 0..args.batches {
                            match model.embed_untimed(handle, plans, tokens) {
                                Ok(e) if e == *first => {}
                                Ok(_) => {
                                    errors.lock().unwrap().push(format!(
                                        "device {i}: a pass gave other embeddings than its first"
                                    ));
                                    failed.store(true, Ordering::SeqCst);
                                    break;
                                }
                                Err(e) => {
                                    errors.lock().unwrap().push(format!("device {i}: {e}"));
                                    failed.store(true, Ordering::SeqCst);
                                    break;
                                }
                            }
                        }
                    }
                    end.wait();
                }
            });
        }
        ready.wait();
        for d in 1..=n {
            start.wait();
            let t0 = Instant::now();
            end.wait();
            let wall = t0.elapsed().as_secs_f64();
            if !failed.load(Ordering::SeqCst) {
                rows.push((d, wall));
            }
        }
    });

    let setups = setups.into_inner().unwrap();
    let mut problems = errors.into_inner().unwrap();
    let mut reference: Option<(String, Vec<f32>)> = None;
    for (i, s) in setups.into_iter().enumerate() {
        match s {
            Some(Ok((arch, emb))) => match &reference {
                None => reference = Some((arch, emb)),
                Some((arch0, emb0)) if *arch0 == arch && *emb0 != emb => problems.push(format!(
                    "device {i} ({arch}): embeddings differ from device 0's (same arch)"
                )),
                Some(_) => {}
            },
            Some(Err(e)) => problems.push(format!("device {i}: {e}")),
            None => problems.push(format!("device {i}: no report")),
        }
    }
    if !problems.is_empty() {
        return Err(MiniLmError::Input(problems.join("; ")));
    }
    let per_pass = (sentences.len() * args.batches) as f64;
    let one = rows.first().map(|(_, w)| per_pass / w).unwrap_or(0.0);
    println!("\ndevices   wall ms   sentences/s   × one device   efficiency");
    for (d, wall) in &rows {
        let rate = per_pass * *d as f64 / wall;
        println!(
            "{d:>7} {:>9.1} {rate:>13.1} {:>14.2} {:>11.0}%",
            wall * 1e3,
            rate / one,
            100.0 * rate / one / *d as f64
        );
    }
    println!(
        "embeddings bit-identical across devices of one architecture and across every pass: yes"
    );
    Ok(())
}
