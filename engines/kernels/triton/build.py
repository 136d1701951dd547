"""Ahead-of-time Triton build for `cargo run -p xtask -- pack-kernels` (gpu-toolchain.md §12).

Usage: python build.py OUT_DIR [--arch A]... [--family F]... [--only ARCH/NAME]...
                      [--only-file PATH] [--jobs N] [--list]

Compiles every family module of this folder (matmul.py, conv_fprop.py, ...: `families()`) for every target x
dtype x variant x config and writes OUT_DIR/<arch>/<name>.<cubin|hsaco> plus
OUT_DIR/manifest.json (one record per entry: the kernel descriptor fields xtask packs).
`--only-file PATH` reads more ARCH/NAME lines from PATH (xtask's sampled check passes its
sample this way); `--list` compiles nothing and prints the selected entries as a JSON array of
{"family", "arch", "name"} on stdout.
Deterministic: the caller gives a fresh TRITON_CACHE_DIR and TRITON_DEFAULT_FP_FUSION; entries
are sorted. Runs on a machine without a GPU; nothing at run time needs Python.
"""
import importlib
import json
import multiprocessing
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TARGETS = [("gfx90a", "hip", "gfx90a", 64), ("gfx942", "hip", "gfx942", 64),
           ("gfx950", "hip", "gfx950", 64), ("sm_80", "cuda", 80, 32), ("sm_90", "cuda", 90, 32)]


def families():
    """The family modules: every module of this folder that declares `DTYPES` and `configs`
    (build.py, the `interpret_*.py` checks and shared helpers such as epilogue.py are not), by
    name. A new family is a new module here; nothing in this file names it."""
    out = []
    for f in sorted(os.listdir(HERE)):
        if not f.endswith(".py") or f == "build.py" or f.startswith("interpret_"):
            continue
        mod = importlib.import_module(f[:-3])
        if hasattr(mod, "DTYPES") and hasattr(mod, "configs"):
            out.append(f[:-3])
    return out


def entries(arches, families):
    out = []
    for fam in families:
        mod = importlib.import_module(fam)
        for arch, vendor, _, _ in TARGETS:
            # SKIP_ARCHES: targets a family is not packed for (e.g. where Triton compiles it
            # nondeterministically, which the byte-compare in CI would reject).
            if arch not in arches or arch in getattr(mod, "SKIP_ARCHES", ()):
                continue
            for dtype in mod.DTYPES:
                for variant, cfgs in mod.configs(vendor, dtype).items():
                    for cfg in cfgs:
                        bm, bn, bk, g, w, s = cfg
                        name = f"{fam}_{dtype}_{variant}_{bm}x{bn}x{bk}_g{g}_w{w}_s{s}"
                        out.append((fam, arch, dtype, variant, cfg, name))
    return out


