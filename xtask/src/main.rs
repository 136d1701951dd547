//! `cargo run -p xtask -- pack-kernels [--check] [--only clang|triton] [--sample N]`, and
//! `cargo run -p xtask -- install --prefix P` ([`install`]: the C ABI, its header and
//! pkg-config file, and the packed kernels under a prefix).
//!
//! (`cargo run -p xtask -- module-cycles <src-dir>` prints a crate's module import cycles:
//! [`modcycles`].)
//!
//! Two kernel sets: the clang-built CUDA/HIP sources below, and the Triton ahead-of-time
//! kernels of `engines/kernels/triton/` ([`triton`]; `--only triton` builds just those, which
//! needs no clang). Without `--only` both are built (clang first).
//!
//! Builds the portable kernel sources in `engines/kernels/` and writes, per architecture shard,
//! a kpack archive and kernel descriptors under `engines/kernels/packed/<arch>/`:
//!
//! | arch | compiler | payload |
//! |---|---|---|
//! | gfx90a, gfx942 | Debian clang-19 (`-x hip`, COV5, `--no-gpu-bundle-output`, fixed `-cuid=hipdnn` so the `__hip_cuid_*` symbol is reproducible) | HSACO |
//! | gfx950 | Debian clang-22 with `-mcode-object-version=5` | HSACO |
//! | sm_80, sm_90 | clang-19 `-x cuda --cuda-feature=+ptx78` | PTX, and a cubin assembled by `ptxas` (PyPI `nvidia-cuda-nvcc-cu12`) |
//!
//! Each shard directory holds `hipdnn_kernels-<arch>.kpack` (zstd-per-kernel, deterministic
//! writer of `hipdnn_kpack`) and `kernels.json` (descriptors; on NVIDIA these point at
//! the cubin entries and `kernels-ptx.json` at the PTX fallback entries). Output has no
//! timestamps and a fixed order; compiler versions are recorded in each descriptor file's
//! `provenance`.
//!
//! A product whose compiler is missing here (clang-22, ptxas) is carried over from the committed
//! archive unchanged (reported on stderr), so CI without those tools still rebuilds and
//! compares everything it can.
//!
//! `--check`: build into a scratch directory, compare every file byte for byte with the
//! committed ones (any difference fails), then verify each committed code object structurally:
//! HSACO via `llvm-readelf-19` (AMDGPU HSA ELF, ABI version 3, `e_flags` of the arch, kernel
//! symbol and `<symbol>.kd`, metadata target, explicit arguments equal to the descriptor
//! signature); PTX `.version 7.8`, `.target` and `.visible .entry`; cubin ELF machine EM_CUDA;
//! SHA-256 of every entry equal to its descriptor.
//!
//! `--sample N` (Triton set): compile one entry in N of each (family, arch) group, every entry
//! of a family whose source changed since the committed pack, and every entry the committed
//! archives lack; take the others' code objects and records from the committed archives
//! ([`triton::Sample`]). The rotation is `HIPDNN_TRITON_SAMPLE_ROTATION`, else the commit
//! count of `HEAD` (`git rev-list --count HEAD`), so N consecutive commits compile the whole
//! set. With `--check` this is CI's check (the whole set is packed and compared byte for byte,
//! a sampled entry that compiles to other bytes is named); without it, a quick repack after
//! editing one family.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod install;
mod modcycles;
mod triton;

use hipdnn_kpack::{CompressionScheme, KpackArchive, KpackWriter};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

type Res<T> = Result<T, String>;
/// Explicit kernel arguments: (value_kind, size, offset).
type Sig = Vec<(String, u32, u32)>;
/// Kernel symbol → signature.
type SigMap = BTreeMap<String, Sig>;
/// A verified entry: bytes, `readelf -h`, `readelf --dyn-syms`, metadata signatures.
type Entry = (Vec<u8>, String, String, SigMap);

/// Kernel sources, in archive order: (family, file name).
const SOURCES: &[(&str, &str)] = &[("conv_fwd", "conv_fwd.cu"), ("pointwise", "pointwise.cu")];
const HEADER: &str = "hipdnn_device.h";
const GROUP: &str = "hipdnn_kernels";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Vendor {
    Amd,
    Nvidia,
}

