//! rocm-kpack v1 format: writer → reader round trips, exact layout, and damaged archives refused
//! at the right stage (kpack.md §1–4, §9, §11 "Format").

use std::path::{Path, PathBuf};

use hipdnn_kpack::{
    CompressionScheme, KpackArchive, KpackErrorCode, KpackLoadStage, KpackWriteError, KpackWriter,
    read_verified_code_object, sha256_hex,
};
use rmpv::Value;

fn elf(tag: &str) -> Vec<u8> {
    let mut v = b"\x7fELF".to_vec();
    v.extend_from_slice(tag.as_bytes());
    v
}

fn arches(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Three kernels added out of order: sorted they are (a/k1,gfx90a)=0, (a/k1,gfx942)=1,
/// (b/k2,gfx942)=2.
fn three_kernel_writer(scheme: CompressionScheme) -> KpackWriter {
    let mut w = KpackWriter::new("grp", "gfx9", arches(&["gfx942", "gfx90a"]), scheme);
    w.add_kernel("b/k2", "gfx942", "hsaco", elf("two-942"), None)
        .unwrap();
    w.add_kernel("a/k1", "gfx942", "hsaco", elf("one-942-longer"), None)
        .unwrap();
    w.add_kernel("a/k1", "gfx90a", "hsaco", elf("one-90a"), None)
        .unwrap();
    w
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn toc_offset(bytes: &[u8]) -> usize {
    u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize
}

fn decode_toc(bytes: &[u8]) -> Vec<(Value, Value)> {
    let mut s = &bytes[toc_offset(bytes)..];
    match rmpv::decode::read_value(&mut s).unwrap() {
        Value::Map(m) => m,
        other => panic!("TOC is not a map: {other}"),
    }
}

/// Re-encodes the TOC after `f` edits it; the TOC stays at the same offset.
fn rewrite_toc(bytes: &[u8], f: impl FnOnce(&mut Vec<(Value, Value)>)) -> Vec<u8> {
    let mut toc = decode_toc(bytes);
    f(&mut toc);
    let mut out = bytes[..toc_offset(bytes)].to_vec();
    rmpv::encode::write_value(&mut out, &Value::Map(toc)).unwrap();
    out
}

fn get<'a>(m: &'a [(Value, Value)], k: &str) -> &'a Value {
    &m.iter().find(|(key, _)| key.as_str() == Some(k)).unwrap().1
}

fn get_mut<'a>(m: &'a mut [(Value, Value)], k: &str) -> &'a mut Value {
    &mut m
        .iter_mut()
        .find(|(key, _)| key.as_str() == Some(k))
        .unwrap()
        .1
}

fn map_mut(v: &mut Value) -> &mut Vec<(Value, Value)> {
    match v {
        Value::Map(m) => m,
        other => panic!("not a map: {other}"),
    }
}

fn keys(m: &[(Value, Value)]) -> Vec<&str> {
    m.iter().map(|(k, _)| k.as_str().unwrap()).collect()
}

#[test]
fn none_scheme_round_trips_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let p = write(dir.path(), "grp-gfx9.kpack", &bytes);
    let a = KpackArchive::open(&p).unwrap();
    assert_eq!(a.group_name(), "grp");
    assert_eq!(a.gfx_arch_family(), "gfx9");
    assert_eq!(a.gfx_arches(), ["gfx942", "gfx90a"]);
    assert_eq!(a.compression_scheme(), CompressionScheme::None);
    assert_eq!(a.get_kernel("a/k1", "gfx90a").unwrap(), elf("one-90a"));
    assert_eq!(
        a.get_kernel("a/k1", "gfx942").unwrap(),
        elf("one-942-longer")
    );
    assert_eq!(a.get_kernel("b/k2", "gfx942").unwrap(), elf("two-942"));
    assert_eq!(a.entry("a/k1", "gfx942").unwrap().ordinal, 1);
    assert_eq!(a.entry("a/k1", "gfx942").unwrap().original_size, Some(18));
    assert_eq!(a.entry("a/k1", "gfx942").unwrap().kind, "hsaco");
}

