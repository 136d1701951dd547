//! `hipdnn-plan`: inspect, verify and diff files saved by the hipDNN SDK (bare `Graph`
//! FlatBuffers, `HDGP` graph-and-plan containers, plan-only envelopes v1/v2) and bare engine
//! payloads (kernel-ingestor `HKIP`, CPU reference `HRCP`).
//!
//! - `inspect FILE [--full] [--json]`: a summary (see [`summary`]: the form; the graph's data
//!   types, one table of its tensors, one line per node with its inputs and outputs; the plan's
//!   engine, workspace, knobs and payload), then the result of `verify`. `--full` prints every
//!   field instead: the container's content flags, the envelope (engine id and name,
//!   workspace, tensor UIDs, alignments), the graph (tensors, nodes with their attributes) and
//!   the engine payload, read at the wire level so that a file the SDK refuses is still shown;
//!   `--json` the same as one JSON document. Exit 0 when the file loads, 1 when a loader
//!   refuses it.
//! - `verify FILE [--json]`: the real loaders' checks without a device (see [`verify`]); exit
//!   0 when all pass, 1 with `FAILED <check>: <loader message>` on stderr otherwise.
//! - `diff A B [--json]`: the graph-level differences (graph fields and data types, tensors
//!   added, removed or changed by UID, nodes changed, the plan's engine), then the first
//!   differing field; exit 0 when equal, 1 when different.
//! - `json FILE [--pretty]`: the graph a file carries as upstream's JSON
//!   ([`hipdnn::Graph::to_json`], or indented: [`hipdnn::Graph::to_json_pretty`]).
//!
//! Files read: the SDK's saved binaries (bare Graph FlatBuffer, `HDGP` container, plan
//! envelope), bare engine payloads (`HKIP`, `HRCP`), and graph JSON (upstream's format and the
//! legacy one), shown as a graph. A kpack archive or a GPU code object is named as such (exit
//! 2, see [`describe::Form::foreign`]). Exit 2 for unreadable files and bad arguments. `--as
//! FORM` overrides the form detection.

mod debug_json;
mod describe;
mod diff;
mod render;
mod summary;
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
    /// Graph JSON in upstream's format (Graph::to_json).
    GraphJson,
    /// Graph JSON in the legacy format (Graph::to_flatbuffer_json).
    FlatbufferJson,
}

impl From<FormArg> for Form {
    fn from(f: FormArg) -> Form {
        match f {
            FormArg::Graph => Form::Graph,
            FormArg::HdgpContainer => Form::Container,
            FormArg::Plan => Form::Plan,
            FormArg::IngestorPayload => Form::IngestorPayload,
            FormArg::CpuPlanPayload => Form::CpuPayload,
            FormArg::GraphJson => Form::GraphJson,
            FormArg::FlatbufferJson => Form::FlatbufferJson,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Summarize what a saved file is and holds (graph, tensors, nodes, plan), then whether it
    /// loads.
    Inspect {
        /// The saved file (binary graph, container or plan, engine payload, or graph JSON).
        file: PathBuf,
        /// Every field of the file instead of the summary.
        #[arg(long)]
        full: bool,
        /// Machine-readable output (one JSON document, every field).
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
    /// Print the graph of a saved file as upstream's JSON (Graph::to_json).
    Json {
        /// The saved file (binary graph, container, CPU plan, or graph JSON).
        file: PathBuf,
        /// Indented (Graph::to_json_pretty) instead of compact.
        #[arg(long)]
        pretty: bool,
    },
    /// Name the graph-level differences and the first differing field of two saved files;
    /// exit 1 when they differ.
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

/// The form of `bytes` (or `as_form`); a kpack archive or a code object is refused with exit 2
/// and a sentence saying what the file is.
fn form_of(path: &Path, bytes: &[u8], as_form: Option<FormArg>) -> Result<Form, ExitCode> {
    let form = as_form.map_or_else(|| describe::sniff(bytes), Form::from);
    match form.foreign() {
        Some(what) => {
            eprintln!("hipdnn-plan: {} is {what}", path.display());
            Err(ExitCode::from(2))
        }
        None => Ok(form),
    }
}

/// The graph a file of `form` carries, as the SDK reads it (or why it cannot).
fn sdk_graph(bytes: &[u8], form: Form) -> Result<hipdnn::Graph, String> {
    match form {
        Form::GraphJson | Form::FlatbufferJson => describe::json_graph(bytes, form),
        _ => {
            let blob = describe::graph_blob(bytes, form)
                .ok_or_else(|| format!("a file of form {} carries no graph", form.name()))?;
            hipdnn::Graph::from_graph_bytes(&blob).map_err(|e| e.to_string())
        }
    }
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
            full,
            json,
            as_form,
        } => {
            let bytes = read(&file)?;
            let form = form_of(&file, &bytes, as_form)?;
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
                if full {
                    print!("{}", render::text(&doc));
                } else {
                    print!("{}", summary::text(&doc, form, &sdk_graph(&bytes, form)));
                }
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
            let form = form_of(&file, &bytes, as_form)?;
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
                if form == Form::Unknown {
                    eprintln!(
                        "hipdnn-plan: {} is {}; the loaders say:",
                        file.display(),
                        describe::UNKNOWN_FORM
                    );
                }
                for (check, message) in &report.failures {
                    eprintln!("FAILED {check}: {message}");
                }
            }
            Ok(exit_of(report.ok()))
        }
        Command::Json { file, pretty } => {
            let bytes = read(&file)?;
            let form = form_of(&file, &bytes, None)?;
            let text = sdk_graph(&bytes, form).and_then(|g| {
                if pretty {
                    g.to_json_pretty()
                } else {
                    g.to_json()
                }
                .map_err(|e| e.to_string())
            });
            match text {
                Ok(t) => {
                    println!("{t}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(m) => {
                    eprintln!("hipdnn-plan: no JSON for {}: {m}", file.display());
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Diff { a, b, json } => {
            let (ba, bb) = (read(&a)?, read(&b)?);
            let da = describe::describe(&ba, form_of(&a, &ba, None)?);
            let db = describe::describe(&bb, form_of(&b, &bb, None)?);
            let d = diff::first_difference(&da, &db, &ba, &bb);
            let graph = if d.is_some() {
                diff::graph_differences(&da, &db)
            } else {
                Vec::new()
            };
            if json {
                print_json(&match &d {
                    None => json!({ "equal": true }),
                    Some(d) => json!({
                        "equal": false,
                        "graph": graph,
                        "path": d.path,
                        "a": d.a,
                        "b": d.b
                    }),
                });
            } else {
                for line in &graph {
                    println!("{line}");
                }
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
