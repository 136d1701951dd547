//! all-MiniLM-L6-v2 sentence embeddings through the hipdnn graph API (see `model.rs` for the
//! graphs), printing the cosine similarity of the first sentence with each other one and the
//! time of every stage.
//!
//! ```text
//! python3 hipdnn-rs/examples/minilm/fetch.py          # once: the weights and tokenizer
//! cargo run --release --example minilm -- "sentence one" "sentence two" [...]
//!     [--device cpu|gpu|auto] [--save DIR | --load DIR]
//!     [--batch B] [--pad-to S] [--repeat N] [--report FILE] [--benchmark] [--profile]
//!     [--max-batch B --max-seq S] [--graph]
//! ```
//!
//! `--graph` (GPU) captures the pass's executes into a device graph (CUDA graph / hipGraph,
//! `Handle::capture`) and replays it: checked bit for bit against the execute pass, and with
//! `--repeat` the replayed pass is timed beside the execute pass, alternating.
//!
//! `--max-batch`/`--max-seq` build the ten plans once at the largest shape with the
//! override-shape flag; every smaller batch × length then runs on them through execute-time
//! shape overrides (no rebuild), and the embeddings are checked bit for bit against plans
//! built at the tokens' own shape. Plans saved from such a run (`--save`) load and serve
//! smaller shapes too (built plans; a GPU plan restored from a file runs only at its built
//! shape). On the GPU, where the static rule can pick other kernels at the smaller shape, the
//! check is within 1e-5.
//!
//! `--batch`/`--pad-to`/`--repeat` time the whole forward pass at a given shape (e.g. 32 ×
//! 128 tokens); `--report` writes the tokens and embeddings for `torch_peer.py`, which runs
//! the same model in PyTorch on the same tokens (timing and agreement).
//!
//! `--save DIR` writes the ten plans (`to_binary`: `model::PLAN_FILES`), the embeddings (`embeddings.f32`, f32 little-endian, `(B, 384)`) and the
//! sentences (`sentences.txt`, one a line). `--load DIR` (meant for a fresh process) loads the
//! plans instead of building them (the sentences are padded to the saved length; the count
//! must match), checks that each re-saves byte-identically, and when the sentences are the
//! saved ones, that the embeddings are bit-identical to the saved ones. Exit status 1 on any
//! mismatch or error; 2 when the model files are missing (the message says how to fetch
//! them). Model directory: `$HIPDNN_MINILM_DIR`, else `target/minilm/`.
//!
//! `--device` defaults to `cpu` (the CPU reference engine). `gpu`/`auto` put the buffers on
//! the GPU handle, where every plan runs as one generated kernel (matmul with its epilogue,
//! layernorm / RMS norm, flash-attention SDPA, pointwise ADD).

#[path = "model.rs"]
mod model;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use hipdnn::Handle;
use model::{MiniLm, MiniLmError, Plans, Timings};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Device {
    /// The CPU reference engine.
    Cpu,
    /// The GPU (fails when none is usable).
    Gpu,
    /// The GPU when one is usable, else the CPU.
    Auto,
}