#[test]
fn zstd_scheme_round_trips_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_kernel_writer(CompressionScheme::ZstdPerKernel)
        .to_bytes()
        .unwrap();
    let p = write(dir.path(), "grp-gfx9.kpack", &bytes);
    let a = KpackArchive::open(&p).unwrap();
    assert_eq!(a.compression_scheme(), CompressionScheme::ZstdPerKernel);
    assert_eq!(a.blob_count(), 3);
    assert_eq!(a.get_kernel("a/k1", "gfx90a").unwrap(), elf("one-90a"));
    assert_eq!(
        a.get_kernel("a/k1", "gfx942").unwrap(),
        elf("one-942-longer")
    );
    assert_eq!(a.get_kernel("b/k2", "gfx942").unwrap(), elf("two-942"));
}

/// If this test fails, you changed the format: bump the version, do not edit the expected bytes.
#[test]
fn header_bytes_are_magic_version_back_patched_toc_offset_and_zero_pad_to_64() {
    let mut w = KpackWriter::new("g", "gfx942", arches(&["gfx942"]), CompressionScheme::None);
    w.add_kernel("k", "gfx942", "hsaco", elf("x"), None)
        .unwrap();
    let bytes = w.to_bytes().unwrap();
    // 64 header bytes + 5 blob bytes, then the TOC at 69 = 0x45.
    let mut expected_header = vec![
        0x4B, 0x50, 0x41, 0x4B, 1, 0, 0, 0, 0x45, 0, 0, 0, 0, 0, 0, 0,
    ];
    expected_header.resize(64, 0);
    assert_eq!(&bytes[..64], &expected_header[..]);
    assert_eq!(&bytes[64..69], b"\x7fELFx");
    assert_eq!(toc_offset(&bytes), 69);
    // The whole file, pinned: header, blob, then the TOC map in the writer's key order.
    let mut toc = Vec::new();
    toc.push(0x87); // fixmap, 7 keys
    toc.extend_from_slice(b"\xaeformat_version\x01");
    toc.extend_from_slice(b"\xaagroup_name\xa1g");
    toc.extend_from_slice(b"\xafgfx_arch_family\xa6gfx942");
    toc.extend_from_slice(b"\xaagfx_arches\x91\xa6gfx942");
    toc.extend_from_slice(b"\xa3toc\x81\xa1k\x81\xa6gfx942\x83");
    toc.extend_from_slice(b"\xa4type\xa5hsaco\xa7ordinal\x00\xadoriginal_size\x05");
    toc.extend_from_slice(b"\xb2compression_scheme\xa4none");
    toc.extend_from_slice(b"\xa5blobs\x91\x82\xa6offset\x40\xa4size\x05");
    assert_eq!(&bytes[69..], &toc[..]);
}

#[test]
fn none_scheme_blobs_start_at_64_with_absolute_offsets_and_no_gaps() {
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let toc = decode_toc(&bytes);
    assert_eq!(
        keys(&toc),
        [
            "format_version",
            "group_name",
            "gfx_arch_family",
            "gfx_arches",
            "toc",
            "compression_scheme",
            "blobs"
        ]
    );
    let blobs = get(&toc, "blobs").as_array().unwrap();
    let loc = |i: usize| {
        let m = blobs[i].as_map().unwrap();
        (
            get(m, "offset").as_u64().unwrap(),
            get(m, "size").as_u64().unwrap(),
        )
    };
    assert_eq!(loc(0), (64, 11)); // a/k1 gfx90a
    assert_eq!(loc(1), (75, 18)); // a/k1 gfx942
    assert_eq!(loc(2), (93, 11)); // b/k2 gfx942
    assert_eq!(toc_offset(&bytes), 104);
    assert_eq!(&bytes[75..93], &elf("one-942-longer")[..]);
}

