//! `hipdnn_rs`: the Python module of hipdnn-rs (PyO3), a thin layer over the [`hipdnn`] SDK.
//!
//! Every Python call is one SDK call with its arguments converted: tensors are `Tensor`
//! objects (a graph and a [`hipdnn::TensorId`]), enums are their schema names as strings
//! (`"FLOAT"`, `"RELU_FWD"`), attributes are keyword arguments named like the SDK's
//! `*Attributes` setters, errors are the `HipdnnError` exception carrying the SDK's code and
//! message. Arrays cross through DLPack (the `dlpack` module) without a copy. docs/python.md is the
//! user's guide; `hipdnn_rs.pyi` the typed signatures.

use hipdnn::{
    Activation, AutotuneConfig, AutotuneResult, AutotuneStorage, AutotuneStrategy,
    BatchnormAttributes, BatchnormBackwardAttributes, BatchnormInferenceAttributes,
    BatchnormInferenceVarianceExtAttributes, BlockScaleDequantizeAttributes,
    BlockScaleQuantizeAttributes, Buffer, ConvDgradAttributes, ConvFpropAttributes,
    ConvWgradAttributes, CustomOpAttributes, DataType, Error, Graph, Handle, LayernormAttributes,
    LayernormBackwardAttributes, MatmulAttributes, MoeGroupedMatmulAttributes,
    MoeGroupedMatmulBwdAttributes, PlanSpec, PointwiseAttributes, PrimingFailurePolicy,
    ReductionAttributes, ResampleBwdAttributes, ResampleFwdAttributes, RmsNormAttributes,
    RmsNormBackwardAttributes, SdpaAttributes, SdpaBackwardAttributes, TensorAttributes, TensorId,
    TensorValue, TuneMode, VariantPack,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

mod device;
mod dlpack;

create_exception!(
    hipdnn_rs,
    HipdnnError,
    PyException,
    "An SDK error: `code` is the SDK's error code name (\"INVALID_VALUE\", \
     \"ATTRIBUTE_NOT_SET\", \"GRAPH_NOT_SUPPORTED\", \"HIPDNN_BACKEND_ERROR\"), `message` its \
     message, `backend_status` the backend's status name without its HIPDNN_STATUS_ prefix \
     (\"BAD_PARAM\", ...) when a backend call failed, else None; str() is \"<CODE>: <message>\"."
);

/// The Python exception of an SDK error.
fn err(e: Error) -> PyErr {
    Python::with_gil(|py| {
        let status = match e.cause() {
            Some(hipdnn::Cause::Backend(b)) => {
                let name = b.status.name();
                Some(
                    name.strip_prefix("HIPDNN_STATUS_")
                        .unwrap_or(name)
                        .to_string(),
                )
            }
            _ => None,
        };
        let pe = HipdnnError::new_err(e.to_string());
        let v = pe.value(py);
        // Setting attributes on a fresh exception instance cannot fail.
        let _ = v.setattr("code", e.code.as_str());
        let _ = v.setattr("message", e.message.as_str());
        let _ = v.setattr("backend_status", status);
        pe
    })
}

/// An enum from its schema name, or INVALID_VALUE listing the names.
fn parse<E: Copy>(all: &[E], name: impl Fn(E) -> &'static str, s: &str, what: &str) -> PyResult<E> {
    all.iter().copied().find(|&e| name(e) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&e| name(e)).collect();
        err(Error::invalid_value(format!(
            "unknown {what} '{s}'; one of {}",
            names.join(", ")
        )))
    })
}

fn data_type(s: &str) -> PyResult<DataType> {
    parse(DataType::ALL, DataType::schema_name, s, "data type")
}

/// Every numerical note, in the C enum's order (named by `NumericalNote::name`).
const NUMERICAL_NOTES: &[hipdnn::NumericalNote] = {
    use hipdnn::NumericalNote as N;
    &[
        N::TensorCore,
        N::DownConvertInputs,
        N::ReducedPrecisionReduction,
        N::Fft,
        N::Nondeterministic,
        N::Winograd,
        N::WinogradTile4x4,
        N::WinogradTile6x6,
        N::WinogradTile13x13,
    ]
};

fn numerical_note(s: &str) -> PyResult<hipdnn::NumericalNote> {
    parse(
        NUMERICAL_NOTES,
        hipdnn::NumericalNote::name,
        s,
        "numerical note",
    )
}

/// Every behavior note with its name (upstream `HIPDNN_BEHAVIOR_NOTE_<name>`).
const BEHAVIOR_NOTES: &[(hipdnn::BehaviorNote, &str)] = {
    use hipdnn::BehaviorNote as B;
    &[
        (B::RuntimeCompilation, "RUNTIME_COMPILATION"),
        (B::RequiresLayoutTransform, "REQUIRES_LAYOUT_TRANSFORM"),
        (B::SupportsGraphCapture, "SUPPORTS_GRAPH_CAPTURE"),
        (B::ExternalLibraryDependency, "EXTERNAL_LIBRARY_DEPENDENCY"),
        (
            B::SupportsExecutionPlanSerialization,
            "SUPPORTS_EXECUTION_PLAN_SERIALIZATION",
        ),
    ]
};

fn behavior_note(s: &str) -> PyResult<hipdnn::BehaviorNote> {
    parse(BEHAVIOR_NOTES, |(_, n)| n, s, "behavior note").map(|(b, _)| b)
}

fn heuristic_mode(s: &str) -> PyResult<hipdnn::HeuristicMode> {
    parse(
        &[(hipdnn::HeuristicMode::Fallback, "FALLBACK")],
        |(_, n)| n,
        s,
        "heuristic mode",
    )
    .map(|(m, _)| m)
}

const TUNE_MODES: &[(TuneMode, &str)] = &[
    (TuneMode::Standard, "STANDARD"),
    (TuneMode::Exhaustive, "EXHAUSTIVE"),
];
const STRATEGIES: &[(AutotuneStrategy, &str)] = &[
    (AutotuneStrategy::SingleShot, "SINGLE_SHOT"),
    (AutotuneStrategy::FixedAverage, "FIXED_AVERAGE"),
    (AutotuneStrategy::RunUntilStable, "RUN_UNTIL_STABLE"),
];
const PRIMING_POLICIES: &[(PrimingFailurePolicy, &str)] = &[
    (PrimingFailurePolicy::Abort, "ABORT"),
    (
        PrimingFailurePolicy::BenchmarkUnprimed,
        "BENCHMARK_UNPRIMED",
    ),
];

/// The name of `v` in a `(value, name)` table.
fn name_of<E: PartialEq + Copy>(table: &[(E, &'static str)], v: E) -> &'static str {
    table.iter().find(|(e, _)| *e == v).map_or("?", |(_, n)| n)
}

/// An `AutotuneConfig` from the keyword dict Python passes (keys: the config's field names;
/// enums by name; `candidates` as `[(engine_id, [(knob_type, value), ...]), ...]`).
fn named<E: Copy>(v: &Bound<'_, PyAny>, what: &str, table: &[(E, &'static str)]) -> PyResult<E> {
    let s: String = v.extract()?;
    parse(table, |(_, n)| n, &s, what).map(|(e, _)| e)
}

fn autotune_config(d: Option<&Bound<'_, PyDict>>) -> PyResult<AutotuneConfig> {
    let mut c = AutotuneConfig::default();
    let Some(d) = d else { return Ok(c) };
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "mode" => c.mode = named(&v, "tune mode", TUNE_MODES)?,
            "strategy" => c.strategy = named(&v, "autotune strategy", STRATEGIES)?,
            "priming_failure_policy" => {
                c.priming_failure_policy = named(&v, "priming failure policy", PRIMING_POLICIES)?
            }
            "warmup_iterations" => c.warmup_iterations = v.extract()?,
            "timed_iterations" => c.timed_iterations = v.extract()?,
            "max_iterations" => c.max_iterations = v.extract()?,
            "window_size" => c.window_size = v.extract()?,
            "stability_threshold" => c.stability_threshold = v.extract()?,
            "engine_id_filter" => c.engine_id_filter = v.extract()?,
            "candidates" => {
                let specs: Vec<(i64, Vec<(i64, i64)>)> = v.extract()?;
                c.candidates = specs
                    .into_iter()
                    .map(|(engine_id, knob_choices)| PlanSpec {
                        engine_id,
                        knob_choices,
                    })
                    .collect();
            }
            other => {
                return Err(err(Error::invalid_value(format!(
                    "autotune: unknown config key '{other}'; one of mode, strategy, \
                     warmup_iterations, timed_iterations, max_iterations, window_size, \
                     stability_threshold, engine_id_filter, candidates, priming_failure_policy"
                ))));
            }
        }
    }
    Ok(c)
}

/// One autotune result as a dict with the SDK's field names.
fn result_dict<'py>(py: Python<'py>, r: &AutotuneResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("engine_id", r.engine_id)?;
    d.set_item("engine_name", &r.engine_name)?;
    d.set_item("variant", &r.variant)?;
    d.set_item("knob_choices", &r.knob_choices)?;
    d.set_item("min_time_ms", r.min_time_ms)?;
    d.set_item("avg_time_ms", r.avg_time_ms)?;
    d.set_item("stddev_ms", r.stddev_ms)?;
    d.set_item("iterations_run", r.iterations_run)?;
    d.set_item("converged", r.converged)?;
    d.set_item("rank", r.rank)?;
    d.set_item("succeeded", r.succeeded)?;
    d.set_item("error_message", &r.error_message)?;
    d.set_item("workspace_size", r.workspace_size)?;
    d.set_item("mode_used", name_of(TUNE_MODES, r.mode_used))?;
    d.set_item("supports_exhaustive", r.supports_exhaustive)?;
    d.set_item("ran_exhaustive", r.ran_exhaustive)?;
    d.set_item("exhaustive_not_run_reason", &r.exhaustive_not_run_reason)?;
    d.set_item("strategy_used", name_of(STRATEGIES, r.strategy_used))?;
    Ok(d)
}

/// The handle: the engines a graph is built for and the device they run on.
#[pyclass(name = "Handle", module = "hipdnn_rs", unsendable)]
struct PyHandle {
    h: Handle,
}

