//! `cargo run -p xtask -- install --prefix P [--debug] [--no-build]`: installs the C ABI and
//! the GPU kernels under a prefix, in the layout the runtime looks for (see
//! `hipdnn_engines::kernel_location`):
//!
//! | path | what |
//! |---|---|
//! | `P/lib/libhipdnn_backend.so.<version>` | the library (`cargo build --release -p hipdnn-capi`, or the debug build with `--debug`) |
//! | `P/lib/libhipdnn_backend.so.<major>`, `P/lib/libhipdnn_backend.so` | symlinks (soname, link name) |
//! | `P/include/hipdnn_backend.h` | the header |
//! | `P/lib/pkgconfig/hipdnn_backend.pc` | `capi/hipdnn_backend.pc.in` with `@PREFIX@` and `@VERSION@` filled in |
//! | `P/lib/hipdnn/kernels/<arch>/` | the packed kernels of `engines/kernels/packed/<arch>/` |
//!
//! `--no-build` installs the library already built in the target directory. The prefix is made
//! absolute (the `.pc` file names it).

use super::Res;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `install` was asked to do.
#[derive(Debug)]
pub struct InstallOptions {
    /// The prefix (`P`).
    pub prefix: PathBuf,
    /// Install the debug build instead of the release build.
    pub debug: bool,
    /// Do not run `cargo build` first.
    pub no_build: bool,
}

impl InstallOptions {
    /// Parses the arguments after `install`.
    ///
    /// # Errors
    /// A usage message for an unknown flag or a missing `--prefix`.
    pub fn parse(args: &[String]) -> Res<Self> {
        let mut prefix = None;
        let (mut debug, mut no_build) = (false, false);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--prefix" => {
                    prefix = Some(PathBuf::from(
                        it.next().ok_or("--prefix needs a directory")?,
                    ))
                }
                "--debug" => debug = true,
                "--no-build" => no_build = true,
                other => return Err(format!("install: unknown argument {other}\n{USAGE}")),
            }
        }
        let prefix = prefix.ok_or_else(|| format!("install: --prefix is required\n{USAGE}"))?;
        Ok(Self {
            prefix,
            debug,
            no_build,
        })
    }
}

/// The usage line of `install`.
pub const USAGE: &str = "usage: cargo run -p xtask -- install --prefix P [--debug] [--no-build]";

fn io(what: &str, p: &Path, e: std::io::Error) -> String {
    format!("cannot {what} {}: {e}", p.display())
}

fn copy(from: &Path, to: &Path) -> Res<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
    }
    // Replace rather than overwrite: a running program may have the old file mapped.
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).map_err(|e| io(&format!("copy {} to", from.display()), to, e))?;
    Ok(())
}

fn symlink(target: &str, link: &Path) -> Res<()> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).map_err(|e| io("create the symlink", link, e))
}

/// Runs the install (module docs); prints each installed path.
///
/// # Errors
/// The failed step: the cargo build, a missing input, or the file operation with its path.
pub fn install(root: &Path, opts: &InstallOptions) -> Res<()> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let prefix = cwd.join(&opts.prefix);
    let profile = if opts.debug { "debug" } else { "release" };
    if !opts.no_build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "hipdnn-capi", "--lib"])
            .current_dir(root);
        if !opts.debug {
            cmd.arg("--release");
        }
        eprintln!(
            "install: cargo build -p hipdnn-capi --lib{}",
            if opts.debug { "" } else { " --release" }
        );
        let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err(format!("cargo build -p hipdnn-capi failed ({status})"));
        }
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|t| root.join(t))
        .unwrap_or_else(|| root.join("target"));
    let built = target.join(profile).join("libhipdnn_backend.so");
    if !built.is_file() {
        return Err(format!(
            "{} does not exist: build it (drop --no-build) or pass --debug for the debug build",
            built.display()
        ));
    }
    let version = env!("CARGO_PKG_VERSION"); // the workspace version, shared with hipdnn-capi
    let major = version.split('.').next().unwrap_or(version);
    let lib = prefix.join("lib");
    let real = format!("libhipdnn_backend.so.{version}");
    let soname = format!("libhipdnn_backend.so.{major}");
    copy(&built, &lib.join(&real))?;
    symlink(&real, &lib.join(&soname))?;
    symlink(&soname, &lib.join("libhipdnn_backend.so"))?;
    copy(
        &root.join("capi/include/hipdnn_backend.h"),
        &prefix.join("include/hipdnn_backend.h"),
    )?;
    let template_path = root.join("capi/hipdnn_backend.pc.in");
    let template =
        std::fs::read_to_string(&template_path).map_err(|e| io("read", &template_path, e))?;
    let prefix_text = prefix.to_str().ok_or_else(|| {
        format!(
            "the prefix {} is not UTF-8, which a .pc file cannot name",
            prefix.display()
        )
    })?;
    let pc: String = template
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            l.replace("@PREFIX@", prefix_text)
                .replace("@VERSION@", version)
                + "\n"
        })
        .collect();
    let pc_path = prefix.join("lib/pkgconfig/hipdnn_backend.pc");
    std::fs::create_dir_all(lib.join("pkgconfig"))
        .map_err(|e| io("create", &lib.join("pkgconfig"), e))?;
    std::fs::write(&pc_path, pc).map_err(|e| io("write", &pc_path, e))?;
    let packed = root.join("engines/kernels/packed");
    let kernels = lib.join("hipdnn/kernels");
    let mut archs = Vec::new();
    for arch in std::fs::read_dir(&packed).map_err(|e| io("list", &packed, e))? {
        let arch = arch.map_err(|e| io("list", &packed, e))?;
        if !arch.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(arch.path()).map_err(|e| io("list", &arch.path(), e))? {
            let f = f.map_err(|e| io("list", &arch.path(), e))?;
            copy(
                &f.path(),
                &kernels.join(arch.file_name()).join(f.file_name()),
            )?;
        }
        archs.push(arch.file_name().to_string_lossy().into_owned());
    }
    archs.sort();
    if archs.is_empty() {
        return Err(format!("no packed kernels in {}", packed.display()));
    }
    println!("installed {} ({profile} build)", lib.join(&real).display());
    println!(
        "installed {}",
        prefix.join("include/hipdnn_backend.h").display()
    );
    println!("installed {}", pc_path.display());
    println!("installed {} ({})", kernels.display(), archs.join(", "));
    Ok(())
}
