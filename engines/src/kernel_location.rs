//! Where the GPU engine finds its packed kernels, decided at run time (never from the build
//! machine's source tree).
//!
//! The order, first match wins ([`resolve_kernel_location`]):
//!
//! 1. `HIPDNN_KERNEL_DIR` ([`KERNEL_DIR_ENV`]) when set: `<dir>/<arch>/kernels.json`, … (used as
//!    given, even when it does not exist: the caller asked for it).
//! 2. An install location next to the loaded code, when that directory exists:
//!    `<dir of the loaded library>/hipdnn/kernels` for the C ABI's `libhipdnn_backend.so`
//!    (it reports its own path through [`set_loaded_library`]), then
//!    `<dir of the executable>/../lib/hipdnn/kernels` ([`std::env::current_exe`]) — the layout
//!    `cargo xtask install --prefix P` writes (`P/lib/libhipdnn_backend.so`,
//!    `P/lib/hipdnn/kernels/<arch>/`, executables in `P/bin`).
//! 3. The kernels compiled into the binary: the `hipdnn-kernels-<arch>` crates, one cargo
//!    feature `kernels-<arch>` each, all on by default ([`EMBEDDED_ARCHS`]).
//!
//! [`crate::gpu::open`] logs the source it uses at INFO (`hipdnn: kernels: <source>`), before
//! it loads the GPU runtime, so the choice is visible on a machine without a GPU too.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// Environment variable naming the kernel directory (`<dir>/<arch>/kernels.json`, …); it
/// overrides every other location.
pub const KERNEL_DIR_ENV: &str = "HIPDNN_KERNEL_DIR";

/// The install location relative to the directory of the loaded library (`<prefix>/lib`).
pub const INSTALL_DIR_FROM_LIB: &str = "hipdnn/kernels";

/// The install location relative to the directory of the executable (`<prefix>/bin`).
pub const INSTALL_DIR_FROM_EXE: &str = "../lib/hipdnn/kernels";

/// The path label of the packed directory of an arch compiled into the binary
/// (`<embedded>/<arch>`); it is never opened as a file.
pub const EMBEDDED_DIR_LABEL: &str = "<embedded>";

/// The packed files of one arch compiled into the binary.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedKernels {
    /// Base architecture (`sm_90`, `gfx942`).
    pub arch: &'static str,
    /// `(file name, bytes)` of `kernels.json`, `triton.json` and the kpack archives.
    pub files: &'static [(&'static str, &'static [u8])],
}

impl EmbeddedKernels {
    /// The bytes of the file `name`, if this arch has it.
    pub fn file(&self, name: &str) -> Option<&'static [u8]> {
        self.files.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    /// The path label of this arch's packed directory: `<embedded>/<arch>`.
    pub fn dir_label(&self) -> PathBuf {
        Path::new(EMBEDDED_DIR_LABEL).join(self.arch)
    }
}

/// The archs whose packed kernels this build carries (the enabled `kernels-<arch>` features).
pub const EMBEDDED_ARCHS: &[EmbeddedKernels] = &[
    #[cfg(feature = "kernels-gfx90a")]
    EmbeddedKernels {
        arch: hipdnn_kernels_gfx90a::ARCH,
        files: hipdnn_kernels_gfx90a::FILES,
    },
    #[cfg(feature = "kernels-gfx942")]
    EmbeddedKernels {
        arch: hipdnn_kernels_gfx942::ARCH,
        files: hipdnn_kernels_gfx942::FILES,
    },
    #[cfg(feature = "kernels-gfx950")]
    EmbeddedKernels {
        arch: hipdnn_kernels_gfx950::ARCH,
        files: hipdnn_kernels_gfx950::FILES,
    },
    #[cfg(feature = "kernels-sm_80")]
    EmbeddedKernels {
        arch: hipdnn_kernels_sm_80::ARCH,
        files: hipdnn_kernels_sm_80::FILES,
    },
    #[cfg(feature = "kernels-sm_90")]
    EmbeddedKernels {
        arch: hipdnn_kernels_sm_90::ARCH,
        files: hipdnn_kernels_sm_90::FILES,
    },
];

/// The embedded kernels of `arch`, if this build carries them.
pub fn embedded_kernels(arch: &str) -> Option<&'static EmbeddedKernels> {
    EMBEDDED_ARCHS.iter().find(|e| e.arch == arch)
}

