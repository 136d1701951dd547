//! `hipdnnHandle_t`: create/destroy, stream, engine queries, plugin paths, heuristic policies
//! and the engine-ranking cache.
//!
//! A handle wraps an SDK [`hipdnn::Handle`] ([`hipdnn::Handle::on_current_device`]: the GPU
//! engines of the calling thread's current device when a GPU is usable, always the CPU
//! reference engine), so a C caller sees exactly the engines a Rust
//! program sees. Our engines are in-process: plugin paths are accepted and recorded, never
//! loaded (docs/c-api.md).

use crate::error::{Ffi, entry, err, non_null, str_in};
use crate::registry::Registry;
use hipdnn_backend::Status;
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, RwLock};

/// Opaque C type behind `hipdnnHandle_t`.
#[repr(C)]
pub struct HipdnnHandle {
    _private: [u8; 0],
}

/// A live handle.
pub struct HandleObj {
    /// The SDK handle (engines, device, stream).
    pub sdk: RwLock<hipdnn::Handle>,
    /// The stream as the caller gave it (`hipStream_t`).
    pub stream: Mutex<usize>,
    /// Engine rankings written by `hipdnnBackendWriteEngineRankingResults_ext`, keyed by the
    /// graph's serialized bytes.
    pub rankings: Mutex<HashMap<Vec<u8>, Vec<i64>>>,
}

/// Live handles.
pub static HANDLES: Registry<HandleObj> = Registry::new();

/// The live handle at `h`.
///
/// # Errors
/// `BAD_PARAM_NULL_POINTER` for a null, foreign or destroyed handle.
pub fn handle(h: *const HipdnnHandle) -> Ffi<Arc<HandleObj>> {
    non_null(h, "the handle")?;
    HANDLES.get(h as usize).ok_or_else(|| {
        err(
            Status::BadParamNullPointer,
            format!("handle {h:p} is not a live hipdnnHandle_t"),
        )
    })
}

/// Plugin name reported for every engine: our engines are compiled in.
pub const PLUGIN_NAME: &str = "hipdnn-rs (in-process)";
/// Engine type reported by `hipdnnGetEngineInfo_ext`.
pub const ENGINE_TYPE: &str = "engine";

/// `(id, name)` of the handle's engines sorted by name (upstream's engine-info order).
fn engines_sorted(h: &HandleObj) -> Vec<(i64, String)> {
    let sdk = h.sdk.read().unwrap_or_else(|p| p.into_inner());
    let mut v: Vec<(i64, String)> = sdk
        .backend()
        .engines()
        .iter()
        .map(|e| (e.id(), e.name().to_string()))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

/// Environment variable choosing the device of new handles: `cpu` forces the CPU reference
/// engine alone (for callers whose buffers are host memory on a machine with a GPU); unset or
/// anything else: the calling thread's current GPU when one is usable, else the CPU (as
/// [`hipdnn::Handle::on_current_device`]).
pub const DEVICE_ENV: &str = "HIPDNN_RS_DEVICE";

fn new_sdk_handle() -> Ffi<hipdnn::Handle> {
    crate::location::report_loaded_library();
    let cpu = std::env::var(DEVICE_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("cpu"));
    let h = if cpu {
        hipdnn::Handle::cpu()
    } else {
        hipdnn::Handle::on_current_device()
    };
    h.map_err(|e| {
        err(
            Status::InternalError,
            format!("cannot create a handle: {e}"),
        )
    })
}

/// `hipdnnCreate`: a new handle with the SDK's engines (see [`DEVICE_ENV`]), bound to the GPU
/// that is current on the calling thread at this call (`hipSetDevice` / `cudaSetDevice`
/// before it choose the device, as with upstream, whose engine handles are created in the
/// current device's context and whose heuristics query `hipGetDevice`); plans built, loaded
/// and executed on the handle stay on that device. Null `handle` → NULL_POINTER; on failure
/// `*handle` is untouched.
///
/// # Safety
/// `handle` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnCreate(handle: *mut *mut HipdnnHandle) -> Status {
    entry("hipdnnCreate", || {
        non_null(handle, "the handle output pointer")?;
        let sdk = new_sdk_handle()?;
        let obj = Arc::new(HandleObj {
            sdk: RwLock::new(sdk),
            stream: Mutex::new(0),
            rankings: Mutex::new(HashMap::new()),
        });
        let addr = HANDLES.insert(obj);
        // SAFETY: `handle` is non-null and valid for a write (caller contract).
        unsafe { *handle = addr as *mut HipdnnHandle };
        Ok(())
    })
}