/// Architecture shards, in output order.
const ARCHES: &[(&str, Vendor)] = &[
    ("gfx90a", Vendor::Amd),
    ("gfx942", Vendor::Amd),
    ("gfx950", Vendor::Amd),
    ("sm_80", Vendor::Nvidia),
    ("sm_90", Vendor::Nvidia),
];

/// Expected ELF `e_flags` (xnack/sramecc "any", gpu-toolchain.md §2).
fn amd_e_flags(arch: &str) -> u32 {
    match arch {
        "gfx90a" => 0x53F,
        "gfx942" => 0x54C,
        "gfx950" => 0x54F,
        _ => 0,
    }
}

const HIP_FLAGS: &[&str] = &[
    "-x",
    "hip",
    "-cuid=hipdnn",
    "-nogpulib",
    "-nogpuinc",
    "--cuda-device-only",
    "--no-gpu-bundle-output",
    "-O3",
];
const CUDA_FLAGS: &[&str] = &[
    "-x",
    "cuda",
    "--cuda-feature=+ptx78",
    "--cuda-device-only",
    "-nocudainc",
    "-nocudalib",
    "-O3",
    "-S",
];

struct Tools {
    clang19: String,
    clang22: Option<String>,
    ptxas: Option<PathBuf>,
    readelf: String,
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

fn first_line_version(tool: &str) -> Res<String> {
    let v = run(Command::new(tool).arg("--version"))?;
    Ok(v.lines().next().unwrap_or_default().trim().to_string())
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let py = "import os, nvidia.cuda_nvcc as m; print(os.path.join(list(m.__path__)[0], 'bin', 'ptxas'))";
    let p = run(Command::new("python3").args(["-c", py])).ok()?;
    let p = PathBuf::from(p.trim());
    p.exists().then_some(p)
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// One built product of one source for one arch.
struct Product {
    family: &'static str,
    /// `hsaco`, `ptx` or `cubin`.
    kind: &'static str,
    toc_key: String,
    bytes: Vec<u8>,
}

/// The content address of (sources, build): `<family>-<kind>-<16 hex>`.
fn toc_key(family: &str, kind: &str, source: &[u8], header: &[u8], flags: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"hipdnn-rs kernel build v1\0");
    h.update(kind.as_bytes());
    h.update(b"\0");
    h.update(flags.join(" ").as_bytes());
    h.update(b"\0");
    h.update((header.len() as u64).to_le_bytes());
    h.update(header);
    h.update(source);
    format!("{family}-{kind}-{}", &hex::encode(h.finalize())[..16])
}

/// AMDGPU metadata per kernel: name → explicit args (kind, size, offset), hidden args dropped.
fn hsaco_metadata(readelf: &str, path: &Path) -> Res<(String, SigMap)> {
    let notes = run(Command::new(readelf).arg("--notes").arg(path))?;
    let mut target = String::new();
    let mut kernels = BTreeMap::new();
    let mut args: Vec<(String, u32, u32)> = Vec::new();
    let mut cur: Option<(String, u32, u32)> = None;
    let mut in_args = false;
    let mut name: Option<String> = None;
    let flush_kernel = |name: &mut Option<String>,
                        args: &mut Vec<(String, u32, u32)>,
                        kernels: &mut BTreeMap<_, _>| {
        if let Some(n) = name.take() {
            kernels.insert(n, std::mem::take(args));
        }
    };
    for line in notes.lines() {
        if let Some(t) = line.strip_prefix("amdhsa.target:") {
            target = t.trim().trim_matches('\'').to_string();
        }
        if line.starts_with("  - ") {
            // a new kernel entry
            if let Some(a) = cur.take() {
                args.push(a);
            }
            flush_kernel(&mut name, &mut args, &mut kernels);
            args.clear();
            in_args = line.trim_start_matches("  - ").starts_with(".args:");
            continue;
        }
        if line.starts_with("    .") {
            if let Some(a) = cur.take() {
                args.push(a);
            }
            in_args = line.trim() == ".args:";
            if let Some(n) = line.trim().strip_prefix(".name:") {
                name = Some(n.trim().to_string());
            }
            continue;
        }
        if in_args {
            let t = line.trim().trim_start_matches("- ");
            if line.trim_start().starts_with("- ") {
                if let Some(a) = cur.take() {
                    args.push(a);
                }
                cur = Some((String::new(), 0, 0));
            }
            if let Some(a) = cur.as_mut() {
                if let Some(v) = t.strip_prefix(".offset:") {
                    a.2 = v.trim().parse().map_err(|e| format!("offset {v}: {e}"))?;
                } else if let Some(v) = t.strip_prefix(".size:") {
                    a.1 = v.trim().parse().map_err(|e| format!("size {v}: {e}"))?;
                } else if let Some(v) = t.strip_prefix(".value_kind:") {
                    a.0 = v.trim().to_string();
                }
            }
        }
    }
    if let Some(a) = cur.take() {
        args.push(a);
    }
    flush_kernel(&mut name, &mut args, &mut kernels);
    let kernels = kernels
        .into_iter()
        .map(|(k, v): (String, Vec<(String, u32, u32)>)| {
            (
                k,
                v.into_iter()
                    .filter(|a| !a.0.starts_with("hidden_"))
                    .collect(),
            )
        })
        .collect();
    Ok((target, kernels))
}

/// PTX entries: name → parameter sizes in bytes, in order.
fn ptx_entries(ptx: &str) -> BTreeMap<String, Vec<u32>> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, Vec<u32>)> = None;
    for line in ptx.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix(".visible .entry ") {
            let name = rest
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            cur = Some((name, Vec::new()));
            if !rest.contains(")") {
                continue;
            }
        }
        if let Some((_, params)) = cur.as_mut() {
            if let Some(p) = l.strip_prefix(".param ") {
                let size = if p.starts_with(".u64")
                    || p.starts_with(".b64")
                    || p.starts_with(".s64")
                    || p.starts_with(".f64")
                {
                    8
                } else {
                    4
                };
                params.push(size);
            }
            if l.starts_with(')') {
                let (n, p) = cur.take().unwrap_or_default();
                out.insert(n, p);
            }
        }
    }
    out
}

