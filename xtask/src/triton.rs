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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use hipdnn_kpack::{CompressionScheme, KpackArchive, KpackWriter};
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

/// A sampled check (`pack-kernels --only triton --check --sample N`): which entries of the
/// whole set are compiled; every other entry is taken from the committed archives as they
/// hold it (its code object and descriptor record), and the set is packed and compared with
/// the committed tree as in a full check.
///
/// Compiled: every entry of a family whose module changed since the committed archives were
/// packed (its SHA-256 differs from `provenance.sources` of the committed `triton.json`),
/// every entry when a shared module changed (`build.py`, `epilogue.py`: every `.py` that is
/// neither a family module nor an `interpret_*.py` test helper), every entry the committed
/// archives do not hold, and of the rest the entries at positions `i` with
/// `i % every == rotation % every` in each (family, arch) group sorted by name (the entry at
/// `rotation % len` of a group shorter than that). Consecutive rotations cover the whole set
/// in `every` runs.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// One entry in `every` of each group is compiled (≥ 1).
    pub every: usize,
    /// Which residue is compiled.
    pub rotation: u64,
}

impl Sample {
    /// Whether the entry at position `i` of a group of `len` (sorted by name) is compiled.
    pub fn compiles(&self, i: usize, len: usize) -> bool {
        let residue = (self.rotation % self.every.max(1) as u64) as usize;
        let pick = if len > residue {
            residue
        } else {
            residue % len.max(1)
        };
        i % self.every.max(1) == pick
    }
}

/// What a build compiled: entries packed, entries compiled, and the compiled entries whose
/// code object differs from the committed one (`arch/name`), found before the archives are
/// compared.
#[derive(Debug, Default)]
pub struct Built {
    /// Entries packed.
    pub packed: usize,
    /// Entries compiled (all of them without a sample).
    pub compiled: usize,
    /// Compiled entries whose SHA-256 differs from the committed descriptor's.
    pub changed: Vec<String>,
    /// Families compiled in full because their module (or a shared one) changed.
    pub rebuilt_families: Vec<String>,
}

/// SHA-256 of every `.py` source of `src_dir`, by file name.
fn source_hashes(src_dir: &Path) -> Res<serde_json::Map<String, Value>> {
    let mut sources = serde_json::Map::new();
    let mut names: Vec<_> = std::fs::read_dir(src_dir)
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
    Ok(sources)
}

/// A JSON value with every object's keys sorted (as Python's `json.dump(sort_keys=True)`
/// writes build.py's manifest), so a record taken from a committed descriptor packs exactly
/// as a freshly compiled one.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        v => v.clone(),
    }
}

/// A committed entry: its descriptor record and its archive.
struct Committed {
    record: Value,
    library: PathBuf,
}

/// Committed entries keyed by `(arch, descriptor name)`.
type CommittedMap = BTreeMap<(String, String), Committed>;

/// The committed entries of `packed/<arch>/triton.json`, keyed by `(arch, descriptor name)`,
/// and the committed source hashes (`None` when no committed `triton.json` exists).
fn committed_entries(packed: &Path) -> Res<(CommittedMap, Option<serde_json::Map<String, Value>>)> {
    let mut out = BTreeMap::new();
    let mut sources = None;
    for &arch in TRITON_ARCHES {
        let path = packed.join(arch).join("triton.json");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let doc: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(s) = doc["provenance"]["sources"].as_object() {
            sources = Some(s.clone());
        }
        for k in doc["kernels"].as_array().into_iter().flatten() {
            let name = k["name"].as_str().ok_or("committed entry without name")?;
            out.insert(
                (arch.to_string(), name.to_string()),
                Committed {
                    record: k.clone(),
                    library: packed.join(arch).join(archive_name(arch)),
                },
            );
        }
    }
    Ok((out, sources))
}

/// The committed entry of build entry `name` (`<family>_<dtype>_<variant>_<tile>_g_w_s`): the
/// descriptor whose name is `name` followed by `_sh<shared>_ws<warp size>`.
fn committed_of<'a>(committed: &'a CommittedMap, arch: &str, name: &str) -> Option<&'a Committed> {
    let prefix = format!("{name}_sh");
    committed
        .range((arch.to_string(), prefix.clone())..)
        .take_while(|((a, n), _)| a == arch && n.starts_with(&prefix))
        .map(|(_, c)| c)
        .next()
}

