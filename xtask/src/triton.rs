//! Triton ahead-of-time kernels (gpu-toolchain.md §12): `engines/kernels/triton/*.py` compiled
//! by a pinned `triton==3.9.0` in a virtual environment this tool creates
//! (`target/triton-venv`), packed per architecture into
//! `engines/kernels/packed/<arch>/hipdnn_triton-<arch>.kpack` plus `triton.json` (one kernel
//! descriptor per entry).
//!
//! Determinism: every build runs with a fresh `TRITON_CACHE_DIR`, `TRITON_DEFAULT_FP_FUSION=1`
//! and `TRITON_DISABLE_LINE_INFO=1` (no checkout path inside a code object); entries are
//! sorted, archives are written by the deterministic kpack writer (zstd per kernel), JSON has
//! sorted keys and no timestamps. `--check` rebuilds
//! into a scratch directory and compares bytes with the committed files.
//!
//! A descriptor entry records: kernel name (encoding the config, parsed by the launch
//! contract), symbol, family, dtype, variant (`spec` = divisibility-16 hints and unit strides
//! as constexpr 1; `generic` = no hints), parameter list (names, Triton types, order; the two
//! trailing scratch pointers included), constexprs, divisibility specializations, num_warps,
//! num_stages, shared bytes, scratch sizes, warp size, Triton version, and the kpack source
//! (`toc_key`, SHA-256, signature with names and natural-layout offsets).

use std::path::{Path, PathBuf};
use std::process::Command;

use hipdnn_kpack::{CompressionScheme, KpackWriter};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

type Res<T> = Result<T, String>;

/// The pinned Triton version.
pub const TRITON_VERSION: &str = "3.9.0";
/// Architectures of the Triton set, in output order.
pub const TRITON_ARCHES: &[&str] = &["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];
/// kpack group name of the Triton archives.
const GROUP: &str = "hipdnn_triton";

/// `hipdnn_triton-<arch>.kpack`.
pub fn archive_name(arch: &str) -> String {
    format!("{GROUP}-{arch}.kpack")
}

fn run(cmd: &mut Command) -> Res<String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The venv's python, creating `target/triton-venv` with `triton==3.9.0` when missing
/// (`TRITON_VENV` overrides the location).
pub fn ensure_venv(root: &Path) -> Res<PathBuf> {
    let venv = std::env::var_os("TRITON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/triton-venv"));
    let py = venv.join("bin/python");
    let probe = format!("import triton; assert triton.__version__ == '{TRITON_VERSION}'");
    if py.exists() && run(Command::new(&py).args(["-c", &probe])).is_ok() {
        return Ok(py);
    }
    eprintln!(
        "creating {} with triton=={TRITON_VERSION} (about 1 GB)",
        venv.display()
    );
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(&py).args([
        "-m",
        "pip",
        "install",
        "-q",
        &format!("triton=={TRITON_VERSION}"),
    ]))?;
    run(Command::new(&py).args(["-c", &probe]))?;
    Ok(py)
}

/// Kernel argument of a Triton parameter type: pointers are `global_buffer` 8, `i32`
/// `by_value` 4, `i64`/`fp64` `by_value` 8, `fp32` `by_value` 4.
fn arg_kind(ty: &str) -> Res<(&'static str, u32)> {
    Ok(match ty {
        t if t.starts_with('*') => ("global_buffer", 8),
        "i32" | "u32" | "fp32" => ("by_value", 4),
        "i64" | "u64" | "fp64" => ("by_value", 8),
        t => return Err(format!("unsupported Triton parameter type {t}")),
    })
}