/// `hipdnnDestroy`: releases a handle (plans built on it keep their engines alive).
///
/// # Safety
/// `handle` is only compared against live handles; any value is safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnDestroy(handle: *mut HipdnnHandle) -> Status {
    entry("hipdnnDestroy", || {
        self::handle(handle)?;
        HANDLES.remove(handle as usize);
        Ok(())
    })
}

/// `hipdnnSetStream`: the stream engines run on (opaque to us; passed to GPU engines).
///
/// # Safety
/// Any value is safe; the stream is not dereferenced here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnSetStream(handle: *mut HipdnnHandle, stream: *mut c_void) -> Status {
    entry("hipdnnSetStream", || {
        let h = self::handle(handle)?;
        *h.stream.lock().unwrap_or_else(|p| p.into_inner()) = stream as usize;
        h.sdk
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .backend_mut()
            .set_stream(stream as u64);
        Ok(())
    })
}

/// `hipdnnGetStream`.
///
/// # Safety
/// `stream` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetStream(
    handle: *mut HipdnnHandle,
    stream: *mut *mut c_void,
) -> Status {
    entry("hipdnnGetStream", || {
        let h = self::handle(handle)?;
        non_null(stream, "the stream output pointer")?;
        let s = *h.stream.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: non-null, valid for a write (caller contract).
        unsafe { *stream = s as *mut c_void };
        Ok(())
    })
}

/// `hipdnnGetEngineCount_ext`.
///
/// # Safety
/// `num` must be null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetEngineCount_ext(
    handle: *mut HipdnnHandle,
    num: *mut usize,
) -> Status {
    entry("hipdnnGetEngineCount_ext", || {
        let h = self::handle(handle)?;
        non_null(num, "numEngines")?;
        // SAFETY: non-null, valid for a write (caller contract).
        unsafe { *num = engines_sorted(&h).len() };
        Ok(())
    })
}

/// One string of an info query: with a null buffer only the length (+1 for the NUL) is
/// written; otherwise `*len` is the buffer size and a short buffer is BAD_PARAM.
///
/// # Safety
/// `len` valid for read/write; `buf` null or valid for `*len` bytes.
unsafe fn info_string(text: &str, buf: *mut c_char, len: *mut usize, what: &str) -> Ffi {
    non_null(len, what)?;
    if buf.is_null() {
        // SAFETY: valid for a write (caller contract).
        unsafe { *len = text.len() + 1 };
        return Ok(());
    }
    // SAFETY: valid for a read (caller contract).
    let cap = unsafe { *len };
    if cap < text.len() + 1 {
        return Err(err(
            Status::BadParam,
            format!(
                "{what}: buffer of {cap} bytes is too small, {} needed",
                text.len() + 1
            ),
        ));
    }
    // SAFETY: `buf` valid for `cap > text.len()` bytes.
    unsafe { crate::error::copy_c_string_truncated(text, buf, cap) };
    Ok(())
}

/// `hipdnnGetEngineInfo_ext`: engine `index` in name order. Null `engineId` allowed; the four
/// length pointers are required; any null string buffer makes it a length query (all four
/// lengths, NUL included, written); a short buffer or an index past the end → BAD_PARAM.
///
/// # Safety
/// Pointers null or valid as described.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hipdnnGetEngineInfo_ext(
    handle: *mut HipdnnHandle,
    index: usize,
    engine_id: *mut i64,
    name: *mut c_char,
    name_len: *mut usize,
    plugin: *mut c_char,
    plugin_len: *mut usize,
    version: *mut c_char,
    version_len: *mut usize,
    ty: *mut c_char,
    ty_len: *mut usize,
) -> Status {
    entry("hipdnnGetEngineInfo_ext", || {
        let h = self::handle(handle)?;
        for (p, w) in [
            (name_len, "engineNameLen"),
            (plugin_len, "pluginNameLen"),
            (version_len, "versionLen"),
            (ty_len, "typeLen"),
        ] {
            non_null(p, w)?;
        }
        let engines = engines_sorted(&h);
        let (id, ename) = engines.get(index).ok_or_else(|| {
            err(
                Status::BadParam,
                format!(
                    "engine index {index} is out of range ({} engines)",
                    engines.len()
                ),
            )
        })?;
        let strings = [
            (ename.as_str(), name, name_len, "engineName"),
            (PLUGIN_NAME, plugin, plugin_len, "pluginName"),
            (crate::VERSION, version, version_len, "version"),
            (ENGINE_TYPE, ty, ty_len, "type"),
        ];
        let query = strings.iter().any(|s| s.1.is_null());
        for (text, buf, len, what) in strings {
            let buf = if query { std::ptr::null_mut() } else { buf };
            // SAFETY: pointers checked non-null above; buffers per caller contract.
            unsafe { info_string(text, buf, len, what)? };
        }
        if !engine_id.is_null() {
            // SAFETY: non-null, valid for a write.
            unsafe { *engine_id = *id };
        }
        Ok(())
    })
}