static LOADED_LIBRARY: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Records the path of the loaded shared library that holds this engine (the C ABI's
/// `libhipdnn_backend.so` calls it with the path the dynamic loader reports), so that
/// `<its directory>/hipdnn/kernels` is an install location ([`resolve_kernel_location`]).
pub fn set_loaded_library(path: impl Into<PathBuf>) {
    *LOADED_LIBRARY.write().unwrap_or_else(|p| p.into_inner()) = Some(path.into());
}

/// The path recorded by [`set_loaded_library`], if any.
pub fn loaded_library() -> Option<PathBuf> {
    LOADED_LIBRARY
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// What an install location was found relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallAnchor {
    /// The loaded shared library at this path ([`set_loaded_library`]).
    Library(PathBuf),
    /// The running executable at this path.
    Executable(PathBuf),
}

/// Where the packed kernels come from ([`resolve_kernel_location`]). `Display` is one line,
/// the text [`crate::gpu::open`] logs at INFO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelLocation {
    /// The directory named by `HIPDNN_KERNEL_DIR`.
    EnvDir(PathBuf),
    /// An installed kernel directory next to the loaded library or the executable.
    Installed {
        /// The kernel directory (`<prefix>/lib/hipdnn/kernels`).
        dir: PathBuf,
        /// What it was found relative to.
        anchor: InstallAnchor,
    },
    /// The kernels compiled into the binary, for these archs.
    Embedded {
        /// The archs carried ([`EMBEDDED_ARCHS`]).
        archs: Vec<&'static str>,
    },
    /// No kernels anywhere: no `HIPDNN_KERNEL_DIR`, no install location, and a build without
    /// the `kernels-<arch>` features.
    NotFound {
        /// The install locations looked at.
        tried: Vec<PathBuf>,
    },
}

impl KernelLocation {
    /// The kernel directory on disk (`<dir>/<arch>/kernels.json`, …), `None` for the embedded
    /// kernels or none at all.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            KernelLocation::EnvDir(d) | KernelLocation::Installed { dir: d, .. } => Some(d),
            KernelLocation::Embedded { .. } | KernelLocation::NotFound { .. } => None,
        }
    }
}

impl fmt::Display for KernelLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelLocation::EnvDir(d) => write!(f, "{} (from {KERNEL_DIR_ENV})", d.display()),
            KernelLocation::Installed { dir, anchor } => {
                let (what, p) = match anchor {
                    InstallAnchor::Library(p) => ("library", p),
                    InstallAnchor::Executable(p) => ("executable", p),
                };
                write!(
                    f,
                    "{} (installed, next to the {what} {})",
                    dir.display(),
                    p.display()
                )
            }
            KernelLocation::Embedded { archs } => {
                write!(f, "compiled into the binary ({})", archs.join(", "))
            }
            KernelLocation::NotFound { tried } => {
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "none: {KERNEL_DIR_ENV} is unset, no install location exists ({}) and this build carries no kernels (cargo features kernels-<arch> of hipdnn-engines); set {KERNEL_DIR_ENV} or install with `cargo xtask install`",
                    if tried.is_empty() {
                        "none known".to_string()
                    } else {
                        tried.join(", ")
                    }
                )
            }
        }
    }
}