#[pymethods]
impl PyHandle {
    /// `Handle()`: the GPU when one is usable, else the CPU (SDK `Handle::new`).
    #[new]
    fn new() -> PyResult<Self> {
        Ok(PyHandle {
            h: Handle::new().map_err(err)?,
        })
    }
    /// A handle on the CPU reference engine (SDK `Handle::cpu`).
    #[staticmethod]
    fn cpu() -> PyResult<Self> {
        Ok(PyHandle {
            h: Handle::cpu().map_err(err)?,
        })
    }
    /// A handle on the first usable GPU, or HipdnnError GRAPH_NOT_SUPPORTED (SDK `Handle::gpu`).
    #[staticmethod]
    fn gpu() -> PyResult<Self> {
        Ok(PyHandle {
            h: Handle::gpu().map_err(err)?,
        })
    }
    /// True when the handle executes on a GPU.
    #[getter]
    fn is_gpu(&self) -> bool {
        self.h.is_gpu()
    }
    /// Device architecture (`"cpu"`, `"sm_90"`, `"gfx942"`, ...).
    #[getter]
    fn device_arch(&self) -> String {
        self.h.device_arch().to_string()
    }
    /// Names of the registered engines in heuristic order.
    #[getter]
    fn engine_names(&self) -> Vec<String> {
        self.h.engine_names()
    }
    /// Whether builds on this handle refuse engines noted NONDETERMINISTIC (SDK
    /// `Handle::deterministic_only`).
    #[getter]
    fn deterministic_only(&self) -> bool {
        self.h.deterministic_only()
    }
    /// Makes builds on this handle refuse engines noted NONDETERMINISTIC (SDK
    /// `Handle::set_deterministic_only`).
    fn set_deterministic_only(&mut self, on: bool) {
        self.h.set_deterministic_only(on);
    }
    /// The engine-override file later builds read, if any (SDK `Handle::engine_override_file`:
    /// the one set here, else the one `HIPDNN_HEUR_CONFIG_PATH` names).
    #[getter]
    fn engine_override_file(&self) -> Option<std::path::PathBuf> {
        self.h.engine_override_file()
    }
    /// Reads engine-override rules (and autotune winners) from `path`; None turns the rules
    /// off for this handle (SDK `Handle::set_engine_override_file`).
    fn set_engine_override_file(&mut self, path: Option<std::path::PathBuf>) {
        self.h.set_engine_override_file(path);
    }
    fn __repr__(&self) -> String {
        format!("{:?}", self.h)
    }
}

/// A tensor of a graph: a view on the graph's tensor (reads are live).
#[pyclass(name = "Tensor", module = "hipdnn_rs", unsendable)]
struct PyTensor {
    graph: Py<PyGraph>,
    id: TensorId,
}

impl PyTensor {
    fn read<T>(&self, py: Python<'_>, f: impl FnOnce(&Graph, &TensorAttributes) -> T) -> T {
        let g = self.graph.borrow(py);
        f(&g.g, g.g.tensor_attributes(self.id))
    }
}

#[pymethods]
impl PyTensor {
    /// Tensor name.
    #[getter]
    fn name(&self, py: Python<'_>) -> String {
        self.read(py, |_, t| t.name.clone())
    }
    /// Logical dims, outermost first.
    #[getter]
    fn dims(&self, py: Python<'_>) -> Vec<i64> {
        self.read(py, |_, t| t.dims.clone())
    }
    /// Strides in elements.
    #[getter]
    fn strides(&self, py: Python<'_>) -> Vec<i64> {
        self.read(py, |_, t| t.strides.clone())
    }
    /// The tensor's own data type (`"UNSET"` when it takes the graph's).
    #[getter]
    fn data_type(&self, py: Python<'_>) -> &'static str {
        self.read(py, |_, t| t.data_type.schema_name())
    }
    /// The data type after the graph's io / intermediate type fill an unset one
    /// (SDK `Graph::context_data_type`).
    #[getter]
    fn context_data_type(&self, py: Python<'_>) -> &'static str {
        self.read(py, |g, t| g.context_data_type(t).schema_name())
    }
    /// UID (None until set or assigned by build).
    #[getter]
    fn uid(&self, py: Python<'_>) -> Option<i64> {
        self.read(py, |_, t| t.uid)
    }
    /// True for an intermediate (no buffer).
    #[getter]
    fn is_virtual(&self, py: Python<'_>) -> bool {
        self.read(py, |_, t| t.is_virtual)
    }
    /// True when a node of the graph writes the tensor (SDK `Graph::producer`).
    #[getter]
    fn has_producer(&self, py: Python<'_>) -> bool {
        let g = self.graph.borrow(py);
        g.g.producer(self.id).is_some()
    }
    /// The baked value of a scalar constant (float, int or bool), else None.
    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let v = self.read(py, |_, t| t.value);
        Ok(match v {
            None => None,
            Some(TensorValue::Float32(x) | TensorValue::Float16(x) | TensorValue::BFloat16(x)) => {
                Some(x.into_pyobject(py)?.into_any().unbind())
            }
            Some(TensorValue::Float64(x)) => Some(x.into_pyobject(py)?.into_any().unbind()),
            Some(TensorValue::Int32(x)) => Some(x.into_pyobject(py)?.into_any().unbind()),
            Some(TensorValue::Int64(x)) => Some(x.into_pyobject(py)?.into_any().unbind()),
            Some(TensorValue::Float8(x)) => Some(x.into_pyobject(py)?.into_any().unbind()),
            Some(TensorValue::Bool(x)) => Some(x.into_pyobject(py)?.to_owned().into_any().unbind()),
        })
    }
    /// Position in the graph's tensor list.
    #[getter]
    fn index(&self) -> usize {
        self.id.index()
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        self.read(py, |_, t| {
            format!(
                "Tensor(name={:?}, uid={:?}, dims={:?}, strides={:?}, data_type={}, virtual={})",
                t.name,
                t.uid,
                t.dims,
                t.strides,
                t.data_type.schema_name(),
                t.is_virtual
            )
        })
    }
}

/// A hipDNN operation graph (SDK `Graph`).
#[pyclass(name = "Graph", module = "hipdnn_rs", unsendable)]
struct PyGraph {
    g: Graph,
}

/// The id of `t`, refused when `t` belongs to another graph (the SDK would panic).
fn tid(slf: &Bound<'_, PyGraph>, t: &PyTensor) -> PyResult<TensorId> {
    if t.graph.bind(slf.py()).is(slf) {
        Ok(t.id)
    } else {
        Err(err(Error::invalid_value(format!(
            "tensor #{} belongs to another graph; pass tensors this graph returned",
            t.id.index()
        ))))
    }
}

fn opt_tid(slf: &Bound<'_, PyGraph>, t: Option<PyRef<'_, PyTensor>>) -> PyResult<Option<TensorId>> {
    t.map(|t| tid(slf, &t)).transpose()
}

fn tids(
    slf: &Bound<'_, PyGraph>,
    ts: Option<Vec<PyRef<'_, PyTensor>>>,
) -> PyResult<Option<Vec<TensorId>>> {
    ts.map(|v| v.iter().map(|t| tid(slf, t)).collect())
        .transpose()
}

fn diag_alignment(s: Option<&str>) -> PyResult<Option<hipdnn::DiagonalAlignment>> {
    s.map(|s| {
        parse(
            hipdnn::DiagonalAlignment::ALL,
            hipdnn::DiagonalAlignment::schema_name,
            s,
            "diagonal alignment",
        )
    })
    .transpose()
}

fn resample_mode_of(s: &str) -> PyResult<hipdnn::ResampleMode> {
    parse(
        hipdnn::ResampleMode::ALL,
        hipdnn::ResampleMode::schema_name,
        s,
        "resample mode",
    )
}

fn padding_mode_of(s: Option<&str>) -> PyResult<Option<hipdnn::PaddingMode>> {
    s.map(|s| {
        parse(
            hipdnn::PaddingMode::ALL,
            hipdnn::PaddingMode::schema_name,
            s,
            "padding mode",
        )
    })
    .transpose()
}

fn wrap(slf: &Bound<'_, PyGraph>, id: TensorId) -> PyTensor {
    PyTensor {
        graph: slf.clone().unbind(),
        id,
    }
}

/// Sets the node name and compute type shared by every attributes type.
macro_rules! common {
    ($attrs:expr, $name:expr, $cdt:expr) => {{
        let mut a = $attrs;
        if let Some(n) = $name {
            a = a.name(n);
        }
        if let Some(c) = $cdt {
            a = a.compute_data_type(data_type(c)?);
        }
        a
    }};
}

/// `if let Some(v) = opt { attrs = attrs.setter(v) }` for each listed optional keyword.
macro_rules! set_opt {
    ($a:ident; $($f:ident),* $(,)?) => {
        $( if let Some(v) = $f { $a = $a.$f(v); } )*
    };
}

#[allow(clippy::too_many_arguments)]
fn pointwise_attrs(
    mode: &str,
    relu_lower_clip: Option<f32>,
    relu_upper_clip: Option<f32>,
    relu_lower_clip_slope: Option<f32>,
    axis: Option<i64>,
    swish_beta: Option<f32>,
    elu_alpha: Option<f32>,
    softplus_beta: Option<f32>,
    name: Option<String>,
    compute_data_type: Option<&str>,
) -> PyResult<PointwiseAttributes> {
    let m = parse(
        hipdnn::PointwiseMode::ALL,
        hipdnn::PointwiseMode::schema_name,
        mode,
        "pointwise mode",
    )?;
    let mut a = common!(PointwiseAttributes::with_mode(m), name, compute_data_type);
    set_opt!(a; relu_lower_clip, relu_upper_clip, relu_lower_clip_slope, axis, swish_beta, elu_alpha, softplus_beta);
    Ok(a)
}

fn conv_mode(s: Option<&str>) -> PyResult<Option<hipdnn::ConvMode>> {
    s.map(|s| {
        parse(
            hipdnn::ConvMode::ALL,
            hipdnn::ConvMode::schema_name,
            s,
            "conv mode",
        )
    })
    .transpose()
}

fn norm_phase(s: &str) -> PyResult<hipdnn::NormFwdPhase> {
    parse(
        hipdnn::NormFwdPhase::ALL,
        hipdnn::NormFwdPhase::schema_name,
        s,
        "forward phase",
    )
}

/// NumPy dtype name of an SDK data type (None: NumPy has none, e.g. BFLOAT16). A type
/// without an element type (FP8, ...) is carried as its bytes (`uint8`), as the SDK carries it
/// in a `Buffer<u8>` ([`DataType::has_element_type`]).
fn numpy_dtype(dt: DataType) -> Option<&'static str> {
    if !dt.has_element_type() && dt != DataType::Unset {
        return Some("uint8");
    }
    Some(match dt {
        DataType::Float => "float32",
        DataType::Half => "float16",
        DataType::Double => "float64",
        DataType::Int8 => "int8",
        DataType::Uint8 => "uint8",
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::Boolean => "bool",
        _ => return None,
    })
}

/// A new zero-filled NumPy array laid out as `t` (dims and strides of the graph tensor).
/// Shape overrides as Python passes them: UID → `(dims, strides)`.
type Overrides = std::collections::BTreeMap<i64, (Vec<i64>, Vec<i64>)>;