/// `hipdnnGetEngineIdByName_ext`: unknown name → NOT_SUPPORTED.
///
/// # Safety
/// `name` null or NUL-terminated; `id` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetEngineIdByName_ext(
    handle: *mut HipdnnHandle,
    name: *const c_char,
    id: *mut i64,
) -> Status {
    entry("hipdnnGetEngineIdByName_ext", || {
        let h = self::handle(handle)?;
        // SAFETY: caller contract.
        let name = unsafe { str_in(name, "engineName")? };
        non_null(id, "engineId")?;
        let found = h
            .sdk
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .backend()
            .engine_id_by_name(name)?;
        // SAFETY: non-null, valid for a write.
        unsafe { *id = found };
        Ok(())
    })
}

/// `hipdnnGetEngineNameById_ext`: null `engineName` → length (+NUL) only; on the fill call
/// `*engineNameLen` is the buffer size and is not rewritten; short → BAD_PARAM; unknown id →
/// NOT_SUPPORTED.
///
/// # Safety
/// `name` null or valid for `*len` bytes; `len` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetEngineNameById_ext(
    handle: *mut HipdnnHandle,
    id: i64,
    name: *mut c_char,
    len: *mut usize,
) -> Status {
    entry("hipdnnGetEngineNameById_ext", || {
        let h = self::handle(handle)?;
        non_null(len, "engineNameLen")?;
        let engines = engines_sorted(&h);
        let (_, n) = engines
            .iter()
            .find(|(i, _)| *i == id)
            .ok_or_else(|| err(Status::NotSupported, format!("no engine has id {id}")))?;
        // SAFETY: caller contract.
        unsafe { info_string(n, name, len, "engineName") }
    })
}

/// `hipdnnGetHeuristicPolicyCount_ext`: we have no heuristic plugins, so 0.
///
/// # Safety
/// `num` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetHeuristicPolicyCount_ext(
    handle: *mut HipdnnHandle,
    num: *mut usize,
) -> Status {
    entry("hipdnnGetHeuristicPolicyCount_ext", || {
        self::handle(handle)?;
        non_null(num, "numPolicies")?;
        // SAFETY: non-null, valid for a write.
        unsafe { *num = 0 };
        Ok(())
    })
}

/// `hipdnnGetHeuristicPolicyInfo_ext`: every index is out of range (no policies) → BAD_PARAM.
///
/// # Safety
/// Pointers are not dereferenced beyond null checks.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hipdnnGetHeuristicPolicyInfo_ext(
    handle: *mut HipdnnHandle,
    index: usize,
    _policy_id: *mut i64,
    _policy_name: *mut c_char,
    policy_name_len: *mut usize,
    _plugin_name: *mut c_char,
    plugin_name_len: *mut usize,
    _plugin_version: *mut c_char,
    plugin_version_len: *mut usize,
    _api_version: *mut c_char,
    api_version_len: *mut usize,
) -> Status {
    entry("hipdnnGetHeuristicPolicyInfo_ext", || {
        self::handle(handle)?;
        for (p, w) in [
            (policy_name_len, "policyNameLen"),
            (plugin_name_len, "pluginNameLen"),
            (plugin_version_len, "pluginVersionLen"),
            (api_version_len, "apiVersionLen"),
        ] {
            non_null(p, w)?;
        }
        Err(err(
            Status::BadParam,
            format!("policy index {index} is out of range (0 heuristic policies)"),
        ))
    })
}

