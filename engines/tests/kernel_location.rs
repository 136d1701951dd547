//! The kernels compiled into the binary (`hipdnn-kernels-<arch>`, default features) are the
//! committed packed directories byte for byte, and the GPU engine reads them from memory into
//! the same descriptors and the same verified code objects as from the directory. No GPU.

use hipdnn_engines::gpu::{
    load_embedded_descriptors, load_packed_descriptors, load_triton_descriptors,
};
use hipdnn_engines::ingestor::KernelDescriptor;
use hipdnn_engines::kernel_location::{EMBEDDED_ARCHS, embedded_kernels};
use std::path::{Path, PathBuf};

fn packed(arch: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch)
}

fn from_dir(arch: &str) -> Vec<KernelDescriptor> {
    let dir = packed(arch);
    let mut d = load_triton_descriptors(&dir).unwrap();
    d.extend(load_packed_descriptors(&dir).unwrap());
    d
}

#[test]
fn embedded_files_are_the_committed_packed_files() {
    let archs: Vec<&str> = EMBEDDED_ARCHS.iter().map(|e| e.arch).collect();
    assert_eq!(archs, ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"]);
    for e in EMBEDDED_ARCHS {
        for (name, bytes) in e.files {
            let on_disk = std::fs::read(packed(e.arch).join(name)).unwrap();
            assert!(
                on_disk == *bytes,
                "{}/{name} differs from the committed file",
                e.arch
            );
        }
    }
}

#[test]
fn embedded_descriptors_equal_the_directory_ones() {
    for e in EMBEDDED_ARCHS {
        let (label, mem) = load_embedded_descriptors(e.arch).unwrap();
        assert_eq!(label, Path::new("<embedded>").join(e.arch));
        let disk = from_dir(e.arch);
        assert_eq!(mem.len(), disk.len(), "{}", e.arch);
        for (m, d) in mem.iter().zip(&disk) {
            assert_eq!(
                (m.id, &m.name, &m.dispatch, &m.archs),
                (d.id, &d.name, &d.dispatch, &d.archs)
            );
            let (ms, ds) = (m.single_source().unwrap(), d.single_source().unwrap());
            assert_eq!(
                (&ms.toc_key, &ms.symbol, &ms.sha256),
                (&ds.toc_key, &ds.symbol, &ds.sha256)
            );
            let (ml, dl) = (ms.library.as_ref().unwrap(), ds.library.as_ref().unwrap());
            assert_eq!(
                ml.strip_prefix(&label).unwrap(),
                dl.strip_prefix(packed(e.arch)).unwrap()
            );
        }
    }
}

#[test]
fn embedded_archives_serve_the_verified_read() {
    // A few entries of each archive of every arch: the bytes read from memory are the bytes
    // read from the committed file, and both pass the SHA-256 of the descriptor.
    for e in EMBEDDED_ARCHS {
        let (_, mem) = load_embedded_descriptors(e.arch).unwrap();
        let disk = from_dir(e.arch);
        let device_arch = if e.arch.starts_with("gfx") {
            format!("{}:sramecc+:xnack-", e.arch)
        } else {
            e.arch.to_string()
        };
        let mut seen = std::collections::BTreeSet::new();
        for (m, d) in mem.iter().zip(&disk) {
            let (ms, ds) = (m.single_source().unwrap(), d.single_source().unwrap());
            let lib = ms.library.clone().unwrap();
            if !seen.insert(lib.clone()) {
                continue;
            }
            assert!(
                !lib.exists(),
                "{} must be a label, not a file",
                lib.display()
            );
            let a = hipdnn_kpack::read_verified_code_object(
                &lib,
                &ms.toc_key,
                &device_arch,
                &ms.sha256,
            )
            .unwrap_or_else(|err| panic!("{}: {err}", lib.display()));
            let b = hipdnn_kpack::read_verified_code_object(
                ds.library.as_ref().unwrap(),
                &ds.toc_key,
                &device_arch,
                &ds.sha256,
            )
            .unwrap();
            assert_eq!(a.bytes, b.bytes);
        }
        assert_eq!(seen.len(), 2, "{}: both archives read", e.arch);
    }
}

#[test]
fn an_arch_without_embedded_kernels_names_its_label() {
    assert!(embedded_kernels("sm_75").is_none());
    let err = load_embedded_descriptors("sm_75").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no GPU: no kernels packed for sm_75 (<embedded>/sm_75/kernels.json missing)"
    );
}
