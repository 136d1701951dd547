//! HKIP header tests (reference `ingestor-payload.md` §2, §6 checks 1–5, §14 "Header").

use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::ingestor::payload::header::{
    HEADER_SIZE, decode_header, digest_from_hex, digest_to_hex, encode_header,
};
use hipdnn_engines::ingestor::payload::refusal::{DAMAGED_PREFIX, INCOMPATIBLE_PREFIX};
use sha2::{Digest, Sha256};

fn payload_with(body: &[u8]) -> Vec<u8> {
    let mut p = encode_header(body).to_vec();
    p.extend_from_slice(body);
    p
}

fn set_u16(p: &mut [u8], at: usize, v: u16) {
    p[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn writes_the_forty_eight_byte_layout_little_endian() {
    // If this test fails you changed the format: bump the format version in
    // hipdnn_schema::pins::INGESTOR_PLAN_FORMAT_VERSION, do not edit the expected bytes.
    let body = b"any body bytes";
    let h = encode_header(body);
    assert_eq!(h.len(), 48);
    let mut expected = vec![
        0x48, 0x4B, 0x49, 0x50, // "HKIP"
        0x01, 0x00, // major 1
        0x00, 0x00, // minor 0
        0x01, 0x00, // kind SINGLE_KERNEL_PLAN
        0x30, 0x00, // header size 48
        0x00, 0x00, 0x00, 0x00, // reserved
    ];
    expected.extend_from_slice(&Sha256::digest(body));
    assert_eq!(h.to_vec(), expected);
}

#[test]
fn refuses_truncations_below_the_fixed_fields() {
    let p = payload_with(&[0u8; 32]);
    for n in 0..16 {
        let e = decode_header(&p[..n]).unwrap_err();
        assert_eq!(e.status, PluginStatus::InvalidValue, "size {n}");
        assert_eq!(
            e.message,
            format!(
                "{DAMAGED_PREFIX}truncated: the payload holds {n} bytes, and the fixed header fields need 16"
            )
        );
    }
}

#[test]
fn refuses_a_wrong_marker() {
    let mut p = payload_with(&[0u8; 32]);
    p[3] = b'Q';
    let e = decode_header(&p).unwrap_err();
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert_eq!(
        e.message,
        format!(
            "{DAMAGED_PREFIX}not an ingestor plan: the payload does not start with the HKIP marker"
        )
    );
}

#[test]
fn refuses_majors_zero_and_two() {
    for major in [0u16, 2] {
        let mut p = payload_with(&[0u8; 32]);
        set_u16(&mut p, 4, major);
        let e = decode_header(&p).unwrap_err();
        assert_eq!(e.status, PluginStatus::NotApplicable);
        assert_eq!(
            e.message,
            format!(
                "{INCOMPATIBLE_PREFIX}payload format version {major}.0 is not readable; this provider reads format versions 1.0 to 1.0"
            )
        );
    }
}

#[test]
fn refuses_minor_one_point_one_and_accepts_minor_zero() {
    let mut p = payload_with(&[0u8; 32]);
    set_u16(&mut p, 6, 1);
    let e = decode_header(&p).unwrap_err();
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert!(
        e.message.contains("version 1.1 is not readable"),
        "{}",
        e.message
    );
    set_u16(&mut p, 6, 0);
    assert!(decode_header(&p).is_ok());
}

#[test]
fn refuses_kinds_zero_and_two() {
    for kind in [0u16, 2] {
        let mut p = payload_with(&[0u8; 32]);
        set_u16(&mut p, 8, kind);
        let e = decode_header(&p).unwrap_err();
        assert_eq!(e.status, PluginStatus::NotApplicable);
        assert_eq!(
            e.message,
            format!("{INCOMPATIBLE_PREFIX}unknown ingestor plan kind {kind}")
        );
    }
}

#[test]
fn refuses_header_sizes_16_40_56_96_and_accepts_64() {
    // 48-byte header + 32-byte body = 80 bytes; 96 exceeds the payload.
    for size in [16u16, 40, 56, 96] {
        let mut p = payload_with(&[0u8; 32]);
        set_u16(&mut p, 10, size);
        let e = decode_header(&p).unwrap_err();
        assert_eq!(e.status, PluginStatus::InvalidValue, "size {size}");
        assert_eq!(
            e.message,
            format!(
                "{DAMAGED_PREFIX}header size {size} is invalid for a payload of 80 bytes; it must be at least 48, a multiple of 16 and no larger than the payload"
            )
        );
    }
    let mut p = payload_with(&[0u8; 32]);
    set_u16(&mut p, 10, 64);
    let h = decode_header(&p).unwrap();
    assert_eq!(h.header_size, 64);
    assert_eq!(h.body_sha256.to_vec(), Sha256::digest([0u8; 32]).to_vec());
}

#[test]
fn reserved_bytes_are_not_checked() {
    let mut p = payload_with(&[0u8; 32]);
    p[12..16].copy_from_slice(&[9, 9, 9, 9]);
    assert!(decode_header(&p).is_ok());
}

#[test]
fn checks_the_version_before_anything_else() {
    // Kind and header size are both wrong too; the version refusal wins.
    let mut p = payload_with(&[0u8; 32]);
    set_u16(&mut p, 4, 2);
    set_u16(&mut p, 8, 7);
    set_u16(&mut p, 10, 17);
    let e = decode_header(&p).unwrap_err();
    assert!(e.message.contains("version 2.0 "), "{}", e.message);
    assert!(e.message.contains("1.0 to 1.0"), "{}", e.message);
    // Kind before header size.
    set_u16(&mut p, 4, 1);
    let e = decode_header(&p).unwrap_err();
    assert!(
        e.message.contains("unknown ingestor plan kind 7"),
        "{}",
        e.message
    );
}

#[test]
fn converts_digests_between_raw_and_hex() {
    let raw: [u8; 32] = Sha256::digest(b"abc").into();
    let text = digest_to_hex(&raw);
    assert_eq!(
        text,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(digest_from_hex(&text), Some(raw));
    assert_eq!(digest_from_hex(&text[..63]), None);
    assert_eq!(HEADER_SIZE, 48);
}