/// Resolves where the packed kernels come from, in the order of the module docs:
/// `HIPDNN_KERNEL_DIR`, then `<loaded library dir>/hipdnn/kernels` and
/// `<executable dir>/../lib/hipdnn/kernels` when they exist, then the embedded kernels.
/// Reads the environment and stats at most two directories; loads nothing and needs no GPU.
pub fn resolve_kernel_location() -> KernelLocation {
    if let Some(d) = std::env::var_os(KERNEL_DIR_ENV) {
        return KernelLocation::EnvDir(PathBuf::from(d));
    }
    let mut candidates = Vec::new();
    if let Some(lib) = loaded_library() {
        if let Some(parent) = lib.parent() {
            candidates.push((
                parent.join(INSTALL_DIR_FROM_LIB),
                InstallAnchor::Library(lib.clone()),
            ));
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(parent) = exe.parent() {
            candidates.push((
                parent.join(INSTALL_DIR_FROM_EXE),
                InstallAnchor::Executable(exe.clone()),
            ));
        }
    }
    let mut tried = Vec::new();
    for (dir, anchor) in candidates {
        if dir.is_dir() {
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            return KernelLocation::Installed { dir, anchor };
        }
        tried.push(dir);
    }
    if EMBEDDED_ARCHS.is_empty() {
        KernelLocation::NotFound { tried }
    } else {
        KernelLocation::Embedded {
            archs: EMBEDDED_ARCHS.iter().map(|e| e.arch).collect(),
        }
    }
}

/// Writes the packed kernels of `location` to `to/<arch>/<file>` (a copy of every arch
/// directory of a kernel directory, or the embedded files), for tools and tests that need a
/// kernel directory of their own (`HIPDNN_KERNEL_DIR` pointing at a copy whose archives they
/// then remove). Returns the arch directories written.
///
/// # Errors
/// The first I/O error, naming the path; [`KernelLocation::NotFound`] gives a `NotFound`
/// error with its `Display`.
pub fn export_kernels(location: &KernelLocation, to: &Path) -> std::io::Result<Vec<PathBuf>> {
    let ctx = |what: &str, p: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
    };
    let mut written = Vec::new();
    match location {
        KernelLocation::EnvDir(dir) | KernelLocation::Installed { dir, .. } => {
            for arch in std::fs::read_dir(dir).map_err(|e| ctx("cannot list", dir, e))? {
                let arch = arch.map_err(|e| ctx("cannot list", dir, e))?;
                if !arch.path().is_dir() {
                    continue;
                }
                let out = to.join(arch.file_name());
                std::fs::create_dir_all(&out).map_err(|e| ctx("cannot create", &out, e))?;
                let src = arch.path();
                for f in std::fs::read_dir(&src).map_err(|e| ctx("cannot list", &src, e))? {
                    let f = f.map_err(|e| ctx("cannot list", &src, e))?;
                    let dst = out.join(f.file_name());
                    std::fs::copy(f.path(), &dst).map_err(|e| ctx("cannot write", &dst, e))?;
                }
                written.push(out);
            }
        }
        KernelLocation::Embedded { .. } => {
            for e in EMBEDDED_ARCHS {
                let out = to.join(e.arch);
                std::fs::create_dir_all(&out).map_err(|err| ctx("cannot create", &out, err))?;
                for (name, bytes) in e.files {
                    let dst = out.join(name);
                    std::fs::write(&dst, bytes).map_err(|err| ctx("cannot write", &dst, err))?;
                }
                written.push(out);
            }
        }
        KernelLocation::NotFound { .. } => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no kernels to export: {location}"),
            ));
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_archs_carry_their_four_files() {
        assert_eq!(
            EMBEDDED_ARCHS.len(),
            5,
            "every kernels-<arch> feature is on by default"
        );
        for e in EMBEDDED_ARCHS {
            for name in [
                "kernels.json".to_string(),
                "triton.json".to_string(),
                format!("hipdnn_kernels-{}.kpack", e.arch),
                format!("hipdnn_triton-{}.kpack", e.arch),
            ] {
                let bytes = e.file(&name).unwrap_or_else(|| panic!("{} {name}", e.arch));
                assert!(!bytes.is_empty(), "{} {name}", e.arch);
            }
            assert_eq!(e.dir_label(), Path::new("<embedded>").join(e.arch));
        }
        assert!(embedded_kernels("sm_90").is_some());
        assert!(embedded_kernels("sm_75").is_none());
    }

    #[test]
    fn locations_display_their_source() {
        assert_eq!(
            KernelLocation::EnvDir("/k".into()).to_string(),
            "/k (from HIPDNN_KERNEL_DIR)"
        );
        let installed = KernelLocation::Installed {
            dir: "/p/lib/hipdnn/kernels".into(),
            anchor: InstallAnchor::Library("/p/lib/libhipdnn_backend.so".into()),
        };
        assert_eq!(
            installed.to_string(),
            "/p/lib/hipdnn/kernels (installed, next to the library /p/lib/libhipdnn_backend.so)"
        );
        assert_eq!(installed.dir(), Some(Path::new("/p/lib/hipdnn/kernels")));
        let embedded = KernelLocation::Embedded {
            archs: vec!["sm_80", "sm_90"],
        };
        assert_eq!(
            embedded.to_string(),
            "compiled into the binary (sm_80, sm_90)"
        );
        assert_eq!(embedded.dir(), None);
        let none = KernelLocation::NotFound { tried: vec![] }.to_string();
        assert!(
            none.starts_with("none: HIPDNN_KERNEL_DIR is unset"),
            "{none}"
        );
    }

    #[test]
    fn exported_embedded_kernels_are_a_kernel_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let loc = KernelLocation::Embedded {
            archs: EMBEDDED_ARCHS.iter().map(|e| e.arch).collect(),
        };
        let dirs = export_kernels(&loc, tmp.path()).unwrap();
        assert_eq!(dirs.len(), EMBEDDED_ARCHS.len());
        let again = tempfile::tempdir().unwrap();
        let copied = export_kernels(&KernelLocation::EnvDir(tmp.path().into()), again.path());
        assert_eq!(copied.unwrap().len(), EMBEDDED_ARCHS.len());
        let a = std::fs::read(again.path().join("sm_90/triton.json")).unwrap();
        assert_eq!(
            a,
            embedded_kernels("sm_90")
                .unwrap()
                .file("triton.json")
                .unwrap()
        );
        let e = export_kernels(&KernelLocation::NotFound { tried: vec![] }, tmp.path());
        assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    }
}
