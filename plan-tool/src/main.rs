//! `hipdnn-plan`: inspect, verify and diff files saved by the hipDNN SDK (bare `Graph`
//! FlatBuffers, `HDGP` graph-and-plan containers, plan-only envelopes v1/v2) and bare engine
//! payloads (kernel-ingestor `HKIP`, CPU reference `HRCP`).
//!
//! - `inspect FILE [--json]`: the form, the container's content flags, the envelope (engine id
//!   and name, workspace, tensor UIDs, alignments), the graph (tensors, nodes with their
//!   attributes) and the engine payload, read at the wire level so that a file the SDK refuses
//!   is still shown; then the result of `verify`. Exit 0 when the file loads, 1 when a loader
//!   refuses it.
//! - `verify FILE [--json]`: the real loaders' checks without a device (see [`verify`]); exit
//!   0 when all pass, 1 with `FAILED <check>: <loader message>` on stderr otherwise.
//! - `diff A B [--json]`: the first differing field; exit 0 when equal, 1 when different.
//!
//! Exit 2 for unreadable files and bad arguments. `--as FORM` overrides the form detection.

mod debug_json;
mod describe;
mod diff;
mod render;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use describe::Form;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Inspect, verify and diff saved hipDNN graphs and execution plans.
#[derive(Parser, Debug)]
#[command(name = "hipdnn-plan", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// A form given with `--as` instead of the detected one.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum FormArg {
    /// A bare Graph FlatBuffer.
    Graph,
    /// An HDGP graph-and-plan container.
    HdgpContainer,
    /// A plan-only SerializedExecutionPlan envelope.
    Plan,
    /// A bare kernel-ingestor payload (HKIP).
    IngestorPayload,
    /// A bare CPU reference plan payload (HRCP).
    CpuPlanPayload,
}

impl From<FormArg> for Form {
    fn from(f: FormArg) -> Form {
        match f {
            FormArg::Graph => Form::Graph,
            FormArg::HdgpContainer => Form::Container,
            FormArg::Plan => Form::Plan,
            FormArg::IngestorPayload => Form::IngestorPayload,
            FormArg::CpuPlanPayload => Form::CpuPayload,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show what a saved file is and holds, then whether it loads.
    Inspect {
        /// The saved file.
        file: PathBuf,
        /// Machine-readable output (one JSON document).
        #[arg(long)]
        json: bool,
        /// Read the file as this form instead of detecting it.
        #[arg(long = "as", value_enum)]
        as_form: Option<FormArg>,
    },
    /// Run every load-time check without a device; exit 1 naming the first failure.
    Verify {
        /// The saved file.
        file: PathBuf,
        /// Machine-readable output (one JSON document).
        #[arg(long)]
        json: bool,
        /// Read the file as this form instead of detecting it.
        #[arg(long = "as", value_enum)]
        as_form: Option<FormArg>,
    },
    /// Name the first differing field of two saved files; exit 1 when they differ.
    Diff {
        /// First file.
        a: PathBuf,
        /// Second file.
        b: PathBuf,
        /// Machine-readable output (one JSON document).
        #[arg(long)]
        json: bool,
    },
}

fn read(path: &Path) -> Result<Vec<u8>, ExitCode> {
    std::fs::read(path).map_err(|e| {
        eprintln!("hipdnn-plan: cannot read {}: {e}", path.display());
        ExitCode::from(2)
    })
}

fn report_json(r: &verify::Report) -> Value {
    json!({
        "ok": r.ok(),
        "passed": r.passed,
        "failures": r.failures.iter().map(|(c, m)| json!({ "check": c, "message": m })).collect::<Vec<_>>(),
        "not_checked": r.not_checked,
    })
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("\"{e}\""))
    );
}

fn exit_of(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run(cli: Cli) -> Result<ExitCode, ExitCode> {
    match cli.command {
        Command::Inspect {
            file,
            json,
            as_form,
        } => {
            let bytes = read(&file)?;
            let form = as_form.map_or_else(|| describe::sniff(&bytes), Form::from);
            let mut doc = describe::describe(&bytes, form);
            let report = verify::verify(&bytes, form, &doc);
            if let Value::Object(m) = &mut doc {
                m.insert("validation".into(), report_json(&report));
            }
            if json {
                print_json(&doc);
            } else {
                if let Value::Object(m) = &mut doc {
                    m.remove("validation");
                }
                print!("{}", render::text(&doc));
                if report.ok() {
                    println!("validation: ok ({})", report.passed.join(", "));
                    for n in &report.not_checked {
                        println!("  not checked (needs a device): {n}");
                    }
                } else {
                    println!("validation: FAILED");
                    for (check, message) in &report.failures {
                        println!("  {check}: {message}");
                    }
                }
            }
            Ok(exit_of(report.ok()))
        }
        Command::Verify {
            file,
            json,
            as_form,
        } => {
            let bytes = read(&file)?;
            let form = as_form.map_or_else(|| describe::sniff(&bytes), Form::from);
            let doc = describe::describe(&bytes, form);
            let report = verify::verify(&bytes, form, &doc);
            if json {
                let mut v = report_json(&report);
                if let Value::Object(m) = &mut v {
                    m.insert("form".into(), json!(form.name()));
                }
                print_json(&v);
            } else if report.ok() {
                println!("ok: {} ({})", form.name(), report.passed.join(", "));
                for n in &report.not_checked {
                    println!("not checked (needs a device): {n}");
                }
            } else {
                for (check, message) in &report.failures {
                    eprintln!("FAILED {check}: {message}");
                }
            }
            Ok(exit_of(report.ok()))
        }
        Command::Diff { a, b, json } => {
            let (ba, bb) = (read(&a)?, read(&b)?);
            let da = describe::describe(&ba, describe::sniff(&ba));
            let db = describe::describe(&bb, describe::sniff(&bb));
            let d = diff::first_difference(&da, &db, &ba, &bb);
            if json {
                print_json(&match &d {
                    None => json!({ "equal": true }),
                    Some(d) => json!({ "equal": false, "path": d.path, "a": d.a, "b": d.b }),
                });
            } else {
                match &d {
                    None => println!("equal"),
                    Some(d) => println!(
                        "differ at {}: {} vs {}",
                        d.path,
                        render::inline(d.a.as_ref()),
                        render::inline(d.b.as_ref())
                    ),
                }
            }
            Ok(exit_of(d.is_none()))
        }
    }
}

fn main() -> ExitCode {
    run(Cli::parse()).unwrap_or_else(|code| code)
}