fn describe(symbol: &str) -> Value {
    let rest = symbol.strip_prefix("hipdnn_").unwrap_or(symbol);
    let (stem, dtype) = rest.rsplit_once('_').unwrap_or((rest, ""));
    if let Some(op) = stem.strip_prefix("pw_") {
        let binary = matches!(op, "add" | "sub" | "mul" | "div" | "max" | "min");
        json!({"family": "pointwise", "op": op, "dtype": dtype, "arity": if binary { 2 } else { 1 },
               "launch": {"block": "any (256 suggested)", "grid": "ceil(d0*d1*d2*d3*d4 / block)", "dynamic_shared_bytes": 0}})
    } else if stem == "conv_fwd_v1" {
        json!({"family": "conv_fwd", "contract": "hipkernel.conv_fwd.dispatch.v1", "dtype": dtype,
               "launch": {"block": "block_size", "grid": "ceil(n*k*(h-r+1)*(width-s+1) / block_size)", "dynamic_shared_bytes": 0}})
    } else {
        json!({"family": "conv_fwd", "dtype": dtype, "epilogue_bits": {"bias": 1, "relu": 2},
               "launch": {"block": "any (256 suggested)", "grid": "ceil(n*k*p*q / block)", "dynamic_shared_bytes": 0}})
    }
}

struct Ctx {
    root: PathBuf,
    tools: Tools,
    scratch: PathBuf,
    committed: PathBuf,
}