#[test]
fn toc_is_sorted_by_binary_name_then_arch_with_ordinals_in_that_order() {
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let toc = decode_toc(&bytes);
    let t = get(&toc, "toc").as_map().unwrap();
    assert_eq!(keys(t), ["a/k1", "b/k2"]);
    let a1 = get(t, "a/k1").as_map().unwrap();
    assert_eq!(keys(a1), ["gfx90a", "gfx942"]);
    let e = get(a1, "gfx942").as_map().unwrap();
    assert_eq!(keys(e), ["type", "ordinal", "original_size"]);
    assert_eq!(get(e, "ordinal").as_u64(), Some(1));
    assert!(get(e, "type").is_str(), "strings are msgpack str");
    let declared: Vec<&str> = get(&toc, "gfx_arches")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        declared,
        ["gfx942", "gfx90a"],
        "gfx_arches keeps the declared order"
    );
}

#[test]
fn writer_output_does_not_depend_on_insertion_order() {
    let mut w = KpackWriter::new(
        "grp",
        "gfx9",
        arches(&["gfx942", "gfx90a"]),
        CompressionScheme::ZstdPerKernel,
    );
    w.add_kernel("a/k1", "gfx90a", "hsaco", elf("one-90a"), None)
        .unwrap();
    w.add_kernel("a/k1", "gfx942", "hsaco", elf("one-942-longer"), None)
        .unwrap();
    w.add_kernel("b/k2", "gfx942", "hsaco", elf("two-942"), None)
        .unwrap();
    assert_eq!(
        w.to_bytes().unwrap(),
        three_kernel_writer(CompressionScheme::ZstdPerKernel)
            .to_bytes()
            .unwrap()
    );
}

#[test]
fn zstd_section_is_a_count_then_size_prefixed_frames_in_ordinal_order() {
    let bytes = three_kernel_writer(CompressionScheme::ZstdPerKernel)
        .to_bytes()
        .unwrap();
    let toc = decode_toc(&bytes);
    assert_eq!(
        keys(&toc),
        [
            "format_version",
            "group_name",
            "gfx_arch_family",
            "gfx_arches",
            "toc",
            "compression_scheme",
            "zstd_offset",
            "zstd_size"
        ]
    );
    assert_eq!(
        get(&toc, "compression_scheme").as_str(),
        Some("zstd-per-kernel")
    );
    let zoff = get(&toc, "zstd_offset").as_u64().unwrap() as usize;
    let zsize = get(&toc, "zstd_size").as_u64().unwrap() as usize;
    assert_eq!(zoff, 64);
    assert_eq!(zoff + zsize, toc_offset(&bytes));
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    assert_eq!(u32_at(64), 3);
    let mut pos = 68;
    let mut out = Vec::new();
    for _ in 0..3 {
        let n = u32_at(pos);
        let frame = &bytes[pos + 4..pos + 4 + n];
        assert_eq!(
            &frame[..4],
            &[0x28, 0xB5, 0x2F, 0xFD],
            "one complete zstd frame"
        );
        assert_eq!(
            frame,
            &zstd::bulk::compress(&zstd::decode_all(frame).unwrap(), 3).unwrap()[..],
            "level 3"
        );
        out.push(zstd::decode_all(frame).unwrap());
        pos += 4 + n;
    }
    assert_eq!(pos, zoff + zsize);
    assert_eq!(out, [elf("one-90a"), elf("one-942-longer"), elf("two-942")]);
}