def compile_one(job):
    fam, arch, dtype, variant, cfg, name = job
    import triton
    from triton.backends.compiler import GPUTarget
    mod = importlib.import_module(fam)
    tgt = next(t for t in TARGETS if t[0] == arch)
    kernel = mod.kernel_for(variant) if hasattr(mod, "kernel_for") else mod.KERNEL
    bm, bn, bk, g, w, s = cfg
    ty = mod.DTYPES[dtype]
    signature, constexprs = {}, {}
    hints = getattr(mod, "HINTS", {"spec": (mod.SPEC_DIV16, mod.SPEC_ONE)})
    div16, ones = hints.get(variant, ([], []))
    for a in kernel.arg_names:
        if a in mod.POINTERS:
            signature[a] = "*" + (mod.pointer_type(a, ty) if hasattr(mod, "pointer_type") else ty)
        elif a in ones:
            signature[a] = "constexpr"
            constexprs[a] = 1
        elif a in mod.INTS:
            signature[a] = "i32"
        elif a in getattr(mod, "FLOATS", []):
            signature[a] = "fp32"
        else:
            signature[a] = "constexpr"
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}
    # A family without a K tile or grouped ordering (norm_fwd) names only what it takes.
    meta = {k: v for k, v in meta.items() if k in kernel.arg_names}
    meta.update(mod.extra_constexprs(dtype) if hasattr(mod, "extra_constexprs") else {})
    if "INPUT_PRECISION" in kernel.arg_names:
        # f32: IEEE products; tf32: TF32 tensor-core products (entries only where the family
        # lists them: CUDA); f16/bf16 ignore it.
        meta["INPUT_PRECISION"] = "ieee" if dtype == "f32" or tgt[1] == "hip" else "tf32"
    constexprs.update(meta)
    idx = {a: i for i, a in enumerate(kernel.arg_names)}
    attrs = {(idx[a],): [["tt.divisibility", 16]] for a in div16}
    src = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs,
                                    attrs=attrs)
    target = GPUTarget(tgt[1], tgt[2], tgt[3])
    # OPTIONS: a family's extra compile options (pointwise_fused: no FP contraction).
    options = {"num_warps": w, "num_stages": s, **getattr(mod, "OPTIONS", {})}
    ccinfo = triton.compile(src, target=target, options=options)
    md = ccinfo.metadata
    payload = "cubin" if tgt[1] == "cuda" else "hsaco"
    blob = ccinfo.asm[payload]
    params = [{"name": a, "type": signature[a]} for a in kernel.arg_names
              if signature[a] != "constexpr"]
    params += [{"name": "global_scratch", "type": "*i8"}, {"name": "profile_scratch", "type": "*i8"}]
    rec = {
        "family": fam, "arch": arch, "name": name, "symbol": md.name, "dtype": dtype,
        "variant": variant, "payload": payload,
        "block": {"m": bm, "n": bn, "k": bk, "group_m": g},
        "params": params,
        "constexprs": {k: v for k, v in sorted(constexprs.items())},
        "divisibility_16": sorted(div16),
        "num_warps": md.num_warps, "num_stages": md.num_stages, "shared_bytes": md.shared,
        "global_scratch_size": getattr(md, "global_scratch_size", 0),
        "global_scratch_align": getattr(md, "global_scratch_align", 1),
        "profile_scratch_size": getattr(md, "profile_scratch_size", 0),
        "warp_size": tgt[3], "triton_version": triton.__version__,
    }
    return rec, blob


def main():
    args = sys.argv[1:]
    out = args[0]
    arches = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--arch"] or [t[0] for t in TARGETS]
    fams = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--family"] or families()
    only = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--only"]
    for path in [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--only-file"]:
        with open(path) as f:
            only += [line.strip() for line in f if line.strip()]
    jobs = int(next((args[i + 1] for i, a in enumerate(args) if a == "--jobs"), "2"))
    fams = [f for f in fams if os.path.exists(os.path.join(HERE, f + ".py"))]
    listed = entries(arches, fams)
    if "--list" in args:
        json.dump([{"family": e[0], "arch": e[1], "name": e[5]} for e in listed], sys.stdout)
        return
    # An --only or --only-file selection, even an empty one, compiles just what it names.
    selected = "--only" in args or "--only-file" in args
    wanted = set(only)
    todo = [e for e in listed if not selected or f"{e[1]}/{e[5]}" in wanted]
    # One forked process per entry (maxtasksperchild=1), forked from this process, which
    # imports Triton but compiles nothing: Triton 3.9's AMD code generator keeps state from
    # one compile to the next in a process (gfx942 sdpa_fwd_f16_spec_128x32x128 builds other
    # bytes when sdpa_fwd_f16_spec_128x64x32 was compiled before it in the same worker), and
    # a shared worker's sequence of entries depends on timing, so reused workers made the
    # archives depend on scheduling. A fresh process per entry makes every code object a
    # function of its own entry only.
    # Work that holds no compile state is done once here and inherited by every fork: the
    # family modules and Triton's code generator imported, and Triton's own cache key (a
    # SHA-256 over its installed files, lru-cached; ~0.6 s a process otherwise).
    import triton.compiler.code_generator  # noqa: F401
    from triton.runtime.cache import triton_key
    triton_key()
    for fam in fams:
        importlib.import_module(fam)
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=1) as pool:
        results = pool.map(compile_one, todo, chunksize=1)
    manifest = []
    for rec, blob in results:
        d = os.path.join(out, rec["arch"])
        os.makedirs(d, exist_ok=True)
        fname = f"{rec['name']}.{rec['payload']}"
        with open(os.path.join(d, fname), "wb") as f:
            f.write(blob)
        rec["file"] = f"{rec['arch']}/{fname}"
        manifest.append(rec)
        print(f"built {rec['file']} ({len(blob)} bytes, shared {rec['shared_bytes']})", file=sys.stderr)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