/// Tensor `uid`'s attributes at this execute's shape: borrowed unless `overrides` gives it
/// other dims and strides (no copy per binding on a plain execute).
fn at_shape<'a>(
    overrides: &Overrides,
    uid: i64,
    t: &'a TensorAttributes,
) -> std::borrow::Cow<'a, TensorAttributes> {
    match overrides.get(&uid) {
        Some((d, s)) => {
            let mut t = t.clone();
            (t.dims, t.strides) = (d.clone(), s.clone());
            std::borrow::Cow::Owned(t)
        }
        None => std::borrow::Cow::Borrowed(t),
    }
}

fn new_array<'py>(
    py: Python<'py>,
    uid: i64,
    t: &TensorAttributes,
    dt: DataType,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(dtype) = numpy_dtype(dt) else {
        return Err(err(Error::invalid_value(format!(
            "execute: output uid {uid} ('{}') is {}, which NumPy has no dtype for; pass an \
             output array (e.g. a torch tensor) in the tensors dict",
            t.name,
            dt.schema_name()
        ))));
    };
    let np = py.import("numpy")?;
    let dims = PyTuple::new(py, &t.dims)?;
    let packed = hipdnn::packed_strides(&t.dims, &(0..t.dims.len()).collect::<Vec<_>>());
    let same = t
        .dims
        .iter()
        .zip(t.strides.iter().zip(&packed))
        .all(|(d, (s, p))| *d <= 1 || s == p);
    if same {
        return np.call_method1("zeros", (dims, dtype));
    }
    // Another layout: a flat buffer of the tensor's extent viewed with its strides.
    let extent = 1 + t
        .dims
        .iter()
        .zip(&t.strides)
        .map(|(d, s)| (d - 1) * s)
        .sum::<i64>();
    let flat = np.call_method1("zeros", (extent, dtype))?;
    let itemsize: i64 = flat.getattr("itemsize")?.extract()?;
    let strides: Vec<i64> = t.strides.iter().map(|s| s * itemsize).collect();
    let tricks = py.import("numpy.lib.stride_tricks")?;
    tricks.call_method1("as_strided", (flat, dims, PyTuple::new(py, strides)?))
}

/// The DLPack imports of `tensors` (UID → object with `__dlpack__`) for a run of `g` on
/// `handle`, each checked against the graph tensor (at its shape in `overrides`) and the
/// handle's device, plus new arrays for the outputs of `g` that `tensors` lacks when
/// `allocate` (NumPy arrays on a CPU handle, `DeviceArray`s on a GPU handle); and
/// `{uid: array}` of every output.
fn import_all<'py>(
    g: &Graph,
    handle: &Handle,
    tensors: &Bound<'py, PyDict>,
    overrides: &Overrides,
    allocate: bool,
) -> PyResult<(Bound<'py, PyDict>, Vec<dlpack::Imported>)> {
    let py = tensors.py();
    let place = dlpack::Place::of(handle);
    let result = PyDict::new(py);
    let mut objs: Vec<(i64, Bound<'py, PyAny>)> = Vec::new();
    for (k, v) in tensors.iter() {
        objs.push((k.extract()?, v));
    }
    let mut imported = Vec::with_capacity(objs.len());
    if allocate {
        for (id, t) in g.tensors() {
            let (Some(uid), false) = (t.uid, t.is_virtual) else {
                continue;
            };
            if g.producer(id).is_none() {
                continue;
            }
            match objs.iter().find(|(u, _)| *u == uid) {
                Some((_, o)) => result.set_item(uid, o)?,
                None if matches!(place, dlpack::Place::Gpu { .. }) => {
                    let shaped = at_shape(overrides, uid, t);
                    let dt = g.context_data_type(t);
                    let (arr, mem) =
                        device::DeviceArray::alloc(handle, &shaped.dims, &shaped.strides, dt)
                            .map_err(|e| {
                                err(Error::new(
                                    e.code,
                                    format!(
                                        "execute: output uid {uid} ('{}'): {}",
                                        t.name, e.message
                                    ),
                                ))
                            })?;
                    result.set_item(uid, Bound::new(py, arr)?)?;
                    imported.push(dlpack::Imported::owned(uid, mem, dt));
                }
                None => {
                    let arr = new_array(
                        py,
                        uid,
                        &at_shape(overrides, uid, t),
                        g.context_data_type(t),
                    )?;
                    result.set_item(uid, &arr)?;
                    objs.push((uid, arr));
                }
            }
        }
    }
    for (uid, obj) in &objs {
        let attrs = g.tensor_by_uid(*uid).map(|id| g.tensor_attributes(id));
        // Bound writable: tensors a node writes, and every tensor of a plan loaded without
        // its graph (the SDK cannot say which ones it writes).
        let writable = attrs.is_none_or(|_| {
            g.tensor_by_uid(*uid)
                .and_then(|id| g.producer(id))
                .is_some()
        });
        let shaped = attrs.map(|t| at_shape(overrides, *uid, t));
        let expect = attrs
            .zip(shaped.as_ref())
            .map(|(t, s)| (&**s, g.context_data_type(t)));
        imported.push(dlpack::import(obj, *uid, expect, writable, &place)?.map_err(err)?);
    }
    // A writable binding must not overlap any other (it is a `&mut [u8]`, or device memory
    // an engine writes); host and device addresses are compared within their own kind.
    for (i, a) in imported.iter().enumerate() {
        for b in &imported[i + 1..] {
            let (a0, b0) = (a.ptr as usize, b.ptr as usize);
            let overlap = a.device == b.device
                && a.len > 0
                && b.len > 0
                && a0 < b0 + b.len
                && b0 < a0 + a.len;
            if overlap && (a.writable || b.writable) {
                return Err(err(Error::invalid_value(format!(
                    "execute: tensors uid {} and uid {} share memory and one is written; \
                     pass separate arrays",
                    a.uid, b.uid
                ))));
            }
        }
    }
    Ok((result, imported))
}

/// The SDK variant pack binding `imported` (and the shape `overrides`).
fn pack_of<'a>(imported: &'a mut [dlpack::Imported], overrides: &Overrides) -> VariantPack<'a> {
    let mut pack = VariantPack::new();
    for imp in imported.iter_mut() {
        let uid = imp.uid;
        pack = pack.with(uid, imp.binding());
    }
    for (uid, (dims, strides)) in overrides {
        pack = pack.override_shape(*uid, dims.clone(), strides.clone());
    }
    pack
}

#[pymethods]
impl PyGraph {
    /// An empty graph (SDK `Graph::new`).
    #[new]
    fn new() -> Self {
        PyGraph { g: Graph::new() }
    }

    // ---- settings ----

