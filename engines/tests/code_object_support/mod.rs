//! Code objects for another device (issue 37, class 8), shared by
//! `ingestor_code_object_target.rs` (fake devices) and `gpu_code_for_other_device.rs` (a real
//! driver): the packed code object of a named entry of any arch, a saved plan whose code
//! object is swapped for other bytes (its SHA-256 recomputed, so only the target check can
//! refuse it), and PTX text with chosen `.version` / `.target` directives.

#![allow(dead_code)]

use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::payload::{decode_payload, encode_payload, sha256_hex};
use hipdnn_engines::ingestor::{CodeObjectReader, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_schema::graph::DataType as DT;
use std::path::PathBuf;

/// `<HIPDNN_KERNEL_DIR or engines/kernels/packed>/<arch>`.
pub fn packed(arch: &str) -> PathBuf {
    std::env::var_os("HIPDNN_KERNEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed"))
        .join(arch)
}

/// The code object of Triton entry `name` packed for `arch` (verified against its SHA-256).
pub fn packed_code(arch: &str, name: &str) -> Vec<u8> {
    let ks = load_triton_descriptors(&packed(arch)).unwrap();
    let k = ks
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("{arch} packs no entry {name}"));
    let s = k.single_source().unwrap();
    KpackCodeObjectReader
        .read(s.library.as_ref().unwrap(), &s.toc_key, arch, &s.sha256)
        .unwrap_or_else(|e| panic!("{arch} {name}: {}", e.message))
}

/// The f32 matmul `(1, 33, 17) · (1, 17, 20)` (UIDs a 1, b 2, c 3), served by the generic
/// entry `matmul_f32_generic_64x64x32_g8_w4_s2_*` of every arch.
pub fn matmul_graph() -> OperationGraph {
    let mut g = GraphBuilder::new("mm");
    g.tensor(TensorSpec::new(1, "a", DT::FLOAT, &[1, 33, 17]))
        .tensor(TensorSpec::new(2, "b", DT::FLOAT, &[1, 17, 20]))
        .tensor(TensorSpec::new(3, "c", DT::FLOAT, &[1, 33, 20]));
    g.matmul("mm", 1, 2, 3);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

/// The name of the generic f32 matmul entry of `arch` (the one [`matmul_graph`] runs).
pub fn generic_matmul_entry(arch: &str) -> String {
    load_triton_descriptors(&packed(arch))
        .unwrap()
        .into_iter()
        .find(|k| k.name.starts_with("matmul_f32_generic_"))
        .unwrap_or_else(|| panic!("{arch} packs no generic f32 matmul"))
        .name
}

/// `saved` (an ingestor plan payload) with its code object replaced by `code` and the
/// recorded SHA-256 made to match, so the payload decodes and verifies and only a target check
/// can tell.
pub fn doctored(saved: &[u8], code: Vec<u8>) -> Vec<u8> {
    let mut p = decode_payload(saved).unwrap();
    p.sha256 = sha256_hex(&code);
    p.code_object = code;
    encode_payload(&p).unwrap()
}

/// PTX text declaring `.version version` and `.target target` with one empty kernel
/// `symbol` (NUL-terminated, as a module load takes it).
pub fn ptx(version: &str, target: &str, symbol: &str) -> Vec<u8> {
    format!(
        "//\n// hipdnn-rs test PTX\n//\n\n.version {version}\n.target {target}\n.address_size 64\n\n.visible .entry {symbol}()\n{{\n\tret;\n}}\n\0"
    )
    .into_bytes()
}