#[test]
fn entry_type_is_written_as_given_and_metadata_verbatim() {
    let mut w = KpackWriter::new(
        "g",
        "sm",
        arches(&["sm_80", "sm_90"]),
        CompressionScheme::None,
    );
    w.add_kernel(
        "k",
        "sm_90",
        "ptx",
        b"// ptx".to_vec(),
        Some(Value::Map(vec![("n".into(), 7.into())])),
    )
    .unwrap();
    w.add_kernel("k", "sm_80", "cubin", elf("c"), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let a = KpackArchive::open(write(dir.path(), "g-sm.kpack", &w.to_bytes().unwrap())).unwrap();
    assert_eq!(a.entry("k", "sm_90").unwrap().kind, "ptx");
    assert_eq!(a.entry("k", "sm_80").unwrap().kind, "cubin");
    assert_eq!(
        a.entry("k", "sm_90").unwrap().metadata,
        Some(Value::Map(vec![("n".into(), 7.into())]))
    );
}

#[test]
fn writer_refuses_duplicate_pairs_and_undeclared_arches() {
    let mut w = KpackWriter::new("g", "gfx942", arches(&["gfx942"]), CompressionScheme::None);
    w.add_kernel("k", "gfx942", "hsaco", elf("1"), None)
        .unwrap();
    let dup = w
        .add_kernel("k", "gfx942", "hsaco", elf("2"), None)
        .unwrap_err();
    assert!(matches!(dup, KpackWriteError::DuplicateEntry { .. }));
    assert!(
        dup.to_string()
            .starts_with("kpack writer: duplicate entry for toc_key 'k' at arch 'gfx942'")
    );
    let undeclared = w
        .add_kernel("k", "gfx90a", "hsaco", elf("3"), None)
        .unwrap_err();
    assert!(matches!(undeclared, KpackWriteError::UndeclaredArch { .. }));
}

#[test]
fn a_missing_compression_scheme_reads_as_none_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let missing = rewrite_toc(&bytes, |t| {
        t.retain(|(k, _)| k.as_str() != Some("compression_scheme"))
    });
    let a = KpackArchive::open(write(dir.path(), "missing.kpack", &missing)).unwrap();
    assert_eq!(a.get_kernel("b/k2", "gfx942").unwrap(), elf("two-942"));
    let unknown = rewrite_toc(&bytes, |t| *get_mut(t, "compression_scheme") = "lz4".into());
    let e = KpackArchive::open(write(dir.path(), "unknown.kpack", &unknown)).unwrap_err();
    assert_eq!(e.code, KpackErrorCode::NotImplemented);
}

fn open_stage(bytes: &[u8], name: &str) -> (KpackErrorCode, KpackLoadStage, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    let code = KpackArchive::open(&p).unwrap_err().code;
    let e = read_verified_code_object(&p, "a/k1", "gfx942", &sha256_hex(&elf("one-942-longer")))
        .unwrap_err();
    (code, e.stage, e.message, p.display().to_string())
}

#[test]
fn bad_magic_is_refused_at_open_archive() {
    let mut bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    bytes[0] = b'X';
    let (code, stage, msg, p) = open_stage(&bytes, "magic.kpack");
    assert_eq!(code, KpackErrorCode::InvalidFormat);
    assert_eq!(stage, KpackLoadStage::OpenArchive);
    assert!(
        msg.starts_with(&format!(
            "kpack archive '{p}' could not be read (KPACK_ERROR_INVALID_FORMAT)"
        )),
        "{msg}"
    );
}

#[test]
fn a_version_other_than_1_is_refused_at_open_archive() {
    let mut bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    bytes[4] = 2;
    let (code, stage, msg, p) = open_stage(&bytes, "version.kpack");
    assert_eq!(code, KpackErrorCode::UnsupportedVersion);
    assert_eq!(stage, KpackLoadStage::OpenArchive);
    assert!(msg.starts_with(&format!(
        "kpack archive '{p}' could not be read (KPACK_ERROR_UNSUPPORTED_VERSION)"
    )));
}

#[test]
fn a_truncated_toc_is_refused_at_open_archive() {
    let bytes = three_kernel_writer(CompressionScheme::ZstdPerKernel)
        .to_bytes()
        .unwrap();
    let (code, stage, msg, p) = open_stage(&bytes[..bytes.len() - 3], "truncated.kpack");
    assert_eq!(code, KpackErrorCode::MsgpackParseFailed);
    assert_eq!(stage, KpackLoadStage::OpenArchive);
    assert!(msg.starts_with(&format!(
        "kpack archive '{p}' could not be read (KPACK_ERROR_MSGPACK_PARSE_FAILED)"
    )));
}

