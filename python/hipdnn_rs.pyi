"""hipdnn_rs: Python bindings of hipdnn-rs (a thin PyO3 layer over the Rust SDK `hipdnn`).

Build a Graph of tensors and operations, build it for a Handle, execute it on arrays passed
through DLPack (NumPy, torch CPU tensors; torch CUDA/ROCm tensors on a GPU handle; no copy),
save and load it. Enums are their schema
names as strings ("FLOAT", "RELU_FWD", ...). Errors raise HipdnnError. See docs/python.md.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

__version__: str
DATA_TYPES: List[str]
"""Schema names of the data types ("UNSET", "FLOAT", "HALF", "BFLOAT16", ...)."""
POINTWISE_MODES: List[str]
"""Schema names of the pointwise modes ("ABS", "ADD", ..., "TANH_FWD")."""
POINTWISE_ARITY: Dict[str, int]
"""Number of inputs of each pointwise mode (1 unary, 2 binary, 3 BINARY_SELECT, 0 UNSET)."""
REDUCTION_MODES: List[str]
"""Schema names of the reduction modes ("ADD", "MAX_OP", "AVG", ...)."""
RESAMPLE_MODES: List[str]
"""Schema names of the resample (pooling) modes."""
NORM_FWD_PHASES: List[str]
"""Schema names of the normalization phases ("INFERENCE", "TRAINING")."""
CONV_MODES: List[str]
"""Schema names of the convolution modes."""
PADDING_MODES: List[str]
"""Schema names of the resample padding modes."""
MOE_GROUPED_MATMUL_MODES: List[str]
"""Schema names of the MoE grouped matmul modes."""
NUMERICAL_NOTES: List[str]
"""Numerical note names ("TENSOR_CORE", ..., "NONDETERMINISTIC", "WINOGRAD", ...)."""
BEHAVIOR_NOTES: List[str]
"""Behavior note names ("RUNTIME_COMPILATION", ..., "SUPPORTS_EXECUTION_PLAN_SERIALIZATION")."""

def engine_id_from_name(name: str) -> int:
    """The engine id of an engine name (SDK engine_id_from_name, 64-bit FNV-1a)."""

def from_dlpack(obj: Any) -> Any:
    """A NumPy array viewing a CPU DLPack producer's memory without a copy (numpy.from_dlpack
    after a CPU device check: HipdnnError INVALID_VALUE otherwise). NumPy marks views of
    legacy (unversioned) capsules read-only."""

class HipdnnError(Exception):
    """An SDK error. str(e) is "<code>: <message>"."""

    code: str
    """The SDK's error code name: INVALID_VALUE, HIPDNN_BACKEND_ERROR, ATTRIBUTE_NOT_SET, GRAPH_NOT_SUPPORTED."""
    message: str
    """The SDK's message."""
    backend_status: Optional[str]
    """The backend status ("BAD_PARAM", ...) when a backend call failed, else None."""

class Handle:
    """The engines a graph is built for and the device they run on."""

    def __init__(self) -> None:
        """The GPU when one is usable, else the CPU (SDK Handle::new)."""
    @staticmethod
    def cpu() -> "Handle":
        """A handle on the CPU reference engine (SDK Handle::cpu)."""
    @staticmethod
    def gpu() -> "Handle":
        """A handle on the first usable GPU; HipdnnError GRAPH_NOT_SUPPORTED without one."""
    @property
    def is_gpu(self) -> bool:
        """True when the handle executes on a GPU."""
    @property
    def device_arch(self) -> str:
        """"cpu", "sm_90", "gfx942", ..."""
    @property
    def engine_names(self) -> List[str]:
        """The registered engines in heuristic order."""
    @property
    def deterministic_only(self) -> bool:
        """Whether builds refuse engines noted NONDETERMINISTIC."""
    def set_deterministic_only(self, on: bool) -> None:
        """Makes builds on this handle refuse engines noted NONDETERMINISTIC."""
    @property
    def engine_override_file(self) -> Optional[str]:
        """The engine-override file builds read (set here, else HIPDNN_HEUR_CONFIG_PATH), if any."""
    def set_engine_override_file(self, path: Optional[str]) -> None:
        """Reads engine-override rules (and autotune winners) from path; None turns them off."""