/// all-MiniLM-L6-v2 sentence embeddings on the hipdnn graph API.
#[derive(Parser, Debug)]
#[command(name = "minilm")]
struct Args {
    /// Sentences (at least two); the cosine similarity of the first with each other one is
    /// printed.
    #[arg(required = true, num_args = 2..)]
    sentences: Vec<String>,
    /// Where to run.
    #[arg(long, value_enum, default_value = "cpu")]
    device: Device,
    /// Save the plans, embeddings and sentences into this directory.
    #[arg(long, conflicts_with = "load")]
    save: Option<PathBuf>,
    /// Load the plans from this directory (written by --save) instead of building them.
    #[arg(long)]
    load: Option<PathBuf>,
    /// Batch size: the sentences are repeated in order until there are this many (default:
    /// as given).
    #[arg(long)]
    batch: Option<usize>,
    /// Pad every sentence to this many tokens (default: the longest sentence).
    #[arg(long)]
    pad_to: Option<usize>,
    /// Build the plans once for this many sentences (default: the batch) with the
    /// override-shape flag, so they serve every smaller batch and length through execute-time
    /// shape overrides; the embeddings are also compared bit for bit with plans built at the
    /// tokens' own shape.
    #[arg(long, conflicts_with = "load")]
    max_batch: Option<usize>,
    /// Build the plans once for this many tokens (default: the tokens' length); see
    /// `--max-batch`.
    #[arg(long, conflicts_with = "load")]
    max_seq: Option<usize>,
    /// After the first run, run the whole forward pass (token ids upload, every plan, the download
    /// of the embeddings; no synchronization between stages) this many more times and print
    /// the median and fastest wall time.
    #[arg(long, default_value_t = 0)]
    repeat: usize,
    /// Write the token ids, the mask, the embeddings and the timed runs as JSON here (for
    /// `torch_peer.py`).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Build the plans with benchmarking (every applicable kernel timed on the device, the
    /// fastest kept) instead of the static rule.
    #[arg(long, conflicts_with = "load")]
    benchmark: bool,
    /// After the timed runs, run once more with a device synchronization around every plan
    /// execution and print that pass's stage times and each plan's total time.
    #[arg(long)]
    profile: bool,
    /// Also run the pass replayed from a device graph (CUDA graph / hipGraph) that captures
    /// its executes once (GPU only): checked bit for bit against the execute pass; with
    /// `--repeat`, timed beside it (alternating runs).
    #[arg(long)]
    graph: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ MiniLmError::Missing(_)) => {
            eprintln!("minilm: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("minilm: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> MiniLmError + '_ {
    move |source| MiniLmError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn run(args: &Args) -> model::Result<()> {
    let dir = model::model_dir();
    model::check_present(&dir)?;
    let mut handle = match args.device {
        Device::Cpu => Handle::cpu(),
        Device::Gpu => Handle::gpu(),
        Device::Auto => Handle::new(),
    }?;
    println!("handle: {handle:?}");
    let mut t = Timings::new();
    let model = MiniLm::load(&handle, &dir, &mut t)?;
    let want = args.batch.unwrap_or(args.sentences.len()).max(1);
    let sentences: Vec<&str> = args
        .sentences
        .iter()
        .cycle()
        .take(want)
        .map(String::as_str)
        .collect();

    // Plans: loaded (fresh process, no engine selection) or built for this batch.
    let (plans, saved, pad_to) = match &args.load {
        Some(d) => {
            let start = Instant::now();
            let (plans, bins) = Plans::load(&handle, d)?;
            t.push((
                format!("load {} plans (from_binary)", model::PLAN_FILES.len()),
                start.elapsed(),
            ));
            let (b, s) = plans.shape();
            let smaller = plans.serves_smaller_shapes();
            if b != sentences.len() && !(smaller && sentences.len() < b) {
                return Err(MiniLmError::Input(format!(
                    "the plans in {} take {}{b} sentences, {} given",
                    d.display(),
                    if smaller { "at most " } else { "" },
                    sentences.len()
                )));
            }
            // Plans that serve smaller shapes take the tokens' own length (up to theirs).
            (Some(plans), Some(bins), (!smaller).then_some(s))
        }
        None => (None, None, None),
    };
    let start = Instant::now();
    let tokens = model.tokenize(&sentences, pad_to.or(args.pad_to))?;
    t.push(("tokenize".into(), start.elapsed()));
    let plans = match plans {
        Some(p) => p,
        None => {
            let start = Instant::now();
            if args.max_batch.is_some() || args.max_seq.is_some() {
                let (mb, ms) = (
                    args.max_batch.unwrap_or(tokens.batch),
                    args.max_seq.unwrap_or(tokens.seq),
                );
                let p = Plans::build_max(&handle, mb, ms, args.benchmark)?;
                t.push((
                    format!("build {} plans at {mb} × {ms}", model::PLAN_FILES.len()),
                    start.elapsed(),
                ));
                p
            } else {
                let p = Plans::build_with(&handle, tokens.batch, tokens.seq, args.benchmark)?;
                t.push((
                    format!("build {} plans", model::PLAN_FILES.len()),
                    start.elapsed(),
                ));
                p
            }
        }
    };
    println!(
        "batch {} × {} tokens; engines: {:?}",
        tokens.batch,
        tokens.seq,
        plans
            .graphs()
            .iter()
            .map(|g| g.engine_name().map(str::to_owned).unwrap_or_default())
            .collect::<std::collections::BTreeSet<_>>()
    );
    let emb = model.embed(&handle, &plans, &tokens, &mut t)?;
    let mut failures = Vec::new();
    if plans.shape() != (tokens.batch, tokens.seq) {
        // Served through shape overrides: the same pass on plans built at this shape.
        let own = Plans::build_with(&handle, tokens.batch, tokens.seq, args.benchmark)?;
        let want = model.embed_untimed(&handle, &own, &tokens)?;
        let same = want == emb;
        // The GPU engine may pick other kernels (tiles, summation orders) at the smaller
        // shape than at the built one: there the two agree within 1e-5, not bit for bit.
        let worst = want
            .iter()
            .zip(&emb)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        println!(
            "plans built at {} × {} served {} × {} through shape overrides; embeddings \
             bit-identical to plans built at {} × {}: {}",
            plans.shape().0,
            plans.shape().1,
            tokens.batch,
            tokens.seq,
            tokens.batch,
            tokens.seq,
            if same {
                "yes".to_string()
            } else {
                format!("no, max |d| = {worst:e} (other kernels at that shape)")
            }
        );
        if !same && worst > 1e-5 {
            failures.push("embeddings through shape overrides differ from a per-shape build");
        }
    }
    let mut graph_runs_ms = Vec::new();
    if args.graph {
        let (replayed, captured) = model.embed_replayed(&mut handle, &plans, &tokens)?;
        let same = replayed == emb;
        if let Some((executes, nodes)) = captured {
            println!(
                "device graph: {executes} executes captured into {nodes} nodes; replayed \
                 embeddings bit-identical to the execute pass: {}",
                if same { "yes" } else { "NO" }
            );
        }
        if !same {
            failures.push("embeddings replayed from the device graph differ from execute");
        }
    }
    let mut runs_ms = Vec::new();
    for _ in 0..args.repeat {
        let start = Instant::now();
        let again = model.embed_untimed(&handle, &plans, &tokens)?;
        runs_ms.push(start.elapsed().as_secs_f64() * 1e3);
        if again != emb {
            return Err(MiniLmError::Input(
                "a repeated run gave other embeddings".into(),
            ));
        }
        if args.graph {
            let start = Instant::now();
            let (again, _) = model.embed_replayed(&mut handle, &plans, &tokens)?;
            graph_runs_ms.push(start.elapsed().as_secs_f64() * 1e3);
            if again != emb {
                return Err(MiniLmError::Input(
                    "a replayed run gave other embeddings".into(),
                ));
            }
        }
    }
    let median = |runs: &[f64]| {
        let mut sorted = runs.to_vec();
        sorted.sort_by(f64::total_cmp);
        (sorted[sorted.len() / 2], sorted[0])
    };
    if !runs_ms.is_empty() {
        let (med, fast) = median(&runs_ms);
        println!(
            "forward pass, {} × {} tokens, {} runs: median {med:.3} ms, fastest {fast:.3} ms (bit-identical embeddings every run)",
            tokens.batch,
            tokens.seq,
            runs_ms.len(),
        );
    }
    if !graph_runs_ms.is_empty() {
        let (med, fast) = median(&graph_runs_ms);
        println!(
            "forward pass replayed from the device graph, {} runs (alternating with the above): \
             median {med:.3} ms, fastest {fast:.3} ms; {:.2}× the execute pass's speed",
            graph_runs_ms.len(),
            median(&runs_ms).0 / med
        );
    }
    if args.profile {
        *model::PROFILE.lock().expect("profile lock") = Some(Default::default());
        let mut steady = Timings::new();
        model.embed(&handle, &plans, &tokens, &mut steady)?;
        let totals = model::PROFILE.lock().expect("profile lock").take();
        println!("stage timings of that pass (after the timed runs):");
        for (name, d) in &steady {
            println!("  {name:<44} {:>9.3} ms", d.as_secs_f64() * 1e3);
        }
        println!("per-plan time of one pass (device synchronized around each execution):");
        for (name, (n, d)) in model::PLAN_FILES.iter().zip(totals.unwrap_or_default()) {
            println!("  {name:<26} {n:>3} × = {:>8.3} ms", d.as_secs_f64() * 1e3);
        }
    }
    if let Some(path) = &args.report {
        let report = serde_json::json!({
            "batch": tokens.batch, "seq": tokens.seq, "ids": tokens.ids, "mask": tokens.mask,
            "embeddings": emb, "runs_ms": runs_ms, "graph_runs_ms": graph_runs_ms,
            "device": format!("{:?}", handle.device()),
        });
        let text = serde_json::to_vec(&report).map_err(|e| MiniLmError::Input(e.to_string()))?;
        hipdnn::write_atomically(path, &text).map_err(io(path))?;
    }

    if let Some(bins) = &saved {
        let start = Instant::now();
        let again = plans.to_binaries()?;
        t.push(("re-save the plans (to_binary)".into(), start.elapsed()));
        let same = again == *bins;
        println!(
            "loaded plans re-save byte-identically: {}",
            if same { "yes" } else { "NO" }
        );
        if !same {
            failures.push("re-saved plan bytes differ from the loaded files");
        }
    }
    let bytes: Vec<u8> = emb.iter().flat_map(|v| v.to_le_bytes()).collect();
    let text = sentences.join("\n") + "\n";
    if let Some(d) = &args.load {
        let (ep, sp) = (d.join("embeddings.f32"), d.join("sentences.txt"));
        if std::fs::read_to_string(&sp).ok().as_deref() == Some(text.as_str()) {
            let same = std::fs::read(&ep).map_err(io(&ep))? == bytes;
            println!(
                "embeddings bit-identical to the saving run's: {}",
                if same { "yes" } else { "NO" }
            );
            if !same {
                failures.push("embeddings differ from the saving run's");
            }
        } else {
            println!("(other sentences than the saving run's: embeddings not compared)");
        }
    }
    if let Some(d) = &args.save {
        let start = Instant::now();
        let bins = plans.save(d)?;
        t.push(("save the plans (to_binary, write)".into(), start.elapsed()));
        for (p, b) in [
            (d.join("embeddings.f32"), &bytes),
            (d.join("sentences.txt"), &text.clone().into_bytes()),
        ] {
            hipdnn::write_atomically(&p, b).map_err(io(&p))?;
        }
        for (name, b) in model::PLAN_FILES.iter().zip(&bins) {
            println!("saved {} ({} bytes)", d.join(name).display(), b.len());
        }
    }

    println!("\nembedding[0][..6] = {:?}", &emb[..6]);
    for (i, s) in sentences.iter().enumerate().skip(1) {
        let c = model::cosine(
            &emb[..model::HIDDEN],
            &emb[i * model::HIDDEN..(i + 1) * model::HIDDEN],
        );
        println!("cosine({:?}, {s:?}) = {c:.4}", sentences[0]);
    }
    println!("\nstage timings:");
    for (name, d) in &t {
        println!("  {name:<44} {:>9.2} ms", d.as_secs_f64() * 1e3);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(MiniLmError::Input(failures.join("; ")))
    }
}