/// Recorded plugin paths (accepted, never loaded: our engines are in-process).
#[derive(Default)]
pub struct PluginPaths {
    /// Engine plugin paths in call order.
    pub engine: Vec<String>,
    /// Heuristic plugin paths.
    pub heuristic: Vec<String>,
    /// Last unload mode set.
    pub unload_mode: i32,
}

/// The process-wide plugin settings.
pub static PLUGIN_PATHS: LazyPaths = LazyPaths(std::sync::LazyLock::new(Default::default));

/// Wrapper giving the plugin settings a `lock`.
pub struct LazyPaths(std::sync::LazyLock<Mutex<PluginPaths>>);

impl LazyPaths {
    /// Locks the settings.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, PluginPaths> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// # Safety
/// `paths` null or valid for `n` C-string pointers.
unsafe fn set_paths(n: usize, paths: *const *const c_char, mode: i32, heuristic: bool) -> Ffi {
    if n > 0 {
        non_null(paths, "pluginPaths")?;
    }
    if !(0..=1).contains(&mode) {
        return Err(err(
            Status::BadParam,
            format!("loading mode {mode} is not a hipdnnPluginLoadingMode_ext_t"),
        ));
    }
    let mut got = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `paths` valid for `n` entries (caller contract).
        let p = unsafe { *paths.add(i) };
        // SAFETY: entry null or NUL-terminated (caller contract).
        got.push(unsafe { str_in(p, &format!("pluginPaths[{i}]"))? }.to_string());
    }
    if !HANDLES.is_empty() {
        return Err(err(
            Status::NotSupported,
            "plugin paths cannot change while a handle is alive",
        ));
    }
    let mut s = PLUGIN_PATHS.lock();
    let list = if heuristic {
        &mut s.heuristic
    } else {
        &mut s.engine
    };
    if mode == 1 {
        list.clear();
    }
    list.extend(got);
    Ok(())
}

/// `hipdnnSetEnginePluginPaths_ext`: recorded, not loaded (our engines are in-process).
/// `numPaths > 0` with a null array or a null entry → NULL_POINTER; while a handle is alive →
/// NOT_SUPPORTED.
///
/// # Safety
/// `paths` null or valid for `n` C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnSetEnginePluginPaths_ext(
    n: usize,
    paths: *const *const c_char,
    mode: i32,
) -> Status {
    // SAFETY: caller contract.
    entry("hipdnnSetEnginePluginPaths_ext", || unsafe {
        set_paths(n, paths, mode, false)
    })
}

/// `hipdnnSetHeuristicPluginPaths_ext`: as the engine form, for heuristic plugins.
///
/// # Safety
/// `paths` null or valid for `n` C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnSetHeuristicPluginPaths_ext(
    n: usize,
    paths: *const *const c_char,
    mode: i32,
) -> Status {
    // SAFETY: caller contract.
    entry("hipdnnSetHeuristicPluginPaths_ext", || unsafe {
        set_paths(n, paths, mode, true)
    })
}

/// `hipdnnSetPluginUnloadMode_ext`: recorded (LAZY 0 or EAGER 1; else BAD_PARAM).
#[unsafe(no_mangle)]
pub extern "C" fn hipdnnSetPluginUnloadMode_ext(mode: i32) -> Status {
    entry("hipdnnSetPluginUnloadMode_ext", || {
        if !(0..=1).contains(&mode) {
            return Err(err(
                Status::BadParam,
                format!("unloading mode {mode} is not a hipdnnPluginUnloadingMode_ext_t"),
            ));
        }
        PLUGIN_PATHS.lock().unload_mode = mode;
        Ok(())
    })
}

/// `hipdnnGetLoadedEnginePluginPaths_ext`: no plugin is ever loaded from a path (our engines
/// are in-process), so `*numPluginPaths = 0` and `*maxStringLen = 0`. Null handle, count or
/// length → NULL_POINTER.
///
/// # Safety
/// `num` and `max_len` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetLoadedEnginePluginPaths_ext(
    handle: *mut HipdnnHandle,
    num: *mut usize,
    _paths: *mut *mut c_char,
    max_len: *mut usize,
) -> Status {
    entry("hipdnnGetLoadedEnginePluginPaths_ext", || {
        self::handle(handle)?;
        non_null(num, "numPluginPaths")?;
        non_null(max_len, "maxStringLen")?;
        // SAFETY: non-null, valid for writes.
        unsafe {
            *num = 0;
            *max_len = 0;
        }
        Ok(())
    })
}