class DeviceArray:
    """GPU memory execute allocated for an output the caller left out (GPU handles only): a
    DLPack producer that torch.from_dlpack views without a copy. The memory is freed when the
    array and every DLPack view of it are gone."""

    @property
    def shape(self) -> Tuple[int, ...]:
        """Extents."""
    @property
    def strides(self) -> Tuple[int, ...]:
        """Strides in elements (as torch's stride())."""
    @property
    def dtype(self) -> str:
        """Element type by schema name ("FLOAT", ...)."""
    @property
    def device(self) -> str:
        """"cuda:<ordinal>" (NVIDIA) or "rocm:<ordinal>" (AMD)."""
    @property
    def nbytes(self) -> int:
        """Bytes of device memory (the tensor's extent)."""
    def data_ptr(self) -> int:
        """Device address of the first element (as torch's data_ptr())."""
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A legacy "dltensor" capsule viewing the memory, after synchronizing the device's
        default stream (ready for any consumer stream). copy=True and another dl_device raise
        BufferError."""
    def __dlpack_device__(self) -> Tuple[int, int]:
        """(2, ordinal) on CUDA, (10, ordinal) on ROCm."""
    def numpy(self) -> Any:
        """A host copy as a new NumPy array (tests, debugging)."""

class Tensor:
    """A tensor of a graph (reads are live views of the graph's tensor)."""

    @property
    def name(self) -> str:
        """Tensor name."""
    @property
    def dims(self) -> List[int]:
        """Logical dims, outermost first."""
    @property
    def strides(self) -> List[int]:
        """Strides in elements."""
    @property
    def data_type(self) -> str:
        """The tensor's own data type ("UNSET" when it takes the graph's)."""
    @property
    def context_data_type(self) -> str:
        """The data type after the graph's io / intermediate type fill an UNSET one."""
    @property
    def uid(self) -> Optional[int]:
        """UID (None until set, or assigned by build)."""
    @property
    def is_virtual(self) -> bool:
        """True for an intermediate (no buffer)."""
    @property
    def has_producer(self) -> bool:
        """True when a node of the graph writes the tensor."""
    @property
    def value(self) -> Optional[Any]:
        """The value of a scalar constant, else None."""
    @property
    def index(self) -> int:
        """Position in the graph's tensor list."""

class Graph:
    """A hipDNN operation graph (SDK Graph). Setters return the graph (chainable)."""

    def __init__(self) -> None:
        """An empty graph."""
    @property
    def name(self) -> str:
        """Graph name."""
    @property
    def io_data_type(self) -> str:
        """Type of bound tensors left UNSET."""
    @property
    def intermediate_data_type(self) -> str:
        """Type of virtual tensors left UNSET."""
    @property
    def compute_data_type(self) -> str:
        """The nodes' default compute type."""
    def set_name(self, name: str) -> "Graph":
        """Sets the graph name."""
    def set_io_data_type(self, t: str) -> "Graph":
        """Sets the io data type."""
    def set_intermediate_data_type(self, t: str) -> "Graph":
        """Sets the intermediate data type."""
    def set_compute_data_type(self, t: str) -> "Graph":
        """Sets the compute data type."""
    def tensor(
        self,
        name: str,
        dims: Sequence[int],
        strides: Optional[Sequence[int]] = None,
        data_type: Optional[str] = None,
        uid: Optional[int] = None,
        is_virtual: bool = False,
        alignment: Optional[int] = None,
    ) -> Tensor:
        """Adds a tensor; strides default to packed row-major."""
    def tensor_like(self, like: Tensor, name: str) -> Tensor:
        """A new tensor with like's dims, strides and data type (UID cleared)."""
    def scalar(self, name: str, value: Any, data_type: str = "FLOAT") -> Tensor:
        """Adds a compile-time constant scalar."""
    def set_output(self, t: Tensor, output: bool = True) -> "Graph":
        """Marks t an output (not virtual)."""
    def set_uid(self, t: Tensor, uid: int) -> "Graph":
        """Sets the UID of t."""
    def set_data_type(self, t: Tensor, data_type: str) -> "Graph":
        """Sets the data type of t."""
    def set_dims(self, t: Tensor, dims: Sequence[int]) -> "Graph":
        """Sets the dims of t (strides repacked in its layout)."""
    def set_strides(self, t: Tensor, strides: Sequence[int]) -> "Graph":
        """Sets the strides of t (elements)."""
    def set_tensor_name(self, t: Tensor, name: str) -> "Graph":
        """Renames t."""
    def tensors(self) -> List[Tensor]:
        """Every tensor in insertion order."""
    def tensors_by_name(self, name: str) -> List[Tensor]:
        """The tensors named name."""
    def tensor_by_uid(self, uid: int) -> Optional[Tensor]:
        """The tensor with UID uid, or None."""
    def node_count(self) -> int:
        """Number of nodes."""
    def pointwise_unary(
        self, x: Tensor, mode: str, *, relu_lower_clip: Optional[float] = None, relu_upper_clip: Optional[float] = None,
        relu_lower_clip_slope: Optional[float] = None, axis: Optional[int] = None, swish_beta: Optional[float] = None,
        elu_alpha: Optional[float] = None, softplus_beta: Optional[float] = None, name: Optional[str] = None,
        compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """y = mode(x) (a unary mode of POINTWISE_MODES)."""
    def pointwise(
        self, a: Tensor, b: Tensor, mode: str, *, relu_lower_clip: Optional[float] = None, relu_upper_clip: Optional[float] = None,
        relu_lower_clip_slope: Optional[float] = None, axis: Optional[int] = None, swish_beta: Optional[float] = None,
        elu_alpha: Optional[float] = None, softplus_beta: Optional[float] = None, name: Optional[str] = None,
        compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """y = mode(a, b) with numpy broadcasting (a binary mode)."""
    def pointwise_ternary(
        self, a: Tensor, b: Tensor, c: Tensor, mode: str, *, name: Optional[str] = None, compute_data_type: Optional[str] = None
    ) -> Tensor:
        """y = mode(a, b, c) (BINARY_SELECT)."""
    def matmul(self, a: Tensor, b: Tensor, *, name: Optional[str] = None, compute_data_type: Optional[str] = None) -> Tensor:
        """Batched matmul c = a @ b."""
    def conv_fprop(
        self, x: Tensor, w: Tensor, *, pre_padding: Optional[Sequence[int]] = None, post_padding: Optional[Sequence[int]] = None,
        stride: Optional[Sequence[int]] = None, dilation: Optional[Sequence[int]] = None, conv_mode: Optional[str] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Forward convolution, x (N, C, spatial..), w (K, C, window..)."""
    def conv_dgrad(
        self, dy: Tensor, w: Tensor, *, pre_padding: Optional[Sequence[int]] = None, post_padding: Optional[Sequence[int]] = None,
        stride: Optional[Sequence[int]] = None, dilation: Optional[Sequence[int]] = None, conv_mode: Optional[str] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Convolution data gradient dx."""
    def conv_wgrad(
        self, dy: Tensor, x: Tensor, *, pre_padding: Optional[Sequence[int]] = None, post_padding: Optional[Sequence[int]] = None,
        stride: Optional[Sequence[int]] = None, dilation: Optional[Sequence[int]] = None, conv_mode: Optional[str] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Convolution filter gradient dw."""
    def layernorm(
        self, x: Tensor, scale: Tensor, bias: Tensor, *, epsilon: Tensor, forward_phase: str,
        normalized_dim_count: Optional[int] = None, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
        """Layer norm: (y, mean, inv_variance); the statistics only with forward_phase="TRAINING"."""
    def layernorm_inference(self, x: Tensor, scale: Tensor, bias: Tensor, epsilon: float) -> Tensor:
        """Inference layer norm with a float epsilon."""
    def rmsnorm(
        self, x: Tensor, scale: Tensor, *, epsilon: Tensor, forward_phase: str, bias: Optional[Tensor] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """RMS norm: (y, inv_rms); inv_rms only with forward_phase="TRAINING"."""
    def rmsnorm_inference(self, x: Tensor, scale: Tensor, epsilon: float) -> Tensor:
        """Inference RMS norm with a float epsilon."""
    def softmax(self, x: Tensor, axis: int) -> Tensor:
        """Softmax along axis."""
    def log_softmax(self, x: Tensor, axis: int) -> Tensor:
        """Log-softmax along axis."""
    def reduction(
        self, x: Tensor, out_dims: Sequence[int], *, mode: str, is_deterministic: Optional[bool] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Reduction to out_dims (reduced dims are 1)."""
    def global_avg_pool(self, x: Tensor) -> Tensor:
        """Average over the spatial dims."""
    def global_max_pool(self, x: Tensor) -> Tensor:
        """Maximum over the spatial dims."""
    def sdpa(
        self, q: Tensor, k: Tensor, v: Tensor, *, attn_scale_value: Optional[float] = None, scale: Optional[Tensor] = None,
        attn_mask: Optional[Tensor] = None, causal_mask: Optional[bool] = None, causal_mask_bottom_right: Optional[bool] = None,
        padding_mask: Optional[bool] = None, alibi_mask: Optional[bool] = None, generate_stats: Optional[bool] = None,
        left_bound: Optional[int] = None, right_bound: Optional[int] = None, diagonal_alignment: Optional[str] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Scaled dot-product attention, q/k/v (B, H, S, D): (o, stats)."""
    def gather(self, table: Tensor, index: Tensor) -> Tensor:
        """Row gather / embedding lookup."""
    def linear(self, x: Tensor, w: Tensor, bias: Optional[Tensor] = None, activation: str = "none") -> Tensor:
        """act(x @ w + bias); activation none, relu, gelu, gelu_tanh, silu, sigmoid or tanh."""
    def resample(
        self, x: Tensor, *, resample_mode: str, window: Sequence[int], stride: Sequence[int], pre_padding: Sequence[int],
        post_padding: Sequence[int], padding_mode: Optional[str] = None, generate_index: Optional[bool] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Pooling: (y, index)."""
    def batchnorm_inference(
        self, x: Tensor, mean: Tensor, inv_variance: Tensor, scale: Tensor, bias: Tensor, *, name: Optional[str] = None,
        compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """y = (x - mean) * inv_variance * scale + bias."""
    def batchnorm(
        self, x: Tensor, scale: Tensor, bias: Tensor, *, epsilon: Tensor, peer_stats: Optional[Sequence[Tensor]] = None,
        prev_running_mean: Optional[Tensor] = None, prev_running_variance: Optional[Tensor] = None,
        momentum: Optional[Tensor] = None, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """Training batchnorm: (y, mean, inv_variance, next_running_mean, next_running_variance);
        the running outputs only when prev_running_mean, prev_running_variance and momentum are given."""
    def batchnorm_backward(
        self, dy: Tensor, x: Tensor, scale: Tensor, *, mean: Optional[Tensor] = None,
        inv_variance: Optional[Tensor] = None, peer_stats: Optional[Sequence[Tensor]] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor, Tensor]:
        """(dx, dscale, dbias)."""
    def batchnorm_inference_variance_ext(
        self, x: Tensor, mean: Tensor, variance: Tensor, scale: Tensor, bias: Tensor, epsilon: Tensor, *,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Batchnorm inference from the variance and an epsilon tensor."""
    def layernorm_backward(
        self, dy: Tensor, x: Tensor, scale: Tensor, *, mean: Optional[Tensor] = None,
        inv_variance: Optional[Tensor] = None, epsilon: Optional[Tensor] = None,
        normalized_dim_count: Optional[int] = None, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor, Tensor]:
        """(dx, dscale, dbias); saved mean/inv_variance, or epsilon to recompute them."""
    def rmsnorm_backward(
        self, dy: Tensor, x: Tensor, scale: Tensor, inv_rms: Tensor, compute_dbias: bool = False, *,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """(dx, dscale, dbias); dbias None unless compute_dbias."""
    def sdpa_backward(
        self, q: Tensor, k: Tensor, v: Tensor, o: Tensor, d_o: Tensor, stats: Tensor, *,
        attn_scale_value: Optional[float] = None, scale: Optional[Tensor] = None, attn_mask: Optional[Tensor] = None,
        causal_mask: Optional[bool] = None, causal_mask_bottom_right: Optional[bool] = None,
        padding_mask: Optional[bool] = None, alibi_mask: Optional[bool] = None,
        dropout_probability: Optional[float] = None, left_bound: Optional[int] = None,
        right_bound: Optional[int] = None, diagonal_alignment: Optional[str] = None, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor, Tensor]:
        """(dq, dk, dv)."""
    def resample_fwd(
        self, x: Tensor, *, resample_mode: str, window: Sequence[int], stride: Sequence[int], pre_padding: Sequence[int],
        post_padding: Sequence[int], padding_mode: Optional[str] = None, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Pooling without an index output: y."""
    def resample_bwd(
        self, dy: Tensor, index: Optional[Tensor] = None, *, resample_mode: str, window: Sequence[int],
        stride: Sequence[int], pre_padding: Sequence[int], post_padding: Sequence[int], padding_mode: Optional[str] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """Pooling backward: dx (set_dims when the inferred dims differ); index for MAXPOOL."""
    def block_scale_quantize(
        self, x: Tensor, *, block_size: int, axis: Optional[int] = None, transpose: Optional[bool] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tuple[Tensor, Tensor]:
        """(y, scale). Build and serialize only: no engine here runs it."""
    def block_scale_dequantize(
        self, x: Tensor, scale: Tensor, *, block_size: Sequence[int], is_negative_scale: Optional[bool] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """y. Build and serialize only: no engine here runs it."""
    def custom_op(
        self, inputs: Sequence[Tensor], num_outputs: int, *, custom_op_id: str, data: Optional[bytes] = None,
        name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> List[Tensor]:
        """A plugin op: its outputs OUT_<i>, with empty dims (set_dims them)."""
    def moe_grouped_matmul(
        self, token: Tensor, weight: Tensor, first_token_offset: Tensor, token_index: Optional[Tensor] = None,
        token_ks: Optional[Tensor] = None, *, mode: Optional[str] = None, top_k: Optional[int] = None, name: Optional[str] = None,
        compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """output (T, N). Build and serialize only: no engine here runs it."""
    def moe_grouped_matmul_bwd(
        self, doutput: Tensor, token: Tensor, first_token_offset: Tensor, *, name: Optional[str] = None, compute_data_type: Optional[str] = None,
    ) -> Tensor:
        """dweight (E, K, N). Build and serialize only: no engine here runs it."""
    def validate(self) -> None:
        """Checks the graph without a handle."""
    def build(self, handle: Handle) -> None:
        """Builds an execution plan."""
    def build_benchmarked(self, handle: Handle) -> None:
        """Builds, timing the kernels of engines that offer it (same as build on the CPU)."""
    def build_with(self, handle: Handle, modes: Sequence[str]) -> None:
        """build with the heuristic modes, in order (one today: "FALLBACK")."""
    def build_with_knobs(self, handle: Handle, knobs: Sequence[Tuple[int, int]]) -> None:
        """build with engine knob choices [(knob_type, value)]."""
    def deselect_engines(self, names: Sequence[str]) -> "Graph":
        """Later builds skip these engines."""
    def deselect_workspace_greater_than(self, bytes: int) -> "Graph":
        """Later builds skip plans needing more workspace."""
    def select_numeric_notes(self, notes: Sequence[str]) -> "Graph":
        """Later builds keep only engines noted with every listed note (NUMERICAL_NOTES)."""
    def deselect_numeric_notes(self, notes: Sequence[str]) -> "Graph":
        """Later builds skip engines noted with any listed note."""
    def deselect_behavior_notes(self, notes: Sequence[str]) -> "Graph":
        """Later builds skip engines with any listed behavior note (BEHAVIOR_NOTES)."""
    def clear_engine_filters(self) -> "Graph":
        """Removes every engine filter."""
    def numerical_notes(self) -> List[str]:
        """The plan's numerical notes."""
    def execution_plan_engine_id(self) -> int:
        """Id of the plan's engine."""
    def execution_plan_knob_choices(self) -> List[Tuple[int, int]]:
        """Knob choices the plan was built with."""
    @property
    def preferred_engine_id(self) -> Optional[int]:
        """The engine the heuristic offers first, if set."""
    def set_preferred_engine_id(self, id: Optional[int]) -> "Graph":
        """Sets (None clears) the preferred engine id."""
    def autotune(
        self,
        handle: Handle,
        tensors: Dict[int, Any],
        config: Optional[Dict[str, Any]] = None,
        storage: Optional[str] = None,
        delete_all_existing_content: bool = False,
    ) -> List[Dict[str, Any]]:
        """Times every candidate plan on tensors (as execute takes them) and keeps the fastest.
        config: AutotuneConfig fields (mode, strategy, warmup_iterations, timed_iterations,
        max_iterations, window_size, stability_threshold, engine_id_filter, candidates,
        priming_failure_policy); storage: engine-override file for the winner. Returns one dict
        per candidate with the SDK's AutotuneResult fields."""
    def has_plan(self) -> bool:
        """True when the graph has a plan."""
    def engine_name(self) -> str:
        """The plan's engine."""
    def workspace_size(self) -> int:
        """Workspace bytes the plan needs (execute allocates it)."""
    def execute(
        self,
        handle: Handle,
        tensors: Dict[int, Any],
        overrides: Optional[Dict[int, Tuple[List[int], List[int]]]] = None,
    ) -> Dict[int, Any]:
        """Runs the plan on {uid: DLPack array} (host memory; on a GPU handle also tensors on
        its device, exported with the legacy default stream's stream value); missing outputs
        come back as new NumPy arrays (CPU handle) or DeviceArrays (GPU handle). On a GPU
        handle it returns once the work is queued on the device's default stream.
        `overrides` {uid: (dims, strides)}: execute-time shape overrides of a graph built with
        set_override_shape_enabled(True) at its largest shape."""
    def shape_overrides_for(self, smaller: "Graph") -> Dict[int, Tuple[List[int], List[int]]]:
        """The overrides that run this (largest-shape) graph at `smaller`'s shape."""
    def is_override_shape_enabled(self) -> bool:
        """Whether execute-time shape overrides are enabled."""
    def set_override_shape_enabled(self, on: bool) -> "Graph":
        """Enables execute-time shape overrides (before build); returns the graph."""
    def to_binary(self) -> bytes:
        """Graph with its plan (HDGP container)."""
    @staticmethod
    def from_binary(handle: Handle, data: bytes) -> "Graph":
        """Loads a graph (and plan)."""
    def to_compiled_plan_binary(self) -> bytes:
        """The plan alone."""
    @staticmethod
    def from_compiled_plan_binary(handle: Handle, data: bytes) -> "Graph":
        """Loads a plan saved alone (binds by UID; pass every output)."""
    def save_to_file(self, path: str, form: str = "GRAPH_AND_PLAN") -> None:
        """Writes to_binary() ("GRAPH_AND_PLAN") or to_compiled_plan_binary() ("PLAN_ONLY") to path atomically."""
    @staticmethod
    def load_from_file(handle: Handle, path: str) -> "Graph":
        """Loads a file save_to_file wrote, in either form."""
    def to_json(self) -> str:
        """Upstream hipDNN JSON of the graph."""
    @staticmethod
    def from_json(json: str) -> "Graph":
        """A graph from upstream hipDNN JSON."""
