//! Saving and loading graphs to files atomically.
//!
//! A save writes the whole image to a temporary file in the destination's directory, fsyncs
//! it, renames it over the destination and fsyncs the directory, so a reader (another thread
//! or process) sees either the old file or the new one, never a mix; a failed save leaves the
//! destination untouched and removes its temporary file. A load reads the whole file once and
//! decodes that one buffer. This module owns only the file handling; the bytes are those of
//! `to_binary` / `to_compiled_plan_binary`.

use crate::{Error, ErrorCode, Graph, Handle, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What [`Graph::save_to_file`] writes.
///
/// ```
/// use hipdnn::{DataType, Form, Graph, Handle, PointwiseAttributes, PointwiseMode,
///              TensorAttributes};
/// let handle = Handle::cpu()?;
/// let mut g = Graph::new();
/// g.set_io_data_type(DataType::Float);
/// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([4]));
/// let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Abs));
/// g.set_output(y, true).set_uid(y, 2);
/// g.build(&handle)?;
///
/// let path = std::env::temp_dir().join(format!("hipdnn-form-doc-{}.hdgp", std::process::id()));
/// g.save_to_file(&path, Form::GraphAndPlan)?;
/// let loaded = Graph::load_from_file(&handle, &path)?; // the plan is restored, not rebuilt
/// assert!(loaded.has_plan());
/// assert_eq!(loaded.to_binary()?, g.to_binary()?);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), hipdnn::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// [`Graph::to_binary`]: an `HDGP` container with the graph and its plan (or the bare graph
    /// when the plan cannot be saved).
    GraphAndPlan,
    /// [`Graph::to_compiled_plan_binary`]: the plan alone (a `SerializedExecutionPlan`).
    PlanOnly,
}

/// Writes `bytes` to `path` atomically: a new temporary file `.<name>.<pid>.<n>.tmp` in the
/// same directory, `fsync`, `rename` over `path`, `fsync` of the directory. On failure the
/// temporary file is removed and `path` keeps its previous content.
///
/// # Errors
/// The I/O error of the first step that failed (`InvalidInput` for a path without a file name).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn io_error(what: &str, path: &Path, e: io::Error) -> Error {
    Error::new(
        ErrorCode::InvalidValue,
        format!("cannot {what} '{}': {e}", path.display()),
    )
}

impl Graph {
    /// Saves the graph to `path` in `form`, atomically (see [`write_atomically`]): concurrent
    /// readers see the previous file or this one, whole.
    ///
    /// # Errors
    /// The errors of [`Graph::to_binary`] / [`Graph::to_compiled_plan_binary`] (nothing is
    /// written then); `INVALID_VALUE` `cannot save to '<path>': <io error>` when a file step
    /// fails (the destination is untouched).
    pub fn save_to_file(&self, path: impl AsRef<Path>, form: Form) -> Result<()> {
        let path = path.as_ref();
        let bytes = match form {
            Form::GraphAndPlan => self.to_binary()?,
            Form::PlanOnly => self.to_compiled_plan_binary()?,
        };
        write_atomically(path, &bytes).map_err(|e| io_error("save to", path, e))
    }

    /// Loads a file written by [`Graph::save_to_file`] in either form: the file is read once,
    /// whole; an `HDGP` container or a bare graph goes to [`Graph::from_binary`], a bare plan
    /// to [`Graph::from_compiled_plan_binary`].
    ///
    /// # Errors
    /// `INVALID_VALUE` `cannot read '<path>': <io error>`; otherwise the errors of the loader
    /// the bytes went to.
    pub fn load_from_file(handle: &Handle, path: impl AsRef<Path>) -> Result<Graph> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|e| io_error("read", path, e))?;
        if !hipdnn_backend::is_graph_and_plan_container(&bytes)
            && hipdnn_backend::PlanEnvelope::parse(&bytes).is_ok()
        {
            return Graph::from_compiled_plan_binary(handle, &bytes);
        }
        Graph::from_binary(handle, &bytes)
    }
}