    /// Graph name.
    #[getter]
    fn name(&self) -> String {
        self.g.name().to_string()
    }
    /// Sets the graph name; returns the graph.
    fn set_name(slf: Bound<'_, Self>, name: String) -> Bound<'_, Self> {
        slf.borrow_mut().g.set_name(name);
        slf
    }
    /// Type of bound tensors left UNSET.
    #[getter]
    fn io_data_type(&self) -> &'static str {
        self.g.io_data_type().schema_name()
    }
    /// Type of virtual tensors left UNSET.
    #[getter]
    fn intermediate_data_type(&self) -> &'static str {
        self.g.intermediate_data_type().schema_name()
    }
    /// The nodes' default compute type.
    #[getter]
    fn compute_data_type(&self) -> &'static str {
        self.g.compute_data_type().schema_name()
    }
    /// Sets the io data type (`"FLOAT"`, ...); returns the graph.
    fn set_io_data_type<'py>(slf: Bound<'py, Self>, t: &str) -> PyResult<Bound<'py, Self>> {
        slf.borrow_mut().g.set_io_data_type(data_type(t)?);
        Ok(slf)
    }
    /// Sets the intermediate data type; returns the graph.
    fn set_intermediate_data_type<'py>(
        slf: Bound<'py, Self>,
        t: &str,
    ) -> PyResult<Bound<'py, Self>> {
        slf.borrow_mut().g.set_intermediate_data_type(data_type(t)?);
        Ok(slf)
    }
    /// Sets the compute data type; returns the graph.
    fn set_compute_data_type<'py>(slf: Bound<'py, Self>, t: &str) -> PyResult<Bound<'py, Self>> {
        slf.borrow_mut().g.set_compute_data_type(data_type(t)?);
        Ok(slf)
    }

    // ---- tensors ----

    /// Adds a tensor (SDK `Graph::tensor` of `TensorAttributes`); strides default to packed
    /// row-major.
    #[pyo3(signature = (name, dims, strides=None, data_type=None, uid=None, is_virtual=false, alignment=None))]
    #[allow(clippy::too_many_arguments)]
    fn tensor(
        slf: &Bound<'_, Self>,
        name: String,
        dims: Vec<i64>,
        strides: Option<Vec<i64>>,
        data_type: Option<&str>,
        uid: Option<i64>,
        is_virtual: bool,
        alignment: Option<i64>,
    ) -> PyResult<PyTensor> {
        let mut a = TensorAttributes::new(name)
            .dims(dims)
            .is_virtual(is_virtual);
        if let Some(s) = strides {
            a = a.strides(s);
        }
        if let Some(t) = data_type {
            a = a.data_type(self::data_type(t)?);
        }
        set_opt!(a; uid, alignment);
        let id = slf.borrow_mut().g.tensor(a);
        Ok(wrap(slf, id))
    }
    /// A new tensor with the dims, strides and data type of `like` (SDK `Graph::tensor_like`).
    fn tensor_like(
        slf: &Bound<'_, Self>,
        like: PyRef<'_, PyTensor>,
        name: String,
    ) -> PyResult<PyTensor> {
        let like = tid(slf, &like)?;
        let id = slf.borrow_mut().g.tensor_like(like, name);
        Ok(wrap(slf, id))
    }
    /// Adds a compile-time constant scalar (SDK `Graph::scalar`): `data_type` one of FLOAT,
    /// HALF, BFLOAT16, DOUBLE, INT32, INT64, BOOLEAN.
    #[pyo3(signature = (name, value, data_type="FLOAT"))]
    fn scalar(
        slf: &Bound<'_, Self>,
        name: String,
        value: &Bound<'_, PyAny>,
        data_type: &str,
    ) -> PyResult<PyTensor> {
        let v = match data_type {
            "FLOAT" => TensorValue::Float32(value.extract()?),
            "HALF" => TensorValue::Float16(value.extract()?),
            "BFLOAT16" => TensorValue::BFloat16(value.extract()?),
            "DOUBLE" => TensorValue::Float64(value.extract()?),
            "INT32" => TensorValue::Int32(value.extract()?),
            "INT64" => TensorValue::Int64(value.extract()?),
            "BOOLEAN" => TensorValue::Bool(value.extract()?),
            other => {
                return Err(err(Error::invalid_value(format!(
                    "scalar: data type '{other}' has no scalar value; one of FLOAT, HALF, \
                     BFLOAT16, DOUBLE, INT32, INT64, BOOLEAN"
                ))));
            }
        };
        let id = slf.borrow_mut().g.scalar(name, v);
        Ok(wrap(slf, id))
    }
    /// Marks `t` an output (not virtual) or not; returns the graph.
    #[pyo3(signature = (t, output=true))]
    fn set_output<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        output: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        slf.borrow_mut().g.set_output(id, output);
        Ok(slf)
    }
    /// Sets the UID of `t`; returns the graph.
    fn set_uid<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        uid: i64,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        slf.borrow_mut().g.set_uid(id, uid);
        Ok(slf)
    }
    /// Sets the data type of `t`; returns the graph.
    fn set_data_type<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        data_type: &str,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        let dt = self::data_type(data_type)?;
        slf.borrow_mut().g.set_data_type(id, dt);
        Ok(slf)
    }
    /// Sets the dims of `t` (strides repacked in its layout); returns the graph.
    fn set_dims<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        dims: Vec<i64>,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        slf.borrow_mut().g.set_dims(id, dims);
        Ok(slf)
    }
    /// Sets the strides of `t` (elements); returns the graph.
    fn set_strides<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        strides: Vec<i64>,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        slf.borrow_mut().g.set_strides(id, strides);
        Ok(slf)
    }
    /// Renames `t`; returns the graph.
    fn set_tensor_name<'py>(
        slf: Bound<'py, Self>,
        t: PyRef<'_, PyTensor>,
        name: String,
    ) -> PyResult<Bound<'py, Self>> {
        let id = tid(&slf, &t)?;
        slf.borrow_mut().g.set_tensor_name(id, name);
        Ok(slf)
    }
    /// Every tensor, in insertion order.
    fn tensors(slf: &Bound<'_, Self>) -> Vec<PyTensor> {
        let n = slf.borrow().g.tensor_count();
        (0..n).map(|i| wrap(slf, TensorId::from_index(i))).collect()
    }
    /// The tensors named `name`.
    fn tensors_by_name(slf: &Bound<'_, Self>, name: &str) -> Vec<PyTensor> {
        let ids = slf.borrow().g.tensors_by_name(name);
        ids.into_iter().map(|i| wrap(slf, i)).collect()
    }
    /// The tensor with UID `uid`, or None.
    fn tensor_by_uid(slf: &Bound<'_, Self>, uid: i64) -> Option<PyTensor> {
        let id = slf.borrow().g.tensor_by_uid(uid);
        id.map(|i| wrap(slf, i))
    }
    /// Number of nodes.
    fn node_count(&self) -> usize {
        self.g.node_count()
    }

    // ---- operations ----

    /// Unary pointwise op: `y = mode(x)` (SDK `Graph::pointwise_unary`).
    #[pyo3(signature = (x, mode, *, relu_lower_clip=None, relu_upper_clip=None, relu_lower_clip_slope=None, axis=None, swish_beta=None, elu_alpha=None, softplus_beta=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn pointwise_unary(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        mode: &str,
        relu_lower_clip: Option<f32>,
        relu_upper_clip: Option<f32>,
        relu_lower_clip_slope: Option<f32>,
        axis: Option<i64>,
        swish_beta: Option<f32>,
        elu_alpha: Option<f32>,
        softplus_beta: Option<f32>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let a = pointwise_attrs(
            mode,
            relu_lower_clip,
            relu_upper_clip,
            relu_lower_clip_slope,
            axis,
            swish_beta,
            elu_alpha,
            softplus_beta,
            name,
            compute_data_type,
        )?;
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.pointwise_unary(x, a);
        Ok(wrap(slf, y))
    }
    /// Binary pointwise op with broadcasting: `y = mode(a, b)` (SDK `Graph::pointwise`).
    #[pyo3(signature = (a, b, mode, *, relu_lower_clip=None, relu_upper_clip=None, relu_lower_clip_slope=None, axis=None, swish_beta=None, elu_alpha=None, softplus_beta=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn pointwise(
        slf: &Bound<'_, Self>,
        a: PyRef<'_, PyTensor>,
        b: PyRef<'_, PyTensor>,
        mode: &str,
        relu_lower_clip: Option<f32>,
        relu_upper_clip: Option<f32>,
        relu_lower_clip_slope: Option<f32>,
        axis: Option<i64>,
        swish_beta: Option<f32>,
        elu_alpha: Option<f32>,
        softplus_beta: Option<f32>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let at = pointwise_attrs(
            mode,
            relu_lower_clip,
            relu_upper_clip,
            relu_lower_clip_slope,
            axis,
            swish_beta,
            elu_alpha,
            softplus_beta,
            name,
            compute_data_type,
        )?;
        let (a, b) = (tid(slf, &a)?, tid(slf, &b)?);
        let y = slf.borrow_mut().g.pointwise(a, b, at);
        Ok(wrap(slf, y))
    }
    /// Ternary pointwise op (`BINARY_SELECT`): `y = mode(a, b, c)` (SDK
    /// `Graph::pointwise_ternary`).
    #[pyo3(signature = (a, b, c, mode, *, name=None, compute_data_type=None))]
    fn pointwise_ternary(
        slf: &Bound<'_, Self>,
        a: PyRef<'_, PyTensor>,
        b: PyRef<'_, PyTensor>,
        c: PyRef<'_, PyTensor>,
        mode: &str,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let at = pointwise_attrs(
            mode,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            name,
            compute_data_type,
        )?;
        let (a, b, c) = (tid(slf, &a)?, tid(slf, &b)?, tid(slf, &c)?);
        let y = slf.borrow_mut().g.pointwise_ternary(a, b, c, at);
        Ok(wrap(slf, y))
    }
    /// Batched matmul `c = a @ b` (SDK `Graph::matmul`).
    #[pyo3(signature = (a, b, *, name=None, compute_data_type=None))]
    fn matmul(
        slf: &Bound<'_, Self>,
        a: PyRef<'_, PyTensor>,
        b: PyRef<'_, PyTensor>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let at = common!(MatmulAttributes::new(), name, compute_data_type);
        let (a, b) = (tid(slf, &a)?, tid(slf, &b)?);
        let c = slf.borrow_mut().g.matmul(a, b, at);
        Ok(wrap(slf, c))
    }
    /// Forward convolution, x (N, C, spatial..) and w (K, C, window..) (SDK
    /// `Graph::conv_fprop`).
    #[pyo3(signature = (x, w, *, pre_padding=None, post_padding=None, stride=None, dilation=None, conv_mode=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn conv_fprop(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        w: PyRef<'_, PyTensor>,
        pre_padding: Option<Vec<i64>>,
        post_padding: Option<Vec<i64>>,
        stride: Option<Vec<i64>>,
        dilation: Option<Vec<i64>>,
        conv_mode: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(ConvFpropAttributes::new(), name, compute_data_type);
        let conv_mode = self::conv_mode(conv_mode)?;
        set_opt!(a; pre_padding, post_padding, stride, dilation, conv_mode);
        let (x, w) = (tid(slf, &x)?, tid(slf, &w)?);
        let y = slf.borrow_mut().g.conv_fprop(x, w, a);
        Ok(wrap(slf, y))
    }
    /// Convolution data gradient: dy and w → dx (SDK `Graph::conv_dgrad`).
    #[pyo3(signature = (dy, w, *, pre_padding=None, post_padding=None, stride=None, dilation=None, conv_mode=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn conv_dgrad(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        w: PyRef<'_, PyTensor>,
        pre_padding: Option<Vec<i64>>,
        post_padding: Option<Vec<i64>>,
        stride: Option<Vec<i64>>,
        dilation: Option<Vec<i64>>,
        conv_mode: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(ConvDgradAttributes::new(), name, compute_data_type);
        let conv_mode = self::conv_mode(conv_mode)?;
        set_opt!(a; pre_padding, post_padding, stride, dilation, conv_mode);
        let (dy, w) = (tid(slf, &dy)?, tid(slf, &w)?);
        let y = slf.borrow_mut().g.conv_dgrad(dy, w, a);
        Ok(wrap(slf, y))
    }
    /// Convolution filter gradient: dy and x → dw (SDK `Graph::conv_wgrad`).
    #[pyo3(signature = (dy, x, *, pre_padding=None, post_padding=None, stride=None, dilation=None, conv_mode=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn conv_wgrad(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        x: PyRef<'_, PyTensor>,
        pre_padding: Option<Vec<i64>>,
        post_padding: Option<Vec<i64>>,
        stride: Option<Vec<i64>>,
        dilation: Option<Vec<i64>>,
        conv_mode: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(ConvWgradAttributes::new(), name, compute_data_type);
        let conv_mode = self::conv_mode(conv_mode)?;
        set_opt!(a; pre_padding, post_padding, stride, dilation, conv_mode);
        let (dy, x) = (tid(slf, &dy)?, tid(slf, &x)?);
        let y = slf.borrow_mut().g.conv_wgrad(dy, x, a);
        Ok(wrap(slf, y))
    }
    /// Layer normalization (SDK `Graph::layernorm`): returns `(y, mean, inv_variance)`, the
    /// last two None unless `forward_phase="TRAINING"`.
    #[pyo3(signature = (x, scale, bias, *, epsilon, forward_phase, normalized_dim_count=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn layernorm(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        bias: PyRef<'_, PyTensor>,
        epsilon: PyRef<'_, PyTensor>,
        forward_phase: &str,
        normalized_dim_count: Option<i64>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, Option<PyTensor>, Option<PyTensor>)> {
        let mut a = common!(LayernormAttributes::new(), name, compute_data_type)
            .epsilon(tid(slf, &epsilon)?)
            .forward_phase(norm_phase(forward_phase)?);
        set_opt!(a; normalized_dim_count);
        let (x, s, b) = (tid(slf, &x)?, tid(slf, &scale)?, tid(slf, &bias)?);
        let (y, m, v) = slf.borrow_mut().g.layernorm(x, s, b, a);
        Ok((
            wrap(slf, y),
            m.map(|m| wrap(slf, m)),
            v.map(|v| wrap(slf, v)),
        ))
    }
    /// Inference layer norm with a float epsilon (SDK `Graph::layernorm_inference`).
    fn layernorm_inference(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        bias: PyRef<'_, PyTensor>,
        epsilon: f32,
    ) -> PyResult<PyTensor> {
        let (x, s, b) = (tid(slf, &x)?, tid(slf, &scale)?, tid(slf, &bias)?);
        let y = slf.borrow_mut().g.layernorm_inference(x, s, b, epsilon);
        Ok(wrap(slf, y))
    }
    /// RMS normalization (SDK `Graph::rmsnorm`): returns `(y, inv_rms)`, inv_rms None unless
    /// `forward_phase="TRAINING"`.
    #[pyo3(signature = (x, scale, *, epsilon, forward_phase, bias=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn rmsnorm(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        epsilon: PyRef<'_, PyTensor>,
        forward_phase: &str,
        bias: Option<PyRef<'_, PyTensor>>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, Option<PyTensor>)> {
        let mut a = common!(RmsNormAttributes::new(), name, compute_data_type)
            .epsilon(tid(slf, &epsilon)?)
            .forward_phase(norm_phase(forward_phase)?);
        let bias = opt_tid(slf, bias)?;
        set_opt!(a; bias);
        let (x, s) = (tid(slf, &x)?, tid(slf, &scale)?);
        let (y, r) = slf.borrow_mut().g.rmsnorm(x, s, a);
        Ok((wrap(slf, y), r.map(|r| wrap(slf, r))))
    }
    /// Inference RMS norm with a float epsilon (SDK `Graph::rmsnorm_inference`).
    fn rmsnorm_inference(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        epsilon: f32,
    ) -> PyResult<PyTensor> {
        let (x, s) = (tid(slf, &x)?, tid(slf, &scale)?);
        let y = slf.borrow_mut().g.rmsnorm_inference(x, s, epsilon);
        Ok(wrap(slf, y))
    }
    /// Softmax along `axis` (SDK `Graph::softmax`, five nodes).
    fn softmax(slf: &Bound<'_, Self>, x: PyRef<'_, PyTensor>, axis: usize) -> PyResult<PyTensor> {
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.softmax(x, axis).map_err(err)?;
        Ok(wrap(slf, y))
    }
    /// Log-softmax along `axis` (SDK `Graph::log_softmax`).
    fn log_softmax(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        axis: usize,
    ) -> PyResult<PyTensor> {
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.log_softmax(x, axis).map_err(err)?;
        Ok(wrap(slf, y))
    }
    /// Reduction to `out_dims` (reduced dims are 1) with `mode` (`"ADD"`, `"MAX_OP"`,
    /// `"AVG"`, ...) (SDK `Graph::reduction`).
    #[pyo3(signature = (x, out_dims, *, mode, is_deterministic=None, name=None, compute_data_type=None))]
    fn reduction(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        out_dims: Vec<i64>,
        mode: &str,
        is_deterministic: Option<bool>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mode = parse(
            hipdnn::ReductionMode::ALL,
            hipdnn::ReductionMode::schema_name,
            mode,
            "reduction mode",
        )?;
        let mut a = common!(
            ReductionAttributes::new().mode(mode),
            name,
            compute_data_type
        );
        set_opt!(a; is_deterministic);
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.reduction(x, out_dims, a);
        Ok(wrap(slf, y))
    }
    /// Global average pooling over the spatial dims (SDK `Graph::global_avg_pool`).
    fn global_avg_pool(slf: &Bound<'_, Self>, x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.global_avg_pool(x).map_err(err)?;
        Ok(wrap(slf, y))
    }
    /// Global max pooling over the spatial dims (SDK `Graph::global_max_pool`).
    fn global_max_pool(slf: &Bound<'_, Self>, x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.global_max_pool(x).map_err(err)?;
        Ok(wrap(slf, y))
    }
    /// Scaled dot-product attention, q/k/v (B, H, S, D) (SDK `Graph::sdpa`): returns
    /// `(o, stats)`, stats None unless `generate_stats=True`.
    #[pyo3(signature = (q, k, v, *, attn_scale_value=None, scale=None, attn_mask=None, causal_mask=None, causal_mask_bottom_right=None, padding_mask=None, alibi_mask=None, generate_stats=None, left_bound=None, right_bound=None, diagonal_alignment=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn sdpa(
        slf: &Bound<'_, Self>,
        q: PyRef<'_, PyTensor>,
        k: PyRef<'_, PyTensor>,
        v: PyRef<'_, PyTensor>,
        attn_scale_value: Option<f32>,
        scale: Option<PyRef<'_, PyTensor>>,
        attn_mask: Option<PyRef<'_, PyTensor>>,
        causal_mask: Option<bool>,
        causal_mask_bottom_right: Option<bool>,
        padding_mask: Option<bool>,
        alibi_mask: Option<bool>,
        generate_stats: Option<bool>,
        left_bound: Option<i64>,
        right_bound: Option<i64>,
        diagonal_alignment: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, Option<PyTensor>)> {
        let mut a = common!(SdpaAttributes::new(), name, compute_data_type);
        let scale = opt_tid(slf, scale)?;
        let attn_mask = opt_tid(slf, attn_mask)?;
        let diagonal_alignment = diagonal_alignment
            .map(|s| {
                parse(
                    hipdnn::DiagonalAlignment::ALL,
                    hipdnn::DiagonalAlignment::schema_name,
                    s,
                    "diagonal alignment",
                )
            })
            .transpose()?;
        set_opt!(a; attn_scale_value, scale, attn_mask, causal_mask, causal_mask_bottom_right,
                 padding_mask, alibi_mask, generate_stats, left_bound, right_bound, diagonal_alignment);
        let (q, k, v) = (tid(slf, &q)?, tid(slf, &k)?, tid(slf, &v)?);
        let (o, s) = slf.borrow_mut().g.sdpa(q, k, v, a);
        Ok((wrap(slf, o), s.map(|s| wrap(slf, s))))
    }
    /// Row gather / embedding lookup: `y[..., :] = table[index[...], :]` (SDK `Graph::gather`).
    fn gather(
        slf: &Bound<'_, Self>,
        table: PyRef<'_, PyTensor>,
        index: PyRef<'_, PyTensor>,
    ) -> PyResult<PyTensor> {
        let (t, i) = (tid(slf, &table)?, tid(slf, &index)?);
        let y = slf.borrow_mut().g.gather(t, i);
        Ok(wrap(slf, y))
    }
    /// A linear layer `act(x @ w + bias)` (SDK `Graph::linear`); `activation` one of
    /// `"none"`, `"relu"`, `"gelu"`, `"gelu_tanh"`, `"silu"`, `"sigmoid"`, `"tanh"`.
    #[pyo3(signature = (x, w, bias=None, activation="none"))]
    fn linear(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        w: PyRef<'_, PyTensor>,
        bias: Option<PyRef<'_, PyTensor>>,
        activation: &str,
    ) -> PyResult<PyTensor> {
        let act = match activation {
            "none" => Activation::None,
            "relu" => Activation::Relu,
            "gelu" => Activation::Gelu,
            "gelu_tanh" => Activation::GeluTanh,
            "silu" => Activation::Silu,
            "sigmoid" => Activation::Sigmoid,
            "tanh" => Activation::Tanh,
            other => {
                return Err(err(Error::invalid_value(format!(
                    "linear: unknown activation '{other}'; one of none, relu, gelu, gelu_tanh, \
                     silu, sigmoid, tanh"
                ))));
            }
        };
        let bias = opt_tid(slf, bias)?;
        let (x, w) = (tid(slf, &x)?, tid(slf, &w)?);
        let y = slf.borrow_mut().g.linear(x, w, bias, act);
        Ok(wrap(slf, y))
    }
    /// Pooling (SDK `Graph::resample`): returns `(y, index)`, index None unless
    /// `generate_index=True` with MAXPOOL.
    #[pyo3(signature = (x, *, resample_mode, window, stride, pre_padding, post_padding, padding_mode=None, generate_index=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn resample(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        resample_mode: &str,
        window: Vec<i64>,
        stride: Vec<i64>,
        pre_padding: Vec<i64>,
        post_padding: Vec<i64>,
        padding_mode: Option<&str>,
        generate_index: Option<bool>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, Option<PyTensor>)> {
        let mode = parse(
            hipdnn::ResampleMode::ALL,
            hipdnn::ResampleMode::schema_name,
            resample_mode,
            "resample mode",
        )?;
        let padding_mode = padding_mode
            .map(|s| {
                parse(
                    hipdnn::PaddingMode::ALL,
                    hipdnn::PaddingMode::schema_name,
                    s,
                    "padding mode",
                )
            })
            .transpose()?;
        let mut a = common!(ResampleFwdAttributes::new(), name, compute_data_type)
            .resample_mode(mode)
            .window(window)
            .stride(stride)
            .pre_padding(pre_padding)
            .post_padding(post_padding);
        set_opt!(a; padding_mode, generate_index);
        let x = tid(slf, &x)?;
        let (y, i) = slf.borrow_mut().g.resample(x, a);
        Ok((wrap(slf, y), i.map(|i| wrap(slf, i))))
    }
    /// Batchnorm inference `y = (x - mean) * inv_variance * scale + bias` (SDK
    /// `Graph::batchnorm_inference`).
    #[pyo3(signature = (x, mean, inv_variance, scale, bias, *, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn batchnorm_inference(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        mean: PyRef<'_, PyTensor>,
        inv_variance: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        bias: PyRef<'_, PyTensor>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let a = common!(BatchnormInferenceAttributes::new(), name, compute_data_type);
        let ids = [
            tid(slf, &x)?,
            tid(slf, &mean)?,
            tid(slf, &inv_variance)?,
            tid(slf, &scale)?,
            tid(slf, &bias)?,
        ];
        let y = slf
            .borrow_mut()
            .g
            .batchnorm_inference(ids[0], ids[1], ids[2], ids[3], ids[4], a);
        Ok(wrap(slf, y))
    }

    /// Batchnorm training forward (SDK `Graph::batchnorm`): returns `(y, mean, inv_variance,
    /// next_running_mean, next_running_variance)`, the last two None unless
    /// `prev_running_mean`, `prev_running_variance` and `momentum` are all given.
    #[pyo3(signature = (x, scale, bias, *, epsilon, peer_stats=None, prev_running_mean=None, prev_running_variance=None, momentum=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn batchnorm(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        bias: PyRef<'_, PyTensor>,
        epsilon: PyRef<'_, PyTensor>,
        peer_stats: Option<Vec<PyRef<'_, PyTensor>>>,
        prev_running_mean: Option<PyRef<'_, PyTensor>>,
        prev_running_variance: Option<PyRef<'_, PyTensor>>,
        momentum: Option<PyRef<'_, PyTensor>>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(
        PyTensor,
        PyTensor,
        PyTensor,
        Option<PyTensor>,
        Option<PyTensor>,
    )> {
        let mut a = common!(BatchnormAttributes::new(), name, compute_data_type)
            .epsilon(tid(slf, &epsilon)?);
        let peer_stats = tids(slf, peer_stats)?;
        let prev_running_mean = opt_tid(slf, prev_running_mean)?;
        let prev_running_variance = opt_tid(slf, prev_running_variance)?;
        let momentum = opt_tid(slf, momentum)?;
        set_opt!(a; peer_stats, prev_running_mean, prev_running_variance, momentum);
        let (x, s, b) = (tid(slf, &x)?, tid(slf, &scale)?, tid(slf, &bias)?);
        let o = slf.borrow_mut().g.batchnorm(x, s, b, a);
        Ok((
            wrap(slf, o.y),
            wrap(slf, o.mean),
            wrap(slf, o.inv_variance),
            o.next_running_mean.map(|t| wrap(slf, t)),
            o.next_running_variance.map(|t| wrap(slf, t)),
        ))
    }
    /// Batchnorm backward (SDK `Graph::batchnorm_backward`): returns `(dx, dscale, dbias)`.
    #[pyo3(signature = (dy, x, scale, *, mean=None, inv_variance=None, peer_stats=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn batchnorm_backward(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        mean: Option<PyRef<'_, PyTensor>>,
        inv_variance: Option<PyRef<'_, PyTensor>>,
        peer_stats: Option<Vec<PyRef<'_, PyTensor>>>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let mut a = common!(BatchnormBackwardAttributes::new(), name, compute_data_type);
        let mean = opt_tid(slf, mean)?;
        let inv_variance = opt_tid(slf, inv_variance)?;
        let peer_stats = tids(slf, peer_stats)?;
        set_opt!(a; mean, inv_variance, peer_stats);
        let (dy, x, s) = (tid(slf, &dy)?, tid(slf, &x)?, tid(slf, &scale)?);
        let [dx, ds, db] = slf.borrow_mut().g.batchnorm_backward(dy, x, s, a);
        Ok((wrap(slf, dx), wrap(slf, ds), wrap(slf, db)))
    }
    /// Batchnorm inference from the variance and an epsilon tensor (SDK
    /// `Graph::batchnorm_inference_variance_ext`).
    #[pyo3(signature = (x, mean, variance, scale, bias, epsilon, *, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn batchnorm_inference_variance_ext(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        mean: PyRef<'_, PyTensor>,
        variance: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        bias: PyRef<'_, PyTensor>,
        epsilon: PyRef<'_, PyTensor>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let a = common!(
            BatchnormInferenceVarianceExtAttributes::new(),
            name,
            compute_data_type
        );
        let ids = [
            tid(slf, &x)?,
            tid(slf, &mean)?,
            tid(slf, &variance)?,
            tid(slf, &scale)?,
            tid(slf, &bias)?,
            tid(slf, &epsilon)?,
        ];
        let y = slf
            .borrow_mut()
            .g
            .batchnorm_inference_variance_ext(ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], a);
        Ok(wrap(slf, y))
    }
    /// Layer normalization backward (SDK `Graph::layernorm_backward`): returns
    /// `(dx, dscale, dbias)`.
    #[pyo3(signature = (dy, x, scale, *, mean=None, inv_variance=None, epsilon=None, normalized_dim_count=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn layernorm_backward(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        mean: Option<PyRef<'_, PyTensor>>,
        inv_variance: Option<PyRef<'_, PyTensor>>,
        epsilon: Option<PyRef<'_, PyTensor>>,
        normalized_dim_count: Option<i64>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let mut a = common!(LayernormBackwardAttributes::new(), name, compute_data_type);
        let mean = opt_tid(slf, mean)?;
        let inv_variance = opt_tid(slf, inv_variance)?;
        let epsilon = opt_tid(slf, epsilon)?;
        set_opt!(a; mean, inv_variance, epsilon, normalized_dim_count);
        let (dy, x, s) = (tid(slf, &dy)?, tid(slf, &x)?, tid(slf, &scale)?);
        let [dx, ds, db] = slf.borrow_mut().g.layernorm_backward(dy, x, s, a);
        Ok((wrap(slf, dx), wrap(slf, ds), wrap(slf, db)))
    }
    /// RMS normalization backward (SDK `Graph::rmsnorm_backward`): returns
    /// `(dx, dscale, dbias)`, dbias None unless `compute_dbias=True`.
    #[pyo3(signature = (dy, x, scale, inv_rms, compute_dbias=false, *, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn rmsnorm_backward(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        inv_rms: PyRef<'_, PyTensor>,
        compute_dbias: bool,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, PyTensor, Option<PyTensor>)> {
        let a = common!(RmsNormBackwardAttributes::new(), name, compute_data_type);
        let ids = [
            tid(slf, &dy)?,
            tid(slf, &x)?,
            tid(slf, &scale)?,
            tid(slf, &inv_rms)?,
        ];
        let (dx, ds, db) =
            slf.borrow_mut()
                .g
                .rmsnorm_backward(ids[0], ids[1], ids[2], ids[3], compute_dbias, a);
        Ok((wrap(slf, dx), wrap(slf, ds), db.map(|t| wrap(slf, t))))
    }
    /// Scaled dot-product attention backward (SDK `Graph::sdpa_backward`): returns
    /// `(dq, dk, dv)`.
    #[pyo3(signature = (q, k, v, o, d_o, stats, *, attn_scale_value=None, scale=None, attn_mask=None, causal_mask=None, causal_mask_bottom_right=None, padding_mask=None, alibi_mask=None, dropout_probability=None, left_bound=None, right_bound=None, diagonal_alignment=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn sdpa_backward(
        slf: &Bound<'_, Self>,
        q: PyRef<'_, PyTensor>,
        k: PyRef<'_, PyTensor>,
        v: PyRef<'_, PyTensor>,
        o: PyRef<'_, PyTensor>,
        d_o: PyRef<'_, PyTensor>,
        stats: PyRef<'_, PyTensor>,
        attn_scale_value: Option<f32>,
        scale: Option<PyRef<'_, PyTensor>>,
        attn_mask: Option<PyRef<'_, PyTensor>>,
        causal_mask: Option<bool>,
        causal_mask_bottom_right: Option<bool>,
        padding_mask: Option<bool>,
        alibi_mask: Option<bool>,
        dropout_probability: Option<f32>,
        left_bound: Option<i64>,
        right_bound: Option<i64>,
        diagonal_alignment: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
        let mut a = common!(SdpaBackwardAttributes::new(), name, compute_data_type);
        let scale = opt_tid(slf, scale)?;
        let attn_mask = opt_tid(slf, attn_mask)?;
        let diagonal_alignment = diag_alignment(diagonal_alignment)?;
        set_opt!(a; attn_scale_value, scale, attn_mask, causal_mask, causal_mask_bottom_right,
                 padding_mask, alibi_mask, dropout_probability, left_bound, right_bound,
                 diagonal_alignment);
        let ids = [
            tid(slf, &q)?,
            tid(slf, &k)?,
            tid(slf, &v)?,
            tid(slf, &o)?,
            tid(slf, &d_o)?,
            tid(slf, &stats)?,
        ];
        let [dq, dk, dv] = slf
            .borrow_mut()
            .g
            .sdpa_backward(ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], a);
        Ok((wrap(slf, dq), wrap(slf, dk), wrap(slf, dv)))
    }
    /// Resample forward without an index output (SDK `Graph::resample_fwd`): returns y.
    #[pyo3(signature = (x, *, resample_mode, window, stride, pre_padding, post_padding, padding_mode=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn resample_fwd(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        resample_mode: &str,
        window: Vec<i64>,
        stride: Vec<i64>,
        pre_padding: Vec<i64>,
        post_padding: Vec<i64>,
        padding_mode: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(ResampleFwdAttributes::new(), name, compute_data_type)
            .resample_mode(resample_mode_of(resample_mode)?)
            .window(window)
            .stride(stride)
            .pre_padding(pre_padding)
            .post_padding(post_padding);
        let padding_mode = padding_mode_of(padding_mode)?;
        set_opt!(a; padding_mode);
        let x = tid(slf, &x)?;
        let y = slf.borrow_mut().g.resample_fwd(x, a);
        Ok(wrap(slf, y))
    }
    /// Resample backward (SDK `Graph::resample_bwd`): dy and, for MAXPOOL, the forward's
    /// index → dx (set other dims with `set_dims` when the inferred ones differ).
    #[pyo3(signature = (dy, index=None, *, resample_mode, window, stride, pre_padding, post_padding, padding_mode=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn resample_bwd(
        slf: &Bound<'_, Self>,
        dy: PyRef<'_, PyTensor>,
        index: Option<PyRef<'_, PyTensor>>,
        resample_mode: &str,
        window: Vec<i64>,
        stride: Vec<i64>,
        pre_padding: Vec<i64>,
        post_padding: Vec<i64>,
        padding_mode: Option<&str>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(ResampleBwdAttributes::new(), name, compute_data_type)
            .resample_mode(resample_mode_of(resample_mode)?)
            .window(window)
            .stride(stride)
            .pre_padding(pre_padding)
            .post_padding(post_padding);
        let padding_mode = padding_mode_of(padding_mode)?;
        set_opt!(a; padding_mode);
        let index = opt_tid(slf, index)?;
        let dy = tid(slf, &dy)?;
        let dx = slf.borrow_mut().g.resample_bwd(dy, index, a);
        Ok(wrap(slf, dx))
    }
    /// Block-scaled quantization (SDK `Graph::block_scale_quantize`): returns `(y, scale)`.
    /// No engine of this project runs it yet (build raises GRAPH_NOT_SUPPORTED on the CPU).
    #[pyo3(signature = (x, *, block_size, axis=None, transpose=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn block_scale_quantize(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        block_size: i32,
        axis: Option<i64>,
        transpose: Option<bool>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<(PyTensor, PyTensor)> {
        let mut a = common!(BlockScaleQuantizeAttributes::new(), name, compute_data_type)
            .block_size(block_size);
        set_opt!(a; axis, transpose);
        let x = tid(slf, &x)?;
        let (y, s) = slf.borrow_mut().g.block_scale_quantize(x, a);
        Ok((wrap(slf, y), wrap(slf, s)))
    }
    /// Block-scaled dequantization (SDK `Graph::block_scale_dequantize`): returns y. No engine
    /// of this project runs it yet.
    #[pyo3(signature = (x, scale, *, block_size, is_negative_scale=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn block_scale_dequantize(
        slf: &Bound<'_, Self>,
        x: PyRef<'_, PyTensor>,
        scale: PyRef<'_, PyTensor>,
        block_size: Vec<i32>,
        is_negative_scale: Option<bool>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(
            BlockScaleDequantizeAttributes::new(),
            name,
            compute_data_type
        )
        .block_size(block_size);
        set_opt!(a; is_negative_scale);
        let (x, s) = (tid(slf, &x)?, tid(slf, &scale)?);
        let y = slf.borrow_mut().g.block_scale_dequantize(x, s, a);
        Ok(wrap(slf, y))
    }
    /// A plugin operation (SDK `Graph::custom_op`): returns the list of its `num_outputs`
    /// outputs `OUT_<i>`, created with empty dims (set them with `set_dims`). `inputs` must not
    /// be empty. The engines of this project serve only their own custom ops (`gather`).
    #[pyo3(signature = (inputs, num_outputs, *, custom_op_id, data=None, name=None, compute_data_type=None))]
    fn custom_op(
        slf: &Bound<'_, Self>,
        inputs: Vec<PyRef<'_, PyTensor>>,
        num_outputs: usize,
        custom_op_id: String,
        data: Option<Vec<u8>>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<Vec<PyTensor>> {
        if inputs.is_empty() {
            return Err(err(Error::invalid_value(
                "custom_op: inputs is empty; pass at least one input tensor",
            )));
        }
        let mut a =
            common!(CustomOpAttributes::new(), name, compute_data_type).custom_op_id(custom_op_id);
        set_opt!(a; data);
        let ids = inputs
            .iter()
            .map(|t| tid(slf, t))
            .collect::<PyResult<Vec<_>>>()?;
        let outs = slf.borrow_mut().g.custom_op(&ids, num_outputs, a);
        Ok(outs.into_iter().map(|t| wrap(slf, t)).collect())
    }
    /// Mixture-of-experts grouped matmul (SDK `Graph::moe_grouped_matmul`): returns the
    /// output (T, N). No engine of this project runs it yet.
    #[pyo3(signature = (token, weight, first_token_offset, token_index=None, token_ks=None, *, mode=None, top_k=None, name=None, compute_data_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn moe_grouped_matmul(
        slf: &Bound<'_, Self>,
        token: PyRef<'_, PyTensor>,
        weight: PyRef<'_, PyTensor>,
        first_token_offset: PyRef<'_, PyTensor>,
        token_index: Option<PyRef<'_, PyTensor>>,
        token_ks: Option<PyRef<'_, PyTensor>>,
        mode: Option<&str>,
        top_k: Option<i32>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let mut a = common!(MoeGroupedMatmulAttributes::new(), name, compute_data_type);
        let mode = mode
            .map(|s| {
                parse(
                    hipdnn::MoeGroupedMatmulMode::ALL,
                    hipdnn::MoeGroupedMatmulMode::schema_name,
                    s,
                    "moe grouped matmul mode",
                )
            })
            .transpose()?;
        set_opt!(a; mode, top_k);
        let token_index = opt_tid(slf, token_index)?;
        let token_ks = opt_tid(slf, token_ks)?;
        let ids = [
            tid(slf, &token)?,
            tid(slf, &weight)?,
            tid(slf, &first_token_offset)?,
        ];
        let y =
            slf.borrow_mut()
                .g
                .moe_grouped_matmul(ids[0], ids[1], ids[2], token_index, token_ks, a);
        Ok(wrap(slf, y))
    }
    /// Mixture-of-experts grouped matmul weight gradient (SDK
    /// `Graph::moe_grouped_matmul_bwd`): returns dweight (E, K, N). No engine of this project
    /// runs it yet.
    #[pyo3(signature = (doutput, token, first_token_offset, *, name=None, compute_data_type=None))]
    fn moe_grouped_matmul_bwd(
        slf: &Bound<'_, Self>,
        doutput: PyRef<'_, PyTensor>,
        token: PyRef<'_, PyTensor>,
        first_token_offset: PyRef<'_, PyTensor>,
        name: Option<String>,
        compute_data_type: Option<&str>,
    ) -> PyResult<PyTensor> {
        let a = common!(
            MoeGroupedMatmulBwdAttributes::new(),
            name,
            compute_data_type
        );
        let ids = [
            tid(slf, &doutput)?,
            tid(slf, &token)?,
            tid(slf, &first_token_offset)?,
        ];
        let y = slf
            .borrow_mut()
            .g
            .moe_grouped_matmul_bwd(ids[0], ids[1], ids[2], a);
        Ok(wrap(slf, y))
    }

    // ---- checking, building, running ----

    /// Checks the graph without a handle (SDK `Graph::validate`).
    fn validate(&self) -> PyResult<()> {
        self.g.validate().map_err(err)
    }
    /// Builds an execution plan on `handle` (SDK `Graph::build`).
    fn build(&mut self, handle: &PyHandle) -> PyResult<()> {
        self.g.build(&handle.h).map_err(err)
    }
    /// Builds with benchmarking: engines offering it time their kernels and keep the fastest
    /// (SDK `Graph::build_benchmarked`; on the CPU the same as `build`).
    fn build_benchmarked(&mut self, handle: &PyHandle) -> PyResult<()> {
        self.g.build_benchmarked(&handle.h).map_err(err)
    }
    /// `build` with the heuristic modes to use, in order (SDK `Graph::build_with`; one mode
    /// today: `"FALLBACK"`).
    fn build_with(&mut self, handle: &PyHandle, modes: Vec<String>) -> PyResult<()> {
        let modes = modes
            .iter()
            .map(|m| heuristic_mode(m))
            .collect::<PyResult<Vec<_>>>()?;
        self.g.build_with(&handle.h, &modes).map_err(err)
    }
    /// `build` with engine knob choices `[(knob_type, value), ...]`, applied to every engine
    /// that lists the knob with the value in range (SDK `Graph::build_with_knobs`).
    fn build_with_knobs(&mut self, handle: &PyHandle, knobs: Vec<(i64, i64)>) -> PyResult<()> {
        self.g.build_with_knobs(&handle.h, &knobs).map_err(err)
    }
    /// Later builds skip the engines with these names (SDK `Graph::deselect_engines`);
    /// returns the graph.
    fn deselect_engines(slf: Bound<'_, Self>, names: Vec<String>) -> Bound<'_, Self> {
        slf.borrow_mut().g.deselect_engines(names);
        slf
    }
    /// Later builds skip plans needing more than `bytes` of workspace (SDK
    /// `Graph::deselect_workspace_greater_than`); returns the graph.
    fn deselect_workspace_greater_than(slf: Bound<'_, Self>, bytes: usize) -> Bound<'_, Self> {
        slf.borrow_mut().g.deselect_workspace_greater_than(bytes);
        slf
    }
    /// Later builds keep only engines noted with every listed numerical note (`"WINOGRAD"`,
    /// ...; `NUMERICAL_NOTES`) (SDK `Graph::select_numeric_notes`); returns the graph.
    fn select_numeric_notes<'py>(
        slf: Bound<'py, Self>,
        notes: Vec<String>,
    ) -> PyResult<Bound<'py, Self>> {
        let notes = notes
            .iter()
            .map(|n| numerical_note(n))
            .collect::<PyResult<Vec<_>>>()?;
        slf.borrow_mut().g.select_numeric_notes(notes);
        Ok(slf)
    }
    /// Later builds skip engines noted with any listed numerical note (SDK
    /// `Graph::deselect_numeric_notes`); returns the graph.
    fn deselect_numeric_notes<'py>(
        slf: Bound<'py, Self>,
        notes: Vec<String>,
    ) -> PyResult<Bound<'py, Self>> {
        let notes = notes
            .iter()
            .map(|n| numerical_note(n))
            .collect::<PyResult<Vec<_>>>()?;
        slf.borrow_mut().g.deselect_numeric_notes(notes);
        Ok(slf)
    }
    /// Later builds skip engines noted with any listed behavior note (`BEHAVIOR_NOTES`) (SDK
    /// `Graph::deselect_behavior_notes`); returns the graph.
    fn deselect_behavior_notes<'py>(
        slf: Bound<'py, Self>,
        notes: Vec<String>,
    ) -> PyResult<Bound<'py, Self>> {
        let notes = notes
            .iter()
            .map(|n| behavior_note(n))
            .collect::<PyResult<Vec<_>>>()?;
        slf.borrow_mut().g.deselect_behavior_notes(notes);
        Ok(slf)
    }
    /// Removes every engine filter (SDK `Graph::clear_engine_filters`); returns the graph.
    fn clear_engine_filters(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf.borrow_mut().g.clear_engine_filters();
        slf
    }
    /// The plan's numerical notes, by name (SDK `Graph::numerical_notes`).
    fn numerical_notes(&self) -> PyResult<Vec<&'static str>> {
        Ok(self
            .g
            .numerical_notes()
            .map_err(err)?
            .iter()
            .map(|n| n.name())
            .collect())
    }
    /// Id of the engine running the plan (SDK `Graph::execution_plan_engine_id`).
    fn execution_plan_engine_id(&self) -> PyResult<i64> {
        self.g.execution_plan_engine_id().map_err(err)
    }
    /// Knob choices `[(knob_type, value)]` the plan was built with (SDK
    /// `Graph::execution_plan_knob_choices`).
    fn execution_plan_knob_choices(&self) -> PyResult<Vec<(i64, i64)>> {
        self.g.execution_plan_knob_choices().map_err(err)
    }
    /// The preferred engine id (None when unset) (SDK `Graph::preferred_engine_id`).
    #[getter]
    fn preferred_engine_id(&self) -> Option<i64> {
        self.g.preferred_engine_id()
    }
    /// Sets (or with None clears) the engine the heuristic offers first (SDK
    /// `Graph::set_preferred_engine_id`); returns the graph.
    fn set_preferred_engine_id(slf: Bound<'_, Self>, id: Option<i64>) -> Bound<'_, Self> {
        slf.borrow_mut().g.set_preferred_engine_id(id);
        slf
    }
    /// Times every candidate plan on the caller's tensors and keeps the fastest as the plan
    /// (SDK `Graph::autotune`, upstream RFC 0013). `tensors` as for `execute` (outputs left
    /// out are allocated); `config` a dict of `AutotuneConfig` fields (`mode` `"STANDARD"` /
    /// `"EXHAUSTIVE"`, `strategy` `"SINGLE_SHOT"` / `"FIXED_AVERAGE"` / `"RUN_UNTIL_STABLE"`,
    /// `warmup_iterations`, `timed_iterations`, `max_iterations`, `window_size`,
    /// `stability_threshold`, `engine_id_filter`, `candidates` `[(engine_id, [(knob, value)])]`,
    /// `priming_failure_policy` `"ABORT"` / `"BENCHMARK_UNPRIMED"`), the SDK's defaults for
    /// keys left out; `storage` an engine-override file to write the winner to. Returns one
    /// dict per candidate with the SDK's `AutotuneResult` fields, by rank, failed ones last.
    #[pyo3(signature = (handle, tensors, config=None, storage=None, delete_all_existing_content=false))]
    fn autotune<'py>(
        slf: &Bound<'py, Self>,
        handle: &PyHandle,
        tensors: &Bound<'py, PyDict>,
        config: Option<&Bound<'py, PyDict>>,
        storage: Option<std::path::PathBuf>,
        delete_all_existing_content: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let py = slf.py();
        let config = autotune_config(config)?;
        let storage = storage.map(|p| AutotuneStorage {
            path: p,
            delete_all_existing_content,
        });
        let overrides = Overrides::new();
        let (_, mut imported) = import_all(&slf.borrow().g, &handle.h, tensors, &overrides, true)?;
        let pack = pack_of(&mut imported, &overrides);
        let results = slf
            .borrow_mut()
            .g
            .autotune(&handle.h, pack, &config, storage.as_ref())
            .map_err(err)?;
        drop(imported);
        results.iter().map(|r| result_dict(py, r)).collect()
    }
    /// The shape overrides that run this graph (built at its largest shape) at the shape of
    /// `smaller`, the same graph made for a smaller shape (SDK `Graph::shape_overrides_for`):
    /// `{uid: (dims, strides)}` for every non-virtual tensor whose shape differs, ready for
    /// `execute(..., overrides=...)`.
    fn shape_overrides_for(&self, smaller: &PyGraph) -> PyResult<Overrides> {
        Ok(self
            .g
            .shape_overrides_for(&smaller.g)
            .map_err(err)?
            .into_iter()
            .map(|o| (o.uid, (o.dims, o.strides)))
            .collect())
    }
    /// Whether execute-time shape overrides are enabled (SDK
    /// `Graph::is_override_shape_enabled`).
    fn is_override_shape_enabled(&self) -> bool {
        self.g.is_override_shape_enabled()
    }
    /// Enables execute-time shape overrides (before build): the graph's dims are then the
    /// largest each tensor takes (SDK `Graph::set_override_shape_enabled`). Returns the graph.
    fn set_override_shape_enabled(slf: Bound<'_, Self>, on: bool) -> Bound<'_, Self> {
        slf.borrow_mut().g.set_override_shape_enabled(on);
        slf
    }
    /// True when the graph has an execution plan (built or loaded).
    fn has_plan(&self) -> bool {
        self.g.has_plan()
    }
    /// Name of the plan's engine (SDK `Graph::engine_name`).
    fn engine_name(&self) -> PyResult<String> {
        self.g.engine_name().map(str::to_string).map_err(err)
    }
    /// Workspace bytes the plan needs (execute allocates it).
    fn workspace_size(&self) -> PyResult<usize> {
        self.g.workspace_size().map_err(err)
    }
    /// Runs the plan (SDK `Graph::execute`). `tensors` maps UID → an object with `__dlpack__`
    /// bound without a copy: NumPy arrays and torch CPU tensors (host memory), and on a GPU
    /// handle torch CUDA/ROCm tensors of the handle's device (bound by device address;
    /// exported with the legacy default stream's `stream` value, the stream executes run on).
    /// Outputs of the graph missing from it are allocated: new NumPy arrays on a CPU handle,
    /// new `DeviceArray`s on a GPU handle. Returns {uid: array} of every output of the graph
    /// (the caller's objects for the outputs it passed). On a GPU handle the call returns once
    /// the work is queued on the device's default stream.
    ///
    /// `overrides` maps UID → `(dims, strides)`: execute-time shape overrides (SDK
    /// `VariantPack::override_shape`, upstream RFC 0008) for a graph built with
    /// `set_override_shape_enabled(True)` at its largest shape; arrays are checked against (and
    /// new outputs allocated at) the override's shape. `Graph.shape_overrides_for(smaller)`
    /// computes them from the same graph made at the smaller shape.
    #[pyo3(signature = (handle, tensors, overrides=None))]
    fn execute<'py>(
        slf: &Bound<'py, Self>,
        handle: &PyHandle,
        tensors: &Bound<'py, PyDict>,
        overrides: Option<Overrides>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let this = slf.borrow();
        let g = &this.g;
        let overrides = overrides.unwrap_or_default();
        let (result, mut imported) = import_all(g, &handle.h, tensors, &overrides, g.has_plan())?;
        // The workspace lives where the plan runs (device memory on a GPU handle).
        let n = g.workspace_size().map_err(err)?;
        let mut ws = if n > 0 {
            Some(Buffer::<u8>::alloc(&handle.h, n).map_err(err)?)
        } else {
            None
        };
        let pack = pack_of(&mut imported, &overrides);
        g.execute(&handle.h, pack, ws.as_mut()).map_err(err)?;
        drop(imported); // the producers' deleters run here, with the GIL held
        Ok(result)
    }

    // ---- saving and loading ----

    /// The graph with its plan (an HDGP container), or the bare graph without a saveable
    /// plan (SDK `Graph::to_binary`).
    fn to_binary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.g.to_binary().map_err(err)?))
    }
    /// Loads a graph (with its plan when saved with one) on `handle` (SDK
    /// `Graph::from_binary`).
    #[staticmethod]
    fn from_binary(handle: &PyHandle, data: &[u8]) -> PyResult<Self> {
        Ok(PyGraph {
            g: Graph::from_binary(&handle.h, data).map_err(err)?,
        })
    }
    /// The plan alone (SDK `Graph::to_compiled_plan_binary`).
    fn to_compiled_plan_binary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(
            py,
            &self.g.to_compiled_plan_binary().map_err(err)?,
        ))
    }
    /// Loads a plan saved alone (SDK `Graph::from_compiled_plan_binary`); execute binds it by
    /// UID and every output must be passed.
    #[staticmethod]
    fn from_compiled_plan_binary(handle: &PyHandle, data: &[u8]) -> PyResult<Self> {
        Ok(PyGraph {
            g: Graph::from_compiled_plan_binary(&handle.h, data).map_err(err)?,
        })
    }
    /// Saves the graph to `path` atomically (a temporary file renamed over `path`; readers see
    /// the old file or the new one, whole) in `form`: `"GRAPH_AND_PLAN"` (the bytes of
    /// `to_binary`) or `"PLAN_ONLY"` (those of `to_compiled_plan_binary`) (SDK
    /// `Graph::save_to_file`).
    #[pyo3(signature = (path, form="GRAPH_AND_PLAN"))]
    fn save_to_file(&self, path: std::path::PathBuf, form: &str) -> PyResult<()> {
        let form = parse(
            &[
                (hipdnn::Form::GraphAndPlan, "GRAPH_AND_PLAN"),
                (hipdnn::Form::PlanOnly, "PLAN_ONLY"),
            ],
            |(_, n)| n,
            form,
            "save form",
        )?
        .0;
        self.g.save_to_file(path, form).map_err(err)
    }
    /// Loads a file `save_to_file` wrote, in either form (SDK `Graph::load_from_file`).
    #[staticmethod]
    fn load_from_file(handle: &PyHandle, path: std::path::PathBuf) -> PyResult<Self> {
        Ok(PyGraph {
            g: Graph::load_from_file(&handle.h, path).map_err(err)?,
        })
    }
    /// The graph as upstream hipDNN's JSON (SDK `Graph::to_json`).
    fn to_json(&self) -> PyResult<String> {
        self.g.to_json().map_err(err)
    }
    /// A graph from upstream hipDNN's JSON (SDK `Graph::from_json`).
    #[staticmethod]
    fn from_json(json: &str) -> PyResult<Self> {
        Ok(PyGraph {
            g: Graph::from_json(json).map_err(err)?,
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "Graph(name={:?}, tensors={}, nodes={}, plan={})",
            self.g.name(),
            self.g.tensor_count(),
            self.g.node_count(),
            self.g.has_plan()
        )
    }
}