/// Builds (or carries over) every product of one arch. Returns products and provenance.
fn build_arch(cx: &Ctx, arch: &str, vendor: Vendor) -> Res<(Vec<Product>, Value)> {
    let kdir = cx.root.join("engines/kernels");
    let header = std::fs::read(kdir.join(HEADER)).map_err(|e| format!("{HEADER}: {e}"))?;
    let work = cx.scratch.join("build").join(arch);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let mut products = Vec::new();
    let mut prov = serde_json::Map::new();
    let mut src_digests = serde_json::Map::new();
    for &(family, file) in SOURCES {
        let src_path = kdir.join(file);
        let source = std::fs::read(&src_path).map_err(|e| format!("{file}: {e}"))?;
        src_digests.insert(file.into(), json!(sha256_hex(&source)));
        match vendor {
            Vendor::Amd => {
                let (clang, extra): (Option<&str>, &[&str]) = if arch == "gfx950" {
                    (cx.tools.clang22.as_deref(), &["-mcode-object-version=5"])
                } else {
                    (Some(cx.tools.clang19.as_str()), &[])
                };
                let mut flags: Vec<&str> = HIP_FLAGS.to_vec();
                flags.extend_from_slice(extra);
                let key = toc_key(family, "hsaco", &source, &header, &flags);
                let bytes = match clang {
                    Some(clang) => {
                        let out = work.join(format!("{family}.hsaco"));
                        let arch_flag = format!("--offload-arch={arch}");
                        run(Command::new(clang)
                            .args(&flags)
                            .arg(&arch_flag)
                            .arg("-o")
                            .arg(&out)
                            .arg(&src_path))?;
                        prov.insert("compiler".into(), json!(first_line_version(clang)?));
                        std::fs::read(&out).map_err(|e| e.to_string())?
                    }
                    None => carry_over(cx, arch, &key)?,
                };
                prov.insert(
                    "flags".into(),
                    json!(format!("{} --offload-arch={arch}", flags.join(" "))),
                );
                products.push(Product {
                    family,
                    kind: "hsaco",
                    toc_key: key,
                    bytes,
                });
            }
            Vendor::Nvidia => {
                let flags: Vec<&str> = CUDA_FLAGS.to_vec();
                let key = toc_key(family, "ptx", &source, &header, &flags);
                let out = work.join(format!("{family}.ptx"));
                let arch_flag = format!("--cuda-gpu-arch={arch}");
                run(Command::new(&cx.tools.clang19)
                    .args(&flags)
                    .arg(&arch_flag)
                    .arg("-o")
                    .arg(&out)
                    .arg(&src_path))?;
                prov.insert(
                    "compiler".into(),
                    json!(first_line_version(&cx.tools.clang19)?),
                );
                prov.insert(
                    "flags".into(),
                    json!(format!("{} {arch_flag}", flags.join(" "))),
                );
                let ptx = std::fs::read(&out).map_err(|e| e.to_string())?;
                let ptxas_flags = ["-O3"];
                let mut cflags = flags.clone();
                cflags.push("ptxas");
                cflags.extend_from_slice(&ptxas_flags);
                let ckey = toc_key(family, "cubin", &source, &header, &cflags);
                let cubin = match &cx.tools.ptxas {
                    Some(ptxas) => {
                        let cout = work.join(format!("{family}.cubin"));
                        run(Command::new(ptxas)
                            .args(ptxas_flags)
                            .arg(format!("-arch={arch}"))
                            .arg("-o")
                            .arg(&cout)
                            .arg(&out))?;
                        let v = run(Command::new(ptxas).arg("--version"))?;
                        prov.insert(
                            "assembler".into(),
                            json!(v.lines().last().unwrap_or_default().trim()),
                        );
                        prov.insert(
                            "assembler_flags".into(),
                            json!(format!("ptxas -O3 -arch={arch}")),
                        );
                        std::fs::read(&cout).map_err(|e| e.to_string())?
                    }
                    None => carry_over(cx, arch, &ckey)?,
                };
                products.push(Product {
                    family,
                    kind: "cubin",
                    toc_key: ckey,
                    bytes: cubin,
                });
                products.push(Product {
                    family,
                    kind: "ptx",
                    toc_key: key,
                    bytes: ptx,
                });
            }
        }
    }
    prov.insert("sources".into(), Value::Object(src_digests));
    prov.insert("header".into(), json!({HEADER: sha256_hex(&header)}));
    Ok((products, Value::Object(prov)))
}

fn archive_name(arch: &str) -> String {
    format!("{GROUP}-{arch}.kpack")
}

/// Reads `toc_key` for `arch` from the committed archive (tool missing here).
fn carry_over(cx: &Ctx, arch: &str, key: &str) -> Res<Vec<u8>> {
    let path = cx.committed.join(arch).join(archive_name(arch));
    eprintln!(
        "note: compiler for {arch} not available; carrying over {key} from {}",
        path.display()
    );
    let a = KpackArchive::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    a.get_kernel(key, arch)
        .map_err(|e| format!("{}: {key}: {e}", path.display()))
}