/// Builds the Triton set (or the `sel` subset of it) into `out/<arch>/` (archive +
/// `triton.json`); with `sample`, compiles only the [`Sample`]'s entries of the whole set and
/// takes the others from the committed archives under `root/engines/kernels/packed`.
pub fn build(
    root: &Path,
    scratch: &Path,
    out: &Path,
    sel: &Selection,
    sample: Option<Sample>,
) -> Res<Built> {
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
    let sources = source_hashes(&src_dir)?;
    let build_py = || {
        let mut cmd = Command::new(&py);
        cmd.arg(src_dir.join("build.py"))
            .arg(&build_dir)
            .args(["--jobs", &jobs])
            .args(sel.arches.iter().flat_map(|a| ["--arch", a.as_str()]))
            .args(sel.families.iter().flat_map(|f| ["--family", f.as_str()]))
            .env("TRITON_CACHE_DIR", &cache)
            .env("TRITON_DEFAULT_FP_FUSION", "1")
            // Line info would embed the checkout's absolute source path in every code object,
            // so a clone in another folder (as CI uses) would rebuild different bytes.
            .env("TRITON_DISABLE_LINE_INFO", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", "0");
        cmd
    };
    let mut built = Built::default();
    // With a sample: the committed entries taken as they are, (name, arch).
    let mut reused: Vec<(String, &'static str)> = Vec::new();
    // A sample needs the committed tree; any other build only compares its entries with it,
    // so a damaged committed `triton.json` does not stop the build that repairs it.
    let (committed, committed_sources) =
        match committed_entries(&root.join("engines/kernels/packed")) {
            Ok(c) => c,
            Err(e) if sample.is_none() => {
                eprintln!(
                    "note: committed Triton descriptors unreadable ({e}); entries not compared"
                );
                (BTreeMap::new(), None)
            }
            Err(e) => return Err(format!("--sample reads the committed archives: {e}")),
        };
    let t0 = std::time::Instant::now();
    if let Some(smp) = sample {
        if smp.every == 0 {
            return Err("--sample takes a count of 1 or more".to_string());
        }
        let listing: Value = serde_json::from_str(&run(build_py().arg("--list"))?)
            .map_err(|e| format!("build.py --list: {e}"))?;
        let listing = listing.as_array().ok_or("build.py --list: not an array")?;
        let families: BTreeSet<&str> = listing
            .iter()
            .filter_map(|e| e["family"].as_str())
            .collect();
        let changed =
            |file: &str| committed_sources.as_ref().and_then(|c| c.get(file)) != sources.get(file);
        let shared_changed = sources
            .keys()
            .chain(committed_sources.iter().flat_map(|c| c.keys()))
            .filter(|f| {
                !families.contains(f.trim_end_matches(".py")) && !f.starts_with("interpret_")
            })
            .any(|f| changed(f));
        built.rebuilt_families = families
            .iter()
            .filter(|f| shared_changed || changed(&format!("{f}.py")))
            .map(|f| f.to_string())
            .collect();
        let mut groups: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
        for e in listing {
            let (Some(f), Some(a), Some(n)) =
                (e["family"].as_str(), e["arch"].as_str(), e["name"].as_str())
            else {
                return Err(format!("build.py --list: malformed entry {e}"));
            };
            groups.entry((f, a)).or_default().push(n);
        }
        let mut compile = Vec::new();
        for ((fam, arch), mut names) in groups {
            names.sort_unstable();
            let full = built.rebuilt_families.iter().any(|f| f == fam);
            let arch: &'static str = TRITON_ARCHES
                .iter()
                .find(|a| **a == arch)
                .ok_or_else(|| format!("build.py --list: unknown arch {arch}"))?;
            for (i, n) in names.iter().enumerate() {
                let held = committed_of(&committed, arch, n).is_some();
                if full || !held || smp.compiles(i, names.len()) {
                    compile.push(format!("{arch}/{n}"));
                } else {
                    reused.push((n.to_string(), arch));
                }
            }
        }
        std::fs::create_dir_all(scratch).map_err(|e| e.to_string())?;
        let list = scratch.join("triton-sample.txt");
        std::fs::write(&list, compile.join("\n")).map_err(|e| e.to_string())?;
        eprintln!(
            "triton: sampled build, rotation {} of 1 in {}: compiling {} of {} entries{}",
            smp.rotation % smp.every as u64,
            smp.every,
            compile.len(),
            listing.len(),
            if built.rebuilt_families.is_empty() {
                String::new()
            } else {
                format!(
                    " (in full, sources changed since the committed pack: {})",
                    built.rebuilt_families.join(", ")
                )
            }
        );
        run(build_py().arg("--only-file").arg(&list))?;
    } else {
        run(&mut build_py())?;
    }
    eprintln!("triton: compiled in {:.0} s", t0.elapsed().as_secs_f64());
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(build_dir.join("manifest.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let mut entries = manifest
        .as_array()
        .ok_or("manifest is not an array")?
        .clone();
    built.compiled = entries.len();
    // Compiled entries whose code object differs from the committed one of the same config.
    for r in &entries {
        let (Some(arch), Some(name), Some(file)) =
            (r["arch"].as_str(), r["name"].as_str(), r["file"].as_str())
        else {
            return Err(format!("manifest entry without arch/name/file: {r}"));
        };
        if let Some(c) = committed_of(&committed, arch, name) {
            let bytes = std::fs::read(build_dir.join(file)).map_err(|e| e.to_string())?;
            if c.record["kernel_source"]["sha256"].as_str() != Some(sha256_hex(&bytes).as_str()) {
                built.changed.push(format!("{arch}/{name}"));
            }
        }
    }
    // The sample's other entries: code object and record as committed.
    let mut archives: BTreeMap<PathBuf, KpackArchive> = BTreeMap::new();
    for (name, arch) in &reused {
        let c = committed_of(&committed, arch, name).ok_or("reused entry not committed")?;
        if !archives.contains_key(&c.library) {
            let a = KpackArchive::open(&c.library)
                .map_err(|e| format!("{}: {e}", c.library.display()))?;
            archives.insert(c.library.clone(), a);
        }
        let ks = &c.record["kernel_source"];
        let key = ks["toc_key"]
            .as_str()
            .ok_or("committed entry without toc_key")?;
        let bytes = archives[&c.library]
            .get_kernel(key, arch)
            .map_err(|e| format!("{}: {key}: {e}", c.library.display()))?;
        if ks["sha256"].as_str() != Some(sha256_hex(&bytes).as_str()) {
            return Err(format!(
                "{}: {key}: the code object's SHA-256 differs from its committed descriptor",
                c.library.display()
            ));
        }
        let mut rec = c.record.clone();
        let o = rec
            .as_object_mut()
            .ok_or("committed entry is not an object")?;
        let payload = o["payload"]
            .as_str()
            .ok_or("entry without payload")?
            .to_string();
        o.remove("kernel_source");
        let file = format!("{arch}/{name}.{payload}");
        o.insert("arch".into(), json!(arch));
        o.insert("name".into(), json!(name));
        o.insert("file".into(), json!(file));
        std::fs::create_dir_all(build_dir.join(arch)).map_err(|e| e.to_string())?;
        std::fs::write(build_dir.join(&file), &bytes).map_err(|e| e.to_string())?;
        entries.push(sorted(&rec));
    }
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
        built.packed += kernels.len();
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
    Ok(built)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `every` consecutive rotations compile each entry of a long group exactly once, and one
    /// entry of every group per rotation; a group shorter than `every` is still sampled.
    #[test]
    fn sample_rotations_cover_each_group() {
        for len in [1usize, 2, 3, 5, 6, 7, 13] {
            let mut hits = vec![0; len];
            for rotation in 100..106 {
                let s = Sample { every: 6, rotation };
                let picked: Vec<usize> = (0..len).filter(|&i| s.compiles(i, len)).collect();
                assert!(
                    !picked.is_empty(),
                    "len {len} rotation {rotation}: nothing compiled"
                );
                for i in picked {
                    hits[i] += 1;
                }
            }
            assert!(hits.iter().all(|&h| h >= 1), "len {len}: {hits:?}");
            if len >= 6 {
                // Position i at the rotation of residue i % 6 only.
                assert!(hits.iter().all(|&h| h == 1), "len {len}: {hits:?}");
                assert_eq!(hits.iter().sum::<usize>(), len);
            }
        }
        let s = Sample {
            every: 4,
            rotation: 6,
        };
        let picked: Vec<usize> = (0..10).filter(|&i| s.compiles(i, 10)).collect();
        assert_eq!(picked, vec![2, 6]);
        assert_eq!(
            (0..2).filter(|&i| s.compiles(i, 2)).collect::<Vec<_>>(),
            vec![0]
        );
        let one = Sample {
            every: 1,
            rotation: 9,
        };
        assert!((0..5).all(|i| one.compiles(i, 5)));
    }

    /// Build entry names map to the committed descriptor named `<name>_sh<shared>_ws<w>`,
    /// not to a longer config sharing the prefix.
    #[test]
    fn committed_entry_of_a_build_name() {
        let mut m = BTreeMap::new();
        for n in [
            "matmul_f16_spec_128x128x32_g8_w4_s3_sh32768_ws32",
            "matmul_f16_spec_128x128x32_g8_w4_s33_sh1_ws32",
        ] {
            m.insert(
                ("sm_90".to_string(), n.to_string()),
                Committed {
                    record: json!({"name": n}),
                    library: PathBuf::new(),
                },
            );
        }
        let got = |a: &str, n: &str| committed_of(&m, a, n).map(|c| c.record["name"].clone());
        assert_eq!(
            got("sm_90", "matmul_f16_spec_128x128x32_g8_w4_s3"),
            Some(json!("matmul_f16_spec_128x128x32_g8_w4_s3_sh32768_ws32"))
        );
        assert_eq!(
            got("sm_90", "matmul_f16_spec_128x128x32_g8_w4_s33"),
            Some(json!("matmul_f16_spec_128x128x32_g8_w4_s33_sh1_ws32"))
        );
        assert_eq!(got("sm_80", "matmul_f16_spec_128x128x32_g8_w4_s3"), None);
        assert_eq!(got("sm_90", "matmul_f16_spec_128x128x32_g8_w4_s"), None);
    }

    /// Records taken from a committed descriptor get build.py's key order (sorted, at every
    /// depth), so they pack like a compiled one.
    #[test]
    fn sorted_orders_keys_at_every_depth() {
        let v: Value =
            serde_json::from_str(r#"{"b": {"z": 1, "a": [{"y": 2, "x": 3}]}, "a": 0}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&sorted(&v)).unwrap(),
            r#"{"a":0,"b":{"a":[{"x":3,"y":2}],"z":1}}"#
        );
    }
}