#[test]
fn a_corrupted_header_toc_offset_is_refused_at_open_archive() {
    let mut bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let len = bytes.len() as u64;
    bytes[8..16].copy_from_slice(&(len + 10).to_le_bytes());
    let (code, stage, _, _) = open_stage(&bytes, "offset.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
    let (code, stage, _, _) = open_stage(&bytes[..10], "short.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
}

#[test]
fn a_corrupted_toc_structure_is_refused_at_open_archive() {
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let not_a_map = rewrite_toc(&bytes, |t| *get_mut(t, "toc") = Value::Array(vec![]));
    let (code, stage, _, _) = open_stage(&not_a_map, "toc-array.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
    let mut garbage = bytes[..toc_offset(&bytes)].to_vec();
    garbage.extend_from_slice(b"\xa3abc"); // a msgpack str, not a map
    let (code, stage, _, _) = open_stage(&garbage, "toc-str.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
}

#[test]
fn a_corrupted_frame_table_is_refused_at_open_archive() {
    let mut bytes = three_kernel_writer(CompressionScheme::ZstdPerKernel)
        .to_bytes()
        .unwrap();
    let pristine = bytes.clone();
    bytes[68..72].copy_from_slice(&10_000u32.to_le_bytes());
    let (code, stage, _, _) = open_stage(&bytes, "frame-table.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
    // The last frame claiming one byte more than the section holds (it would run into the TOC).
    let mut bytes = pristine;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let mut pos = 68;
    for _ in 0..2 {
        pos += 4 + u32_at(&bytes, pos);
    }
    let last = u32_at(&bytes, pos) as u32 + 1;
    bytes[pos..pos + 4].copy_from_slice(&last.to_le_bytes());
    let (code, stage, _, _) = open_stage(&bytes, "frame-table-last.kpack");
    assert_eq!(
        (code, stage),
        (KpackErrorCode::InvalidFormat, KpackLoadStage::OpenArchive)
    );
}

#[test]
fn a_corrupted_zstd_frame_is_refused_at_decompress() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = three_kernel_writer(CompressionScheme::ZstdPerKernel)
        .to_bytes()
        .unwrap();
    // Frame 0 (a/k1 gfx90a) starts at 72: destroy its zstd magic.
    bytes[72..76].copy_from_slice(b"JUNK");
    let p = write(dir.path(), "frame.kpack", &bytes);
    let e =
        read_verified_code_object(&p, "a/k1", "gfx90a", &sha256_hex(&elf("one-90a"))).unwrap_err();
    assert_eq!(e.stage, KpackLoadStage::Decompress);
    assert_eq!(e.code, Some(KpackErrorCode::DecompressionFailed));
    let prefix = format!(
        "cannot decompress toc_key 'a/k1' at arch 'gfx90a' from kpack archive '{}' (KPACK_ERROR_DECOMPRESSION_FAILED)",
        p.display()
    );
    assert!(e.message.starts_with(&prefix), "{}", e.message);
    // The other frames are intact.
    read_verified_code_object(&p, "b/k2", "gfx942", &sha256_hex(&elf("two-942"))).unwrap();
}

#[test]
fn an_original_size_mismatch_is_decompression_failed_in_both_schemes() {
    let dir = tempfile::tempdir().unwrap();
    for (i, scheme) in [CompressionScheme::None, CompressionScheme::ZstdPerKernel]
        .into_iter()
        .enumerate()
    {
        let bytes = three_kernel_writer(scheme).to_bytes().unwrap();
        let lying = rewrite_toc(&bytes, |t| {
            let toc = map_mut(get_mut(t, "toc"));
            let e = map_mut(get_mut(map_mut(get_mut(toc, "a/k1")), "gfx942"));
            *get_mut(e, "original_size") = 17.into();
        });
        let p = write(dir.path(), &format!("size{i}.kpack"), &lying);
        let a = KpackArchive::open(&p).unwrap();
        assert_eq!(
            a.get_kernel("a/k1", "gfx942").unwrap_err().code,
            KpackErrorCode::DecompressionFailed
        );
        let e =
            read_verified_code_object(&p, "a/k1", "gfx942", &sha256_hex(&elf("one-942-longer")))
                .unwrap_err();
        assert_eq!(e.stage, KpackLoadStage::Decompress);
        assert_eq!(e.code, Some(KpackErrorCode::DecompressionFailed));
    }
}

#[test]
fn a_corrupted_blob_is_refused_at_digest_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    bytes[80] ^= 0xff; // inside a/k1 gfx942 (75..93), after its magic
    let p = write(dir.path(), "blob.kpack", &bytes);
    let e = read_verified_code_object(&p, "a/k1", "gfx942", &sha256_hex(&elf("one-942-longer")))
        .unwrap_err();
    assert_eq!(e.stage, KpackLoadStage::DigestMismatch);
}

#[test]
fn a_blob_outside_the_file_is_refused_at_decompress() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = three_kernel_writer(CompressionScheme::None)
        .to_bytes()
        .unwrap();
    let lying = rewrite_toc(&bytes, |t| {
        let Value::Array(blobs) = get_mut(t, "blobs") else {
            panic!("blobs")
        };
        *get_mut(map_mut(&mut blobs[2]), "offset") = 1_000_000.into();
    });
    let p = write(dir.path(), "outside.kpack", &lying);
    let e =
        read_verified_code_object(&p, "b/k2", "gfx942", &sha256_hex(&elf("two-942"))).unwrap_err();
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::Decompress,
            Some(KpackErrorCode::InvalidFormat)
        )
    );
}

