//! The `train` example's host side: the random source, the digits data set, the synthetic
//! sequence task, the batch order, the state file (safetensors), the numpy peer and the
//! loss-curve PNG. It knows no model and runs no graph.

#![allow(dead_code)] // the test and the example use different parts

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// SHA-256 of `digits.csv` (as `fetch_digits.py` pins it).
pub const DIGITS_SHA256: &str = "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8";
/// Images used for training (the rest is the test set).
pub const TRAIN: usize = 1440;

/// The 1797 digits: pixels scaled to [0, 1] (64 a row), labels 0..9.
pub struct Digits {
    pub x: Vec<f32>,
    pub labels: Vec<u8>,
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where `digits.csv` is: `$HIPDNN_DIGITS_DIR`, else `target/digits/`.
pub fn digits_path() -> PathBuf {
    match std::env::var_os("HIPDNN_DIGITS_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/digits"),
    }
    .join("digits.csv")
}

impl Digits {
    /// Reads and checks `digits.csv`.
    ///
    /// # Errors
    /// The file missing (with the fetch command), a wrong SHA-256, or a malformed line.
    pub fn load() -> Result<Digits, String> {
        let p = digits_path();
        let bytes = std::fs::read(&p).map_err(|e| {
            format!(
                "{}: {e}; fetch it with `python3 hipdnn-rs/examples/train/fetch_digits.py` (or set HIPDNN_DIGITS_DIR)",
                p.display()
            )
        })?;
        let got = sha256(&bytes);
        if got != DIGITS_SHA256 {
            return Err(format!(
                "{}: SHA-256 {got}, expected {DIGITS_SHA256}; run fetch_digits.py again",
                p.display()
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        let (mut x, mut labels) = (Vec::new(), Vec::new());
        for (n, line) in text.lines().enumerate() {
            let v: Vec<u8> = line
                .split(',')
                .map(|f| f.trim().parse::<u8>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{} line {}: {e}", p.display(), n + 1))?;
            if v.len() != 65 || v[64] > 9 {
                return Err(format!(
                    "{} line {}: not 64 pixels and a label",
                    p.display(),
                    n + 1
                ));
            }
            x.extend(v[..64].iter().map(|&p| f32::from(p) / 16.0));
            labels.push(v[64]);
        }
        Ok(Digits { x, labels })
    }

    pub fn train_len(&self) -> usize {
        TRAIN
    }

    /// The images and labels at `idx` (training indices).
    pub fn gather(&self, idx: &[usize]) -> (Vec<f32>, Vec<u8>) {
        let x = idx
            .iter()
            .flat_map(|&i| self.x[i * 64..(i + 1) * 64].iter().copied())
            .collect();
        (x, idx.iter().map(|&i| self.labels[i]).collect())
    }

    /// The test images and labels.
    pub fn test(&self) -> (&[f32], &[u8]) {
        (&self.x[TRAIN * 64..], &self.labels[TRAIN..])
    }
}

/// splitmix64: the example's one random source (weights, data, batch order), so the numpy
/// peer can draw the same numbers.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 24 bits (exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in `0..n` (modulo; the bias is irrelevant here and the peer never redraws).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Tokens per sequence and vocabulary size of the synthetic task.
pub const SEQ: usize = 16;
pub const VOCAB: usize = 16;
/// Sequences of the synthetic task used for training (the next [`SEQ_TEST`] are the test set).
pub const SEQ_TRAIN: usize = 1440;
pub const SEQ_TEST: usize = 320;

/// The synthetic sequence task: [`SEQ`] tokens from a vocabulary of [`VOCAB`]; the label is the
/// token that appears most often (4 to 6 times, every other token fewer times).
pub struct Sequences {
    /// `SEQ` tokens a sequence.
    pub tokens: Vec<u8>,
    pub labels: Vec<u8>,
}

impl Sequences {
    /// [`SEQ_TRAIN`] + [`SEQ_TEST`] sequences drawn from `Rng(seed ^ 0xda7a…)`: per sequence
    /// the label `l = below(16)`, its count `c = 4 + below(3)`, every position filled with
    /// `(l + 1 + below(15)) % 16` in order, then `c` positions set to `l` by a partial
    /// Fisher–Yates shuffle of `0..16` (`j = i + below(16 − i)`); a sequence in which another
    /// token appears `c` times or more is drawn again.
    pub fn generate(seed: u64) -> Sequences {
        let mut rng = Rng(seed ^ 0xda7a_da7a_da7a_da7a);
        let (mut tokens, mut labels) = (Vec::new(), Vec::new());
        while labels.len() < SEQ_TRAIN + SEQ_TEST {
            let l = rng.below(VOCAB);
            let c = 4 + rng.below(3);
            let mut s: Vec<usize> = (0..SEQ)
                .map(|_| (l + 1 + rng.below(VOCAB - 1)) % VOCAB)
                .collect();
            let mut pos: Vec<usize> = (0..SEQ).collect();
            for i in 0..c {
                let j = i + rng.below(SEQ - i);
                pos.swap(i, j);
                s[pos[i]] = l;
            }
            let mut count = [0usize; VOCAB];
            s.iter().for_each(|&t| count[t] += 1);
            if (0..VOCAB).any(|t| t != l && count[t] >= c) {
                continue;
            }
            tokens.extend(s.iter().map(|&t| t as u8));
            labels.push(l as u8);
        }
        Sequences { tokens, labels }
    }

    /// The tokens and labels at `idx` (training indices).
    pub fn gather(&self, idx: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let t = idx
            .iter()
            .flat_map(|&i| self.tokens[i * SEQ..(i + 1) * SEQ].iter().copied())
            .collect();
        (t, idx.iter().map(|&i| self.labels[i]).collect())
    }

    /// The test tokens and labels.
    pub fn test(&self) -> (&[u8], &[u8]) {
        (&self.tokens[SEQ_TRAIN * SEQ..], &self.labels[SEQ_TRAIN..])
    }

    /// The training set as JSON `{"tokens": [[16 ints]…], "labels": […]}` (for the peer).
    pub fn train_json(&self) -> String {
        let rows: Vec<&[u8]> = self.tokens[..SEQ_TRAIN * SEQ].chunks_exact(SEQ).collect();
        serde_json::json!({"tokens": rows, "labels": &self.labels[..SEQ_TRAIN]}).to_string()
    }
}

/// Builds every graph of a model's step on `handle`, in order.
///
/// # Errors
/// The first graph's build error.
pub fn build_graphs(
    handle: &hipdnn::Handle,
    mut graphs: Vec<hipdnn::Graph>,
) -> hipdnn::Result<Vec<hipdnn::Graph>> {
    for g in &mut graphs {
        g.build(handle)?;
    }
    Ok(graphs)
}

/// Loads a model's saved plans (`to_binary` bytes, in plan order) on `handle`.
///
/// # Errors
/// The first `Graph::from_binary` error.
pub fn load_graphs(
    handle: &hipdnn::Handle,
    bins: &[Vec<u8>],
) -> hipdnn::Result<Vec<hipdnn::Graph>> {
    bins.iter()
        .map(|b| hipdnn::Graph::from_binary(handle, b))
        .collect()
}

/// Every plan's `to_binary` bytes, in order.
///
/// # Errors
/// The first `to_binary` error.
pub fn save_graphs(graphs: &[hipdnn::Graph]) -> hipdnn::Result<Vec<Vec<u8>>> {
    graphs.iter().map(hipdnn::Graph::to_binary).collect()
}

/// The example indices of every step: each epoch a Fisher–Yates shuffle of `0..train` drawn
/// from `Rng(seed + 1 + epoch)`, cut into whole batches.
pub fn batches(seed: u64, train: usize, batch: usize, steps: usize) -> Vec<Vec<usize>> {
    let per_epoch = train / batch;
    let mut out = Vec::new();
    let mut epoch = 0u64;
    while out.len() < steps {
        let mut rng = Rng(seed.wrapping_add(1 + epoch));
        let mut p: Vec<usize> = (0..train).collect();
        for i in (1..train).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        out.extend(p.chunks_exact(batch).take(per_epoch).map(<[usize]>::to_vec));
        epoch += 1;
    }
    out.truncate(steps);
    out
}

/// A named f32 tensor of the state file: name, dims, values.
pub type Named<'a> = (String, Vec<usize>, &'a [f32]);

/// The state as safetensors: every tensor of `tensors` (F32) and `step` (one u64 as 8
/// bytes, dtype U64). The bytes do not depend on the order of `tensors` (safetensors sorts).
pub fn write_state(tensors: &[Named<'_>], step: usize) -> Vec<u8> {
    use safetensors::tensor::{Dtype, TensorView};
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>, Dtype)> = tensors
        .iter()
        .map(|(n, d, v)| (n.clone(), d.clone(), bytes(v), Dtype::F32))
        .collect();
    owned.push((
        "step".into(),
        vec![1],
        (step as u64).to_le_bytes().to_vec(),
        Dtype::U64,
    ));
    let views: Vec<(String, TensorView<'_>)> = owned
        .iter()
        .map(|(n, d, b, t)| {
            (
                n.clone(),
                TensorView::new(*t, d.clone(), b).expect("sizes match"),
            )
        })
        .collect();
    safetensors::serialize(views, None).expect("serializable")
}

/// Reads [`write_state`]'s bytes: the tensors named in `want` (name, element count), in that
/// order, and the step.
///
/// # Errors
/// Not safetensors, or a tensor missing or of the wrong size.
pub fn read_state(
    bytes: &[u8],
    want: &[(String, usize)],
) -> Result<(Vec<Vec<f32>>, usize), String> {
    let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, n) in want {
        let t = st.tensor(name).map_err(|e| format!("{name}: {e}"))?;
        if t.data().len() != n * 4 {
            return Err(format!(
                "{name}: {} bytes, expected {}",
                t.data().len(),
                n * 4
            ));
        }
        out.push(
            t.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        );
    }
    let step = st.tensor("step").map_err(|e| format!("step: {e}"))?;
    let b: [u8; 8] = step
        .data()
        .try_into()
        .map_err(|_| "step: not 8 bytes".to_string())?;
    Ok((out, u64::from_le_bytes(b) as usize))
}

/// Runs `numpy_peer.py` on the saved run (with `args`, e.g. `--lr 0.05 --momentum 0.9`) and
/// returns its per-step losses.
///
/// # Errors
/// python3 or numpy missing, the script failing, or its output unreadable.
pub fn run_peer(out: &Path, args: &[String]) -> Result<Vec<f64>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/train/numpy_peer.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(out)
        .args(args)
        .output()
        .map_err(|e| format!("python3 not runnable ({e}); the peer needs python3 with numpy"))?;
    if !o.status.success() {
        return Err(format!(
            "numpy_peer.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let p = out.join("peer_losses.json");
    let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", p.display()))
}

/// Draws the loss per step (ours blue, the peer's red, dashed) into a 640×400 PNG.
///
/// # Errors
/// The file cannot be written.
pub fn plot(path: &Path, ours: &[f32], peer: Option<&[f64]>) -> std::io::Result<()> {
    let (w, h) = (640usize, 400usize);
    let (l, r, t, b) = (40usize, 10usize, 10usize, 30usize);
    let mut img = vec![255u8; w * h * 3];
    let mut put = |x: usize, y: usize, c: [u8; 3]| {
        if x < w && y < h {
            img[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&c);
        }
    };
    for x in l..w - r {
        put(x, h - b, [0, 0, 0]);
    }
    for y in t..=h - b {
        put(l, y, [0, 0, 0]);
    }
    let n = ours.len().max(peer.map_or(0, <[f64]>::len)).max(2);
    let top = ours
        .iter()
        .map(|&v| f64::from(v))
        .chain(peer.into_iter().flatten().copied())
        .fold(0f64, f64::max)
        .max(1e-3);
    let px = |i: usize| l + (i * (w - l - r - 1)) / (n - 1);
    let py = |v: f64| (h - b) - ((v / top).clamp(0.0, 1.0) * (h - b - t) as f64) as usize;
    let mut line = |vals: &mut dyn Iterator<Item = f64>, c: [u8; 3], dashed: bool| {
        let v: Vec<f64> = vals.collect();
        for i in 1..v.len() {
            if dashed && (i / 3) % 2 == 1 {
                continue;
            }
            let (x0, y0, x1, y1) = (
                px(i - 1) as f64,
                py(v[i - 1]) as f64,
                px(i) as f64,
                py(v[i]) as f64,
            );
            let steps = ((x1 - x0).abs().max((y1 - y0).abs()) as usize).max(1);
            for s in 0..=steps {
                let f = s as f64 / steps as f64;
                put(
                    (x0 + f * (x1 - x0)) as usize,
                    (y0 + f * (y1 - y0)) as usize,
                    c,
                );
            }
        }
    };
    line(
        &mut ours.iter().map(|&v| f64::from(v)),
        [30, 80, 220],
        false,
    );
    if let Some(p) = peer {
        line(&mut p.iter().copied(), [220, 40, 40], true);
    }
    let f = std::fs::File::create(path)?;
    let mut e = png::Encoder::new(std::io::BufWriter::new(f), w as u32, h as u32);
    e.set_color(png::ColorType::Rgb);
    e.set_depth(png::BitDepth::Eight);
    e.write_header()
        .and_then(|mut wr| wr.write_image_data(&img))
        .map_err(std::io::Error::other)
}
