//! Archives compiled into the binary: [`KpackArchive::from_static_bytes`] reads what
//! [`KpackArchive::open`] reads from the same bytes on disk, and a path registered with
//! [`register_static_archive`] serves the verified read without any file.

use hipdnn_kpack::{
    CompressionScheme, KpackArchive, KpackErrorCode, KpackWriter, read_verified_code_object,
    register_static_archive, sha256_hex,
};

fn archive_bytes(scheme: CompressionScheme) -> &'static [u8] {
    let mut w = KpackWriter::new("g", "gfx942", vec!["gfx942".into()], scheme);
    w.add_kernel("k1", "gfx942", "hsaco", b"\x7fELFone".to_vec(), None)
        .unwrap();
    w.add_kernel("k2", "gfx942", "hsaco", b"\x7fELFtwo".to_vec(), None)
        .unwrap();
    Vec::leak(w.to_bytes().unwrap())
}

#[test]
fn static_bytes_read_like_the_file() {
    for scheme in [CompressionScheme::None, CompressionScheme::ZstdPerKernel] {
        let bytes = archive_bytes(scheme);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.kpack");
        std::fs::write(&file, bytes).unwrap();
        let from_file = KpackArchive::open(&file).unwrap();
        let from_mem = KpackArchive::from_static_bytes("<embedded>/a.kpack", bytes).unwrap();
        assert_eq!(from_mem.path(), std::path::Path::new("<embedded>/a.kpack"));
        assert_eq!(from_mem.file_len(), from_file.file_len());
        assert_eq!(from_mem.gfx_arches(), from_file.gfx_arches());
        for key in ["k1", "k2"] {
            assert_eq!(
                from_mem.get_kernel(key, "gfx942").unwrap(),
                from_file.get_kernel(key, "gfx942").unwrap()
            );
        }
    }
}

#[test]
fn static_bytes_refuse_a_damaged_archive_as_a_file_would() {
    let e = KpackArchive::from_static_bytes("<embedded>/bad.kpack", b"KPAK").unwrap_err();
    assert_eq!(e.code, KpackErrorCode::InvalidFormat);
}

#[test]
fn a_registered_path_serves_the_verified_read() {
    let bytes = archive_bytes(CompressionScheme::ZstdPerKernel);
    let label = std::path::Path::new("<embedded>/kpack_static_bytes_test/a.kpack");
    assert!(!label.exists());
    register_static_archive(label, bytes);
    let v = read_verified_code_object(label, "k2", "gfx942", &sha256_hex(b"\x7fELFtwo")).unwrap();
    assert_eq!(v.bytes, b"\x7fELFtwo");
    assert_eq!(v.archive_bytes, bytes.len() as u64);
}