/// Schema names of an enum.
fn names<E: Copy>(all: &[E], name: impl Fn(E) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|&e| name(e)).collect()
}

/// The engine id of an engine name (SDK `engine_id_from_name`, 64-bit FNV-1a), e.g. for
/// autotune's `engine_id_filter`.
#[pyfunction]
fn engine_id_from_name(name: &str) -> i64 {
    hipdnn::engine_id_from_name(name)
}

/// A NumPy array viewing the memory of `obj` (any object with `__dlpack__` on the CPU: a
/// torch CPU tensor, an array `execute` returned, ...) without a copy: `numpy.from_dlpack`
/// after the device check `execute` makes (HipdnnError INVALID_VALUE for a non-CPU tensor).
#[pyfunction]
fn from_dlpack<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let (device, _): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
    if device != dlpack::KDL_CPU {
        return Err(err(Error::invalid_value(format!(
            "from_dlpack: the tensor is on DLPack device type {device}, not the CPU (1); this \
             function makes NumPy views of host memory only (torch.from_dlpack views device \
             tensors and DeviceArrays)"
        ))));
    }
    py.import("numpy")?.call_method1("from_dlpack", (obj,))
}

/// The Python module `hipdnn_rs`.
#[pymodule]
fn hipdnn_rs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("HipdnnError", m.py().get_type::<HipdnnError>())?;
    m.add_class::<PyHandle>()?;
    m.add_class::<PyGraph>()?;
    m.add_class::<PyTensor>()?;
    m.add_class::<device::DeviceArray>()?;
    use hipdnn::*;
    m.add("DATA_TYPES", names(DataType::ALL, DataType::schema_name))?;
    m.add(
        "POINTWISE_MODES",
        names(PointwiseMode::ALL, PointwiseMode::schema_name),
    )?;
    m.add(
        "REDUCTION_MODES",
        names(ReductionMode::ALL, ReductionMode::schema_name),
    )?;
    m.add(
        "RESAMPLE_MODES",
        names(ResampleMode::ALL, ResampleMode::schema_name),
    )?;
    m.add(
        "NORM_FWD_PHASES",
        names(NormFwdPhase::ALL, NormFwdPhase::schema_name),
    )?;
    m.add("CONV_MODES", names(ConvMode::ALL, ConvMode::schema_name))?;
    m.add(
        "PADDING_MODES",
        names(PaddingMode::ALL, PaddingMode::schema_name),
    )?;
    m.add(
        "MOE_GROUPED_MATMUL_MODES",
        names(MoeGroupedMatmulMode::ALL, MoeGroupedMatmulMode::schema_name),
    )?;
    // Arity (number of inputs) of each pointwise mode, as the SDK's op table gives it.
    let arity = PyDict::new(m.py());
    for &p in PointwiseMode::ALL {
        arity.set_item(p.schema_name(), p.arity())?;
    }
    m.add("POINTWISE_ARITY", arity)?;
    m.add(
        "NUMERICAL_NOTES",
        NUMERICAL_NOTES.iter().map(|n| n.name()).collect::<Vec<_>>(),
    )?;
    m.add(
        "BEHAVIOR_NOTES",
        BEHAVIOR_NOTES.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
    )?;
    m.add_function(wrap_pyfunction!(crate::engine_id_from_name, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