/// The signature (natural layout) of a parameter list.
fn signature(params: &[Value]) -> Res<Vec<Value>> {
    let mut off = 0u32;
    let mut sig = Vec::new();
    for p in params {
        let ty = p["type"].as_str().ok_or("param without type")?;
        let (kind, size) = arg_kind(ty)?;
        off = off.div_ceil(size) * size;
        sig.push(json!({"kind": kind, "size": size, "offset": off,
            "name": p["name"].as_str().ok_or("param without name")?}));
        off += size;
    }
    Ok(sig)
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// A subset of the Triton set: architectures and families (`engines/kernels/triton/<f>.py`);
/// an empty list selects every one.
#[derive(Debug, Default, Clone)]
pub struct Selection {
    /// Architectures (of [`TRITON_ARCHES`]).
    pub arches: Vec<String>,
    /// Family module names (`matmul`, `sdpa_fwd`, ...).
    pub families: Vec<String>,
}

impl Selection {
    /// True when nothing is left out.
    pub fn is_all(&self) -> bool {
        self.arches.is_empty() && self.families.is_empty()
    }
    fn has_arch(&self, arch: &str) -> bool {
        self.arches.is_empty() || self.arches.iter().any(|a| a == arch)
    }
}

/// Builds the Triton set (or the `sel` subset of it) into `out/<arch>/` (archive +
/// `triton.json`).
pub fn build(root: &Path, scratch: &Path, out: &Path, sel: &Selection) -> Res<usize> {
    if let Some(a) = sel
        .arches
        .iter()
        .find(|a| !TRITON_ARCHES.contains(&a.as_str()))
    {
        return Err(format!(
            "--arch {a}: not a Triton target (one of {})",
            TRITON_ARCHES.join(", ")
        ));
    }
    let py = ensure_venv(root)?;
    let src_dir = root.join("engines/kernels/triton");
    let build_dir = scratch.join("triton-build");
    let cache = scratch.join("triton-cache");
    let _ = std::fs::remove_dir_all(&build_dir);
    let _ = std::fs::remove_dir_all(&cache);
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .to_string();
    let t0 = std::time::Instant::now();
    let mut cmd = Command::new(&py);
    cmd.arg(src_dir.join("build.py"))
        .arg(&build_dir)
        .args(["--jobs", &jobs])
        .args(sel.arches.iter().flat_map(|a| ["--arch", a.as_str()]))
        .args(sel.families.iter().flat_map(|f| ["--family", f.as_str()]))
        .env("TRITON_CACHE_DIR", &cache)
        .env("TRITON_DEFAULT_FP_FUSION", "1")
        // Line info would embed the checkout's absolute source path in every code object, so
        // a clone in another folder (as CI uses) would rebuild different bytes.
        .env("TRITON_DISABLE_LINE_INFO", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0");
    run(&mut cmd)?;
    eprintln!("triton: compiled in {:.0} s", t0.elapsed().as_secs_f64());
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(build_dir.join("manifest.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let entries = manifest.as_array().ok_or("manifest is not an array")?;
    // Provenance: SHA-256 of every source file.
    let mut sources = serde_json::Map::new();
    let mut names: Vec<_> = std::fs::read_dir(&src_dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py"))
        .collect();
    names.sort();
    for n in names {
        let b = std::fs::read(src_dir.join(&n)).map_err(|e| e.to_string())?;
        sources.insert(n, json!(sha256_hex(&b)));
    }
    let mut total = 0;
    for &arch in TRITON_ARCHES.iter().filter(|a| sel.has_arch(a)) {
        let mut recs: Vec<&Value> = entries
            .iter()
            .filter(|r| r["arch"].as_str() == Some(arch))
            .collect();
        recs.sort_by_key(|r| order_key(r));
        let mut w = KpackWriter::new(
            GROUP,
            arch,
            vec![arch.to_string()],
            CompressionScheme::ZstdPerKernel,
        );
        let mut kernels = Vec::new();
        for r in recs {
            let file = r["file"].as_str().ok_or("entry without file")?;
            let bytes = std::fs::read(build_dir.join(file)).map_err(|e| e.to_string())?;
            let payload = r["payload"].as_str().ok_or("entry without payload")?;
            let hash = sha256_hex(&bytes);
            let name = descriptor_name(r)?;
            let toc_key = format!("{name}-{}", &hash[..16]);
            w.add_kernel(&toc_key, arch, payload, bytes, None)
                .map_err(|e| e.to_string())?;
            let params = r["params"].as_array().ok_or("entry without params")?;
            let mut e = r.clone();
            let o = e.as_object_mut().ok_or("entry is not an object")?;
            o.remove("file");
            o.remove("arch");
            o.insert("name".into(), json!(name));
            o.insert(
                "kernel_source".into(),
                json!({"kind": "kpack", "library": archive_name(arch), "toc_key": toc_key,
                    "symbol": r["symbol"], "sha256": hash, "signature": signature(params)?}),
            );
            kernels.push(e);
        }
        total += kernels.len();
        let dir = out.join(arch);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        w.write_to(dir.join(archive_name(arch)))
            .map_err(|e| e.to_string())?;
        let doc = json!({
            "format": "hipdnn-rs triton kernel descriptors 1 (engines/kernels/README.md)",
            "arch": arch,
            "provenance": {"triton": TRITON_VERSION, "env": {"TRITON_DEFAULT_FP_FUSION": "1"},
                "sources": sources},
            "kernels": kernels,
        });
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        text.push('\n');
        std::fs::write(dir.join("triton.json"), text).map_err(|e| e.to_string())?;
    }
    Ok(total)
}

/// Static-rule order of entries within an arch: family, dtype, spec (channels-last) and matmul's
/// column-major-B `bcol` (never both applicable to one graph), then
/// conv fprop's transposing channels-first `nchwt`, then its in-place `nchw`, then generic; larger
/// tiles first (the contract takes the first applicable entry; see the matmul pack docs).
fn order_key(r: &Value) -> (String, String, u8, std::cmp::Reverse<u64>, String) {
    let b = &r["block"];
    let tile = b["m"].as_u64().unwrap_or(0) * b["n"].as_u64().unwrap_or(0);
    (
        r["family"].as_str().unwrap_or_default().to_string(),
        r["dtype"].as_str().unwrap_or_default().to_string(),
        match r["variant"].as_str() {
            Some("spec" | "bcol") => 0,
            Some("nchwt") => 1,
            Some("generic") => 3,
            _ => 2,
        },
        std::cmp::Reverse(tile),
        r["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// `<family>_<dtype>_<variant>_<bm>x<bn>x<bk>_g<g>_w<warps>_s<stages>_sh<shared>_ws<warp size>`:
/// the config the launch contract parses from a descriptor's name.
fn descriptor_name(r: &Value) -> Res<String> {
    let b = &r["block"];
    let g = |v: &Value, what: &str| v.as_u64().ok_or(format!("entry without {what}"));
    Ok(format!(
        "{}_{}_{}_{}x{}x{}_g{}_w{}_s{}_sh{}_ws{}",
        r["family"].as_str().ok_or("no family")?,
        r["dtype"].as_str().ok_or("no dtype")?,
        r["variant"].as_str().ok_or("no variant")?,
        g(&b["m"], "block.m")?,
        g(&b["n"], "block.n")?,
        g(&b["k"], "block.k")?,
        g(&b["group_m"], "block.group_m")?,
        g(&r["num_warps"], "num_warps")?,
        g(&r["num_stages"], "num_stages")?,
        g(&r["shared_bytes"], "shared_bytes")?,
        g(&r["warp_size"], "warp_size")?,
    ))
}

/// Compares the Triton files of two packed trees; returns the differing paths.
pub fn compare(a: &Path, b: &Path) -> Vec<String> {
    let mut diffs = Vec::new();
    for &arch in TRITON_ARCHES {
        for f in ["triton.json".to_string(), archive_name(arch)] {
            let (pa, pb) = (a.join(arch).join(&f), b.join(arch).join(&f));
            match (std::fs::read(&pa), std::fs::read(&pb)) {
                (Ok(x), Ok(y)) if x == y => {}
                _ => diffs.push(format!("{arch}/{f}")),
            }
        }
    }
    diffs
}
