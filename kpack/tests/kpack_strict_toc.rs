//! Issue 12, strict readers: a kpack TOC with a key twice (the case file
//! `tests/cases/kpack_toc_key_twice.kpack`, a damaged-and-hostile case of issue 12), mistyped
//! values and trailing bytes are refused at open; `write_to` replaces a file atomically.

use hipdnn_kpack::{CompressionScheme, KpackArchive, KpackErrorCode, KpackWriter};
use rmpv::Value;
use std::path::{Path, PathBuf};

fn writer() -> KpackWriter {
    let mut w = KpackWriter::new(
        "grp",
        "gfx9",
        vec!["gfx90a".into()],
        CompressionScheme::None,
    );
    w.add_kernel("a/k1", "gfx90a", "hsaco", b"\x7fELFone".to_vec(), None)
        .unwrap();
    w
}

fn toc_offset(bytes: &[u8]) -> usize {
    u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize
}

fn rewrite_toc(bytes: &[u8], f: impl FnOnce(&mut Vec<(Value, Value)>)) -> Vec<u8> {
    let mut s = &bytes[toc_offset(bytes)..];
    let Value::Map(mut toc) = rmpv::decode::read_value(&mut s).unwrap() else {
        panic!("TOC is not a map")
    };
    f(&mut toc);
    let mut out = bytes[..toc_offset(bytes)].to_vec();
    rmpv::encode::write_value(&mut out, &Value::Map(toc)).unwrap();
    out
}

fn open(dir: &Path, bytes: &[u8]) -> (KpackErrorCode, String) {
    let p = dir.join("x.kpack");
    std::fs::write(&p, bytes).unwrap();
    let e = KpackArchive::open(&p).unwrap_err();
    (e.code, e.detail)
}

fn entry(t: &mut [(Value, Value)]) -> &mut Vec<(Value, Value)> {
    let toc = t
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("toc"))
        .unwrap();
    let Value::Map(bins) = &mut toc.1 else {
        panic!()
    };
    let Value::Map(arches) = &mut bins[0].1 else {
        panic!()
    };
    let Value::Map(e) = &mut arches[0].1 else {
        panic!()
    };
    e
}

#[test]
fn the_case_file_with_the_toc_key_twice_is_refused() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases/kpack_toc_key_twice.kpack");
    let e = KpackArchive::open(&p).unwrap_err();
    assert_eq!(e.code, KpackErrorCode::InvalidFormat, "{}", e.detail);
    assert!(
        e.detail.contains("TOC has the key \"toc\" twice"),
        "{}",
        e.detail
    );
}

#[test]
fn duplicate_keys_at_any_depth_mistyped_values_and_trailing_bytes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = writer().to_bytes().unwrap();
    let p = dir.path().join("good.kpack");
    std::fs::write(&p, &good).unwrap();
    assert!(KpackArchive::open(&p).is_ok());
    let dup_root = rewrite_toc(&good, |t| {
        let first = t[0].clone();
        t.push(first);
    });
    let (code, m) = open(dir.path(), &dup_root);
    assert_eq!(code, KpackErrorCode::InvalidFormat);
    assert!(m.contains("has the key"), "{m}");
    let dup_entry = rewrite_toc(&good, |t| {
        let e = entry(t);
        let first = e[0].clone();
        e.push(first);
    });
    let (_, m) = open(dir.path(), &dup_entry);
    assert!(
        m.contains("TOC['toc']['a/k1']['gfx90a'] has the key"),
        "{m}"
    );
    for (key, value, want) in [
        (
            "ordinal",
            Value::from(-1),
            "'ordinal' is missing or not an unsigned integer",
        ),
        (
            "ordinal",
            Value::from("0"),
            "'ordinal' is missing or not an unsigned integer",
        ),
        (
            "original_size",
            Value::from(-1),
            "'original_size' is -1, not an unsigned integer",
        ),
        (
            "original_size",
            Value::from("7"),
            "'original_size' is \"7\", not an unsigned integer",
        ),
        ("type", Value::from(3), "'type' is 3, not a string"),
    ] {
        let bad = rewrite_toc(&good, |t| {
            let e = entry(t);
            e.retain(|(k, _)| k.as_str() != Some(key));
            e.push((Value::from(key), value));
        });
        let (code, m) = open(dir.path(), &bad);
        assert_eq!(code, KpackErrorCode::InvalidFormat, "{key}: {m}");
        assert!(m.contains(want), "{key}: {m}");
    }
    let bad_size = rewrite_toc(&good, |t| {
        let blobs = t
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some("blobs"))
            .unwrap();
        let Value::Array(a) = &mut blobs.1 else {
            panic!()
        };
        let Value::Map(b) = &mut a[0] else { panic!() };
        b.retain(|(k, _)| k.as_str() != Some("size"));
        b.push((Value::from("size"), Value::from(-1)));
    });
    let (_, m) = open(dir.path(), &bad_size);
    assert!(
        m.contains("blobs[0]: 'size' is missing or not an unsigned integer"),
        "{m}"
    );
    let group = rewrite_toc(&good, |t| {
        t.retain(|(k, _)| k.as_str() != Some("group_name"));
        t.push(("group_name".into(), Value::from(5)));
    });
    let (_, m) = open(dir.path(), &group);
    assert!(m.contains("TOC: 'group_name' is 5, not a string"), "{m}");
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0xC0; 8]);
    let (code, m) = open(dir.path(), &trailing);
    assert_eq!(code, KpackErrorCode::InvalidFormat);
    assert!(
        m.starts_with("8 trailing bytes after the TOC of")
            || m.contains("8 trailing bytes after the TOC of"),
        "{m}"
    );
}

#[test]
fn write_to_replaces_the_file_atomically_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.kpack");
    std::fs::write(&p, b"old").unwrap();
    writer().write_to(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), writer().to_bytes().unwrap());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // A directory that does not exist: an Io error, nothing created.
    assert!(writer().write_to(dir.path().join("no/such.kpack")).is_err());
}