#[test]
fn lookup_falls_back_to_a_single_split_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = KpackWriter::new(
        "g",
        "gfx9",
        arches(&["gfx942", "gfx90a"]),
        CompressionScheme::None,
    );
    w.add_kernel("lib/libhip.so#0", "gfx90a", "hsaco", elf("a"), None)
        .unwrap();
    w.add_kernel("lib/libhip.so#1", "gfx942", "hsaco", elf("b"), None)
        .unwrap();
    w.add_kernel(
        "lib/libhip.so#3",
        "gfx90a",
        "hsaco",
        elf("unreachable"),
        None,
    )
    .unwrap();
    let a = KpackArchive::open(write(dir.path(), "split.kpack", &w.to_bytes().unwrap())).unwrap();
    assert_eq!(a.get_kernel("lib/libhip.so", "gfx942").unwrap(), elf("b"));
    assert_eq!(
        a.get_kernel("lib/libhip.so", "gfx90a").unwrap(),
        elf("a"),
        "#3 is past the gap at #2"
    );
    assert_eq!(
        a.get_kernel("lib/libhip.so#0", "gfx90a").unwrap(),
        elf("a"),
        "a key may itself end in #0"
    );
    assert_eq!(
        a.get_kernel("lib/other.so", "gfx90a").unwrap_err().code,
        KpackErrorCode::KernelNotFound
    );
}

#[test]
fn several_split_hits_are_not_a_code_object() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = KpackWriter::new("g", "gfx942", arches(&["gfx942"]), CompressionScheme::None);
    w.add_kernel("lib/libhip.so#0", "gfx942", "hsaco", elf("a"), None)
        .unwrap();
    w.add_kernel("lib/libhip.so#1", "gfx942", "hsaco", elf("bb"), None)
        .unwrap();
    let p = write(dir.path(), "multi.kpack", &w.to_bytes().unwrap());
    let raw = KpackArchive::open(&p)
        .unwrap()
        .get_kernel("lib/libhip.so", "gfx942")
        .unwrap();
    let mut expected = 2u64.to_le_bytes().to_vec();
    expected.extend_from_slice(&5u64.to_le_bytes());
    expected.extend_from_slice(&elf("a"));
    expected.extend_from_slice(&6u64.to_le_bytes());
    expected.extend_from_slice(&elf("bb"));
    assert_eq!(raw, expected);
    let e =
        read_verified_code_object(&p, "lib/libhip.so", "gfx942", &sha256_hex(&raw)).unwrap_err();
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::Decompress,
            Some(KpackErrorCode::InvalidMetadata)
        )
    );
}