/// The committed provenance (when a product was carried over, its versions are kept).
fn committed_provenance(cx: &Ctx, arch: &str) -> Option<Value> {
    let text = std::fs::read_to_string(cx.committed.join(arch).join("kernels.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("provenance").cloned()
}

fn write_arch(cx: &Ctx, out_dir: &Path, arch: &str, vendor: Vendor) -> Res<()> {
    let (products, built) = build_arch(cx, arch, vendor)?;
    // Provenance in a fixed key order; versions of carried-over products come from the
    // committed descriptors.
    let old = committed_provenance(cx, arch).unwrap_or(Value::Null);
    let mut prov = serde_json::Map::new();
    for k in [
        "compiler",
        "flags",
        "assembler",
        "assembler_flags",
        "sources",
        "header",
    ] {
        if let Some(v) = built.get(k).or_else(|| old.get(k)) {
            prov.insert(k.into(), v.clone());
        }
    }
    let prov = Value::Object(prov);
    let dir = out_dir.join(arch);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut w = KpackWriter::new(
        GROUP,
        arch,
        vec![arch.to_string()],
        CompressionScheme::ZstdPerKernel,
    );
    for p in &products {
        w.add_kernel(&p.toc_key, arch, p.kind, p.bytes.clone(), None)
            .map_err(|e| e.to_string())?;
    }
    w.write_to(dir.join(archive_name(arch)))
        .map_err(|e| e.to_string())?;

    // Signatures: AMD from the code-object metadata of this arch; NVIDIA from the gfx942 build
    // of the same source (kpack.md §10), cross-checked against the PTX parameter sizes.
    let mut sigs: BTreeMap<String, Vec<(String, u32, u32)>> = BTreeMap::new();
    for p in products.iter().filter(|p| p.kind == "hsaco") {
        let f = cx.scratch.join(format!("{arch}-{}.hsaco", p.family));
        std::fs::write(&f, &p.bytes).map_err(|e| e.to_string())?;
        let (_, k) = hsaco_metadata(&cx.tools.readelf, &f)?;
        sigs.extend(k);
    }
    if vendor == Vendor::Nvidia {
        let amd = cx.scratch.join("build").join("gfx942");
        for &(family, _) in SOURCES {
            let (_, k) = hsaco_metadata(&cx.tools.readelf, &amd.join(format!("{family}.hsaco")))?;
            sigs.extend(k);
        }
    }
    let lists: &[(&str, &str)] = match vendor {
        Vendor::Amd => &[("kernels.json", "hsaco")],
        Vendor::Nvidia => &[("kernels.json", "cubin"), ("kernels-ptx.json", "ptx")],
    };
    for &(file, kind) in lists {
        let mut kernels = Vec::new();
        for p in products.iter().filter(|p| p.kind == kind) {
            let ptx_text;
            let symbols: Vec<String> = if kind == "hsaco" {
                let f = cx.scratch.join(format!("{arch}-{}.hsaco", p.family));
                hsaco_metadata(&cx.tools.readelf, &f)?
                    .1
                    .into_keys()
                    .collect()
            } else {
                let ptx = products
                    .iter()
                    .find(|q| q.kind == "ptx" && q.family == p.family)
                    .ok_or("no ptx")?;
                ptx_text = String::from_utf8_lossy(&ptx.bytes).into_owned();
                let entries = ptx_entries(&ptx_text);
                for (name, sizes) in &entries {
                    let sig = sigs
                        .get(name)
                        .ok_or_else(|| format!("{name}: no AMDGPU metadata"))?;
                    let amd_sizes: Vec<u32> = sig.iter().map(|a| a.1).collect();
                    if &amd_sizes != sizes {
                        return Err(format!(
                            "{name}: PTX parameter sizes {sizes:?} differ from the AMDGPU signature {amd_sizes:?}"
                        ));
                    }
                }
                entries.into_keys().collect()
            };
            for sym in symbols {
                let sig = sigs
                    .get(&sym)
                    .ok_or_else(|| format!("{sym}: no signature"))?;
                let mut k = describe(&sym);
                let src = json!({
                    "kind": "kpack",
                    "library": archive_name(arch),
                    "toc_key": p.toc_key,
                    "symbol": sym,
                    "sha256": sha256_hex(&p.bytes),
                    "signature": sig.iter().map(|(kind, size, offset)| json!({"kind": kind, "size": size, "offset": offset})).collect::<Vec<_>>(),
                });
                if let Some(o) = k.as_object_mut() {
                    o.insert("payload".into(), json!(kind));
                    o.insert("kernel_source".into(), src);
                }
                kernels.push((sym, k));
            }
        }
        kernels.sort_by(|a, b| a.0.cmp(&b.0));
        let doc = json!({
            "format": "hipdnn-rs kernel descriptors 0 (kernel_source as kpack.md §8)",
            "arch": arch,
            "provenance": prov,
            "kernels": kernels.into_iter().map(|(_, k)| k).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n";
        std::fs::write(dir.join(file), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Structural checks of one committed shard (see the crate docs).
fn verify_arch(cx: &Ctx, arch: &str, vendor: Vendor) -> Res<usize> {
    let dir = cx.committed.join(arch);
    let archive = KpackArchive::open(dir.join(archive_name(arch))).map_err(|e| e.to_string())?;
    let files: &[&str] = if vendor == Vendor::Amd {
        &["kernels.json"]
    } else {
        &["kernels.json", "kernels-ptx.json"]
    };
    let mut checked = 0;
    for file in files {
        let text =
            std::fs::read_to_string(dir.join(file)).map_err(|e| format!("{arch}/{file}: {e}"))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{arch}/{file}: {e}"))?;
        let kernels = doc["kernels"].as_array().ok_or("no kernels")?;
        let mut cache: BTreeMap<String, Entry> = BTreeMap::new();
        for k in kernels {
            let ks = &k["kernel_source"];
            let key = ks["toc_key"].as_str().ok_or("toc_key")?.to_string();
            let sym = ks["symbol"].as_str().ok_or("symbol")?;
            let ctx = format!("{arch}/{file}: {sym}");
            if !cache.contains_key(&key) {
                let bytes = archive
                    .get_kernel(&key, arch)
                    .map_err(|e| format!("{ctx}: {e}"))?;
                let (mut header, mut syms, mut meta) =
                    (String::new(), String::new(), BTreeMap::new());
                if bytes.starts_with(b"\x7fELF") && vendor == Vendor::Amd {
                    let f = cx.scratch.join(format!("verify-{arch}.hsaco"));
                    std::fs::write(&f, &bytes).map_err(|e| e.to_string())?;
                    header = run(Command::new(&cx.tools.readelf).arg("-h").arg(&f))?;
                    syms = run(Command::new(&cx.tools.readelf).arg("--dyn-syms").arg(&f))?;
                    let (target, m) = hsaco_metadata(&cx.tools.readelf, &f)?;
                    if target != format!("amdgcn-amd-amdhsa--{arch}") {
                        return Err(format!("{ctx}: metadata target {target}"));
                    }
                    meta = m;
                }
                cache.insert(key.clone(), (bytes, header, syms, meta));
            }
            let (bytes, header, syms, meta) = &cache[&key];
            if sha256_hex(bytes) != ks["sha256"].as_str().unwrap_or_default() {
                return Err(format!("{ctx}: sha256 differs from the descriptor"));
            }
            let sig: Vec<(String, u32, u32)> = ks["signature"]
                .as_array()
                .ok_or("signature")?
                .iter()
                .map(|a| {
                    (
                        a["kind"].as_str().unwrap_or_default().to_string(),
                        a["size"].as_u64().unwrap_or(0) as u32,
                        a["offset"].as_u64().unwrap_or(0) as u32,
                    )
                })
                .collect();
            match (vendor, k["payload"].as_str()) {
                (Vendor::Amd, Some("hsaco")) => {
                    let flags = format!("0x{:X}", amd_e_flags(arch));
                    for need in [
                        "AMDGPU - HSA",
                        "ABI Version:                       3",
                        "EM_AMDGPU",
                        flags.as_str(),
                    ] {
                        if !header.contains(need) {
                            return Err(format!("{ctx}: ELF header lacks {need:?}"));
                        }
                    }
                    let has =
                        |s: &str| syms.lines().any(|l| l.split_whitespace().last() == Some(s));
                    if !has(sym) || !has(&format!("{sym}.kd")) {
                        return Err(format!("{ctx}: symbol or {sym}.kd missing"));
                    }
                    if meta.get(sym) != Some(&sig) {
                        return Err(format!(
                            "{ctx}: metadata args {:?} differ from the descriptor signature {sig:?}",
                            meta.get(sym)
                        ));
                    }
                }
                (Vendor::Nvidia, Some("ptx")) => {
                    let t = String::from_utf8_lossy(bytes);
                    if !t.contains(".version 7.8") || !t.contains(&format!(".target {arch}")) {
                        return Err(format!("{ctx}: PTX .version/.target"));
                    }
                    let sizes: Vec<u32> = sig.iter().map(|a| a.1).collect();
                    if ptx_entries(&t).get(sym) != Some(&sizes) {
                        return Err(format!(
                            "{ctx}: PTX entry missing or parameters differ from the signature"
                        ));
                    }
                }
                (Vendor::Nvidia, Some("cubin")) => {
                    // ELF64, e_machine EM_CUDA (190) at offset 18.
                    if !bytes.starts_with(b"\x7fELF\x02")
                        || bytes.get(18..20) != Some(&190u16.to_le_bytes()[..])
                    {
                        return Err(format!("{ctx}: not a CUDA ELF"));
                    }
                }
                (_, p) => return Err(format!("{ctx}: unexpected payload {p:?}")),
            }
            checked += 1;
        }
    }
    Ok(checked)
}

fn compare_dirs(a: &Path, b: &Path) -> Res<Vec<String>> {
    let mut diffs = Vec::new();
    for &(arch, _) in ARCHES {
        for f in ["kernels.json", "kernels-ptx.json", &archive_name(arch)] {
            let (pa, pb) = (a.join(arch).join(f), b.join(arch).join(f));
            match (std::fs::read(&pa), std::fs::read(&pb)) {
                (Err(_), Err(_)) => {}
                (Ok(x), Ok(y)) if x == y => {}
                _ => diffs.push(format!("{arch}/{f}")),
            }
        }
    }
    Ok(diffs)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("module-cycles") && args.len() == 2 {
        if let Err(e) = modcycles::run(Path::new(&args[1])) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        return;
    }
    if args.first().map(String::as_str) == Some("install") {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let result = install::InstallOptions::parse(&args[1..])
            .and_then(|opts| install::install(&root, &opts));
        if let Err(e) = result {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        return;
    }
    if args.first().map(String::as_str) != Some("pack-kernels") {
        eprintln!(
            "usage: cargo run -p xtask -- pack-kernels [--check] [--only clang|triton] [--sample N] [--arch A]... [--family F]... [--out DIR]\n       cargo run -p xtask -- module-cycles <src-dir>\n       {}",
            install::USAGE
        );
        std::process::exit(2);
    }
    let check = args.iter().any(|a| a == "--check");
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str);
    let values = |flag: &str| -> Vec<String> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect()
    };
    let sel = triton::Selection {
        arches: values("--arch"),
        families: values("--family"),
    };
    let out = values("--out").pop().map(PathBuf::from);
    let sample = match values("--sample").pop().map(|n| n.parse::<usize>()) {
        None => Ok(None),
        Some(Ok(every)) if every >= 1 => Ok(Some(triton::Sample {
            every,
            rotation: sample_rotation(),
        })),
        Some(_) => Err("--sample takes a count of 1 or more".to_string()),
    };
    let result = if let Err(e) = &sample {
        Err(e.clone())
    } else if sample.as_ref().is_ok_and(|s| s.is_some())
        && (only != Some("triton") || !sel.is_all() || out.is_some())
    {
        Err("--sample applies to the whole Triton set: use it with --only triton, without --arch/--family/--out".to_string())
    } else if check && (!sel.is_all() || out.is_some()) {
        Err("--check compares the whole Triton set with the committed tree; drop --arch/--family/--out".to_string())
    } else if !sel.is_all() && out.is_none() {
        Err("--arch/--family build a subset of the Triton set: give --out DIR (the committed archives hold the whole set)".to_string())
    } else {
        match (only, &out) {
            (Some("triton"), Some(dir)) => pack_triton_into(dir, &sel),
            (None | Some("clang"), Some(_)) => {
                Err("--out/--arch/--family apply to the Triton set: add --only triton".to_string())
            }
            (None, None) => pack(check).and_then(|()| pack_triton(check, None)),
            (Some("clang"), None) => pack(check),
            (Some("triton"), None) => pack_triton(check, sample.clone().ok().flatten()),
            (Some(o), _) => Err(format!("--only takes clang or triton, not {o}")),
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// A subset of the Triton set (or all of it) built into `dir` (e.g. archives with extra
/// configs for a device sweep), the committed tree untouched.
fn pack_triton_into(dir: &Path, sel: &triton::Selection) -> Res<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace root")?
        .to_path_buf();
    let scratch = std::env::temp_dir().join(format!("hipdnn-pack-triton-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let result = triton::build(&root, &scratch, dir, sel, None);
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "wrote {} Triton entries into {}",
        result?.packed,
        dir.display()
    );
    Ok(())
}

/// The rotation of a sampled Triton build: `HIPDNN_TRITON_SAMPLE_ROTATION`, else the commit
/// count of `HEAD`, else 0 (no git).
fn sample_rotation() -> u64 {
    if let Some(r) = std::env::var("HIPDNN_TRITON_SAMPLE_ROTATION")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return r;
    }
    Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(0)
}

/// The Triton set (see [`triton`]): build into the committed tree, or with `check` into a
/// scratch tree compared byte for byte with the committed one; with `sample`, compiling only
/// the sample (see [`triton::Sample`]).
fn pack_triton(check: bool, sample: Option<triton::Sample>) -> Res<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace root")?
        .to_path_buf();
    let committed = root.join("engines/kernels/packed");
    let scratch = std::env::temp_dir().join(format!("hipdnn-pack-triton-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let result = (|| {
        let out = if check {
            scratch.join("out")
        } else {
            committed.clone()
        };
        let b = triton::build(&root, &scratch, &out, &triton::Selection::default(), sample)?;
        let n = b.packed;
        if check {
            let diffs = triton::compare(&out, &committed);
            if !diffs.is_empty() {
                let entries = if b.changed.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; compiled entries whose code object differs from the committed one ({}): {}",
                        b.changed.len(),
                        b.changed.join(", ")
                    )
                };
                return Err(format!(
                    "rebuilt Triton kernel archives differ from the committed ones: {}{entries}",
                    diffs.join(", ")
                ));
            }
            if sample.is_some() {
                eprintln!(
                    "Triton kernel archives reproduce byte for byte ({n} entries, {} compiled, the others as committed)",
                    b.compiled
                );
            } else {
                eprintln!("Triton kernel archives reproduce byte for byte ({n} entries)");
            }
        } else {
            eprintln!(
                "wrote {n} Triton entries ({} compiled) into {}",
                b.compiled,
                out.display()
            );
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn pack(check: bool) -> Res<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace root")?
        .to_path_buf();
    for t in ["clang++-19", "llvm-readelf-19"] {
        if !have(t) {
            return Err(format!(
                "{t} not found (apt-get install -y clang-19 lld-19 llvm-19)"
            ));
        }
    }
    let tools = Tools {
        clang19: "clang++-19".into(),
        clang22: have("clang++-22").then(|| "clang++-22".into()),
        ptxas: find_ptxas(),
        readelf: "llvm-readelf-19".into(),
    };
    let committed = root.join("engines/kernels/packed");
    let scratch = std::env::temp_dir().join(format!("hipdnn-pack-kernels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let cx = Ctx {
        root,
        tools,
        scratch: scratch.clone(),
        committed: committed.clone(),
    };
    let out = if check {
        scratch.join("out")
    } else {
        committed.clone()
    };
    let result = (|| {
        // gfx942 first: the NVIDIA signatures are read from its build.
        let mut order: Vec<(&str, Vendor)> = ARCHES.to_vec();
        order.sort_by_key(|(a, _)| *a != "gfx942");
        let staged = scratch.join("staged");
        for &(arch, vendor) in &order {
            write_arch(&cx, &staged, arch, vendor)?;
        }
        if check {
            let diffs = compare_dirs(&staged, &committed)?;
            if !diffs.is_empty() {
                return Err(format!(
                    "rebuilt kernel archives differ from the committed ones: {}",
                    diffs.join(", ")
                ));
            }
            let mut n = 0;
            for &(arch, vendor) in ARCHES {
                n += verify_arch(&cx, arch, vendor)?;
            }
            eprintln!("kernel archives reproduce byte for byte; {n} descriptor entries verified");
        } else {
            for &(arch, _) in ARCHES {
                let (from, to) = (staged.join(arch), out.join(arch));
                std::fs::create_dir_all(&to).map_err(|e| e.to_string())?;
                for e in std::fs::read_dir(&from).map_err(|e| e.to_string())? {
                    let e = e.map_err(|e| e.to_string())?;
                    std::fs::copy(e.path(), to.join(e.file_name())).map_err(|e| e.to_string())?;
                }
            }
            let mut n = 0;
            for &(arch, vendor) in ARCHES {
                n += verify_arch(&cx, arch, vendor)?;
            }
            eprintln!("wrote {}; {n} descriptor entries verified", out.display());
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
