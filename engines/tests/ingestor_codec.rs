//! Payload codec tests (reference `ingestor-payload.md` §3, §6, §14 "Codec").

use hipdnn_backend::status::{PluginError, PluginStatus};
use hipdnn_engines::ingestor::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::payload::refusal::{
    DAMAGED_PREFIX, ENCODE_PREFIX, INCOMPATIBLE_PREFIX,
};
use hipdnn_engines::ingestor::payload::{
    BodySizeLimits, HEADER_SIZE, IngestorPlanPayload, decode_payload, decode_payload_in_place,
    decode_payload_with_limits, encode_payload, encode_payload_with_limits, seal_body, sha256_hex,
};
use hipdnn_schema::flatbuffers::FlatBufferBuilder;
use hipdnn_schema::ingestor_plan as fb;

fn sample(kind: KernelSourceKind) -> IngestorPlanPayload {
    let code: Vec<u8> = (0..37u8).collect();
    let mut values = LaunchValues::new();
    values.insert("flag".into(), LaunchValue::Bool(true));
    values.insert("count".into(), LaunchValue::Int(-42));
    values.insert("scale".into(), LaunchValue::Float(0.25));
    values.insert("layout".into(), LaunchValue::String("bshd".into()));
    values.insert("shape".into(), LaunchValue::IntList(vec![2, 3, 5]));
    IngestorPlanPayload {
        kernel_descriptor_id: *b"0123456789abcdef",
        workspace_bytes: 4096,
        runtime_pass_by_value_uids: vec![],
        dispatch_symbol: "hipkernel.test.dispatch.v1".into(),
        launch_values: values,
        source_kind: kind,
        symbol: "test_kernel".into(),
        target: "gfx90a:xnack-".into(),
        sha256: sha256_hex(&code),
        signature: vec![
            KernelArgument::new("global_buffer", 8, 0),
            KernelArgument::named("by_value", 4, 8, "count"),
        ],
        code_object: code,
        provider_version: "9.8.7".into(),
    }
}

fn assert_refused(e: &PluginError, status: PluginStatus, prefix: &str, needle: &str) {
    assert_eq!(e.status, status, "{}", e.message);
    assert!(e.message.starts_with(prefix), "{}", e.message);
    assert!(
        e.message.contains(needle),
        "expected '{needle}' in: {}",
        e.message
    );
}

fn body_of(payload: &[u8]) -> Vec<u8> {
    payload[HEADER_SIZE..].to_vec()
}

/// Offset of the code object's data in a body (via the generated accessors).
fn code_offset(body: &[u8]) -> usize {
    let plan = fb::root_as_execution_plan(body).unwrap();
    plan.kernel_image().code_object().bytes().as_ptr() as usize - body.as_ptr() as usize
}

/// Launch values of a hand-built body: (name, union type, carries data).
type RawValues = Vec<(String, u8, bool)>;
/// An edit of a valid payload.
type Edit = Box<dyn Fn(&mut IngestorPlanPayload)>;

/// Hand-built bodies for cases the encoder refuses to write.
struct Raw {
    workspace: Option<u64>,
    source_kind: u8,
    sha256: String,
    values: RawValues,
    uids: Vec<i64>,
    provider_version: Option<String>,
    identifier: &'static str,
    code: Vec<u8>,
}

impl Raw {
    fn valid() -> Raw {
        let code = vec![7u8; 20];
        Raw {
            workspace: Some(0),
            source_kind: 2,
            sha256: sha256_hex(&code),
            values: vec![("a".into(), 2, true)],
            uids: vec![],
            provider_version: Some("1".into()),
            identifier: "HKSP",
            code,
        }
    }
    fn body(&self) -> Vec<u8> {
        let mut b = FlatBufferBuilder::new();
        let symbol = b.create_string("k");
        let target = b.create_string("gfx90a");
        let sha = b.create_string(&self.sha256);
        let sig =
            b.create_vector::<hipdnn_schema::flatbuffers::ForwardsUOffset<fb::KernelArgument>>(&[]);
        let code = b.create_vector(&self.code);
        let image = fb::KernelImage::create(
            &mut b,
            &fb::KernelImageArgs {
                source_kind: fb::SourceKind(self.source_kind),
                symbol: Some(symbol),
                target: Some(target),
                sha256: Some(sha),
                signature: Some(sig),
                code_object: Some(code),
            },
        );
        let vals: Vec<_> = self
            .values
            .iter()
            .map(|(name, t, data)| {
                let n = b.create_string(name);
                let d = data.then(|| {
                    fb::Int64Value::create(&mut b, &fb::Int64ValueArgs { value: 5 })
                        .as_union_value()
                });
                fb::LaunchValue::create(
                    &mut b,
                    &fb::LaunchValueArgs {
                        name: Some(n),
                        value_type: fb::LaunchValueData(*t),
                        value: d,
                    },
                )
            })
            .collect();
        let vals = b.create_vector(&vals);
        let ds = b.create_string("hipkernel.test.dispatch.v1");
        let dispatch = fb::DispatchData::create(
            &mut b,
            &fb::DispatchDataArgs {
                dispatch_symbol: Some(ds),
                values: Some(vals),
            },
        );
        let uids = b.create_vector(&self.uids);
        let pv = self.provider_version.as_ref().map(|v| b.create_string(v));
        let id = fb::Uuid([1; 16]);
        // Built by hand: the generated builder panics on a missing required field.
        let start = b.start_table();
        if let Some(w) = self.workspace {
            b.push_slot_always::<u64>(fb::ExecutionPlan::VT_WORKSPACE_BYTES, w);
        }
        b.push_slot_always(fb::ExecutionPlan::VT_RUNTIME_PASS_BY_VALUE_UIDS, uids);
        b.push_slot_always(fb::ExecutionPlan::VT_DISPATCH_DATA, dispatch);
        b.push_slot_always(fb::ExecutionPlan::VT_KERNEL_IMAGE, image);
        if let Some(pv) = pv {
            b.push_slot_always(fb::ExecutionPlan::VT_PROVIDER_VERSION, pv);
        }
        b.push_slot_always::<&fb::Uuid>(fb::ExecutionPlan::VT_KERNEL_DESCRIPTOR_ID, &id);
        let root = b.end_table(start);
        b.finish(root, Some(self.identifier));
        b.finished_data().to_vec()
    }
    fn decode(&self) -> Result<IngestorPlanPayload, PluginError> {
        decode_payload(&seal_body(&self.body()))
    }
}

#[test]
fn round_trips_every_field() {
    for kind in [
        KernelSourceKind::EmbeddedSource,
        KernelSourceKind::Kpack,
        KernelSourceKind::HsacoFile,
        KernelSourceKind::RockeBuilder,
    ] {
        let p = sample(kind);
        let bytes = encode_payload(&p).unwrap();
        assert_eq!(decode_payload(&bytes).unwrap(), p);
    }
}

#[test]
fn round_trips_empty_optional_content() {
    let mut p = sample(KernelSourceKind::Kpack);
    p.launch_values.clear();
    p.signature.clear();
    p.target.clear();
    p.code_object.clear();
    p.sha256 = sha256_hex(&[]);
    let bytes = encode_payload(&p).unwrap();
    assert_eq!(decode_payload(&bytes).unwrap(), p);
}

#[test]
fn round_trips_a_double_launch_value_exactly() {
    for bits in [
        0x3FB9_9999_9999_999Au64,
        1,
        0x7FEF_FFFF_FFFF_FFFF,
        0x8000_0000_0000_0000,
    ] {
        let mut p = sample(KernelSourceKind::Kpack);
        p.launch_values
            .insert("scale".into(), LaunchValue::Float(f64::from_bits(bits)));
        let back = decode_payload(&encode_payload(&p).unwrap()).unwrap();
        match back.launch_values["scale"] {
            LaunchValue::Float(v) => assert_eq!(v.to_bits(), bits),
            ref o => panic!("{o:?}"),
        }
    }
}

#[test]
fn writes_launch_values_sorted_by_name() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let body = body_of(&bytes);
    let plan = fb::root_as_execution_plan(&body).unwrap();
    let names: Vec<_> = plan
        .dispatch_data()
        .values()
        .iter()
        .map(|v| v.name())
        .collect();
    assert_eq!(names, ["count", "flag", "layout", "scale", "shape"]);
    assert!(plan.kernel_image().signature().get(0).name().is_none());
}

#[test]
fn body_starts_at_the_header_size_and_code_is_sixteen_byte_aligned() {
    for n in 1..=17usize {
        let mut p = sample(KernelSourceKind::Kpack);
        p.code_object = vec![0xC3; n];
        p.sha256 = sha256_hex(&p.code_object);
        let bytes = encode_payload(&p).unwrap();
        let body = body_of(&bytes);
        let at = code_offset(&body);
        assert_eq!(at % 16, 0, "code size {n}: body offset {at}");
        assert_eq!((HEADER_SIZE + at) % 16, 0, "code size {n}: payload offset");
        assert_eq!(
            &bytes[HEADER_SIZE + at..HEADER_SIZE + at + n],
            &p.code_object[..]
        );
    }
}

#[test]
fn reads_a_body_that_starts_misaligned() {
    let p = sample(KernelSourceKind::Kpack);
    let bytes = encode_payload(&p).unwrap();
    for shift in 1..16usize {
        // Place the payload so that its body is `shift` bytes past a 16-byte boundary.
        let mut storage = vec![0u8; bytes.len() + 64];
        let base = (16 - storage.as_ptr() as usize % 16) % 16;
        let start = base + shift;
        storage[start..start + bytes.len()].copy_from_slice(&bytes);
        let view = &storage[start..start + bytes.len()];
        assert_eq!((view.as_ptr() as usize + HEADER_SIZE) % 16, shift);
        assert_eq!(decode_payload(view).unwrap(), p, "shift {shift}");
    }
}

#[test]
fn decodes_in_place_with_the_code_object_range_aligned_or_not() {
    let p = sample(KernelSourceKind::Kpack);
    let bytes = encode_payload(&p).unwrap();
    let at = HEADER_SIZE + code_offset(&body_of(&bytes));
    for shift in 0..16usize {
        let mut storage = vec![0u8; bytes.len() + 64];
        let base = (16 - storage.as_ptr() as usize % 16) % 16;
        let start = base + shift;
        storage[start..start + bytes.len()].copy_from_slice(&bytes);
        let view = &storage[start..start + bytes.len()];
        let d = decode_payload_in_place(view, BodySizeLimits::default()).unwrap();
        // The range is relative to the input, even when the body was read from aligned
        // storage (shift != 0).
        assert_eq!(d.code_object, at..at + p.code_object.len(), "shift {shift}");
        assert_eq!(&view[d.code_object.clone()], &p.code_object[..]);
        assert!(
            d.fields.code_object.is_empty(),
            "no copy of the code object"
        );
        let mut fields = d.fields;
        fields.code_object = p.code_object.clone();
        assert_eq!(fields, p, "shift {shift}");
    }
}

#[test]
fn decoding_in_place_refuses_exactly_what_decoding_refuses() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let at = HEADER_SIZE + code_offset(&body_of(&bytes));
    let mut flipped = bytes.clone();
    flipped[at] ^= 0x01;
    let mut body = body_of(&bytes);
    let code_at = code_offset(&body);
    body[code_at] ^= 0xFF; // resealed: check 9b, not the body digest
    let cases = [bytes[..bytes.len() - 1].to_vec(), flipped, seal_body(&body)];
    for b in cases {
        let copied = decode_payload(&b).unwrap_err();
        let in_place = decode_payload_in_place(&b, BodySizeLimits::default()).unwrap_err();
        assert_eq!(in_place.status, copied.status);
        assert_eq!(in_place.message, copied.message);
        assert!(
            in_place.message.starts_with(DAMAGED_PREFIX),
            "{}",
            in_place.message
        );
    }
    let e = decode_payload(&seal_body(&body)).unwrap_err();
    assert!(
        e.message.contains("does not match the code object"),
        "{}",
        e.message
    );
}

#[test]
fn a_flipped_byte_in_the_code_or_the_root_offset_is_a_digest_mismatch() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let at = HEADER_SIZE + code_offset(&body_of(&bytes));
    for pos in [at, HEADER_SIZE] {
        let mut b = bytes.clone();
        b[pos] ^= 0x01;
        let e = decode_payload(&b).unwrap_err();
        assert_refused(
            &e,
            PluginStatus::InvalidValue,
            DAMAGED_PREFIX,
            "body digest mismatch: the header records ",
        );
    }
}

#[test]
fn refuses_every_truncation() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    for n in 0..bytes.len() {
        let e = decode_payload(&bytes[..n]).unwrap_err();
        assert_eq!(
            e.status,
            PluginStatus::InvalidValue,
            "prefix {n}: {}",
            e.message
        );
        assert!(
            e.message.starts_with(DAMAGED_PREFIX),
            "prefix {n}: {}",
            e.message
        );
    }
}

#[test]
fn verifier_rejects_a_corrupt_root_offset_with_a_valid_digest() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let mut body = body_of(&bytes);
    body[0..4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let e = decode_payload(&seal_body(&body)).unwrap_err();
    assert_refused(
        &e,
        PluginStatus::InvalidValue,
        DAMAGED_PREFIX,
        "the FlatBuffers verifier rejects the payload body",
    );
}

#[test]
fn rejects_a_body_with_another_file_identifier() {
    let mut raw = Raw::valid();
    raw.decode().unwrap();
    raw.identifier = "XXXX";
    let e = raw.decode().unwrap_err();
    assert_refused(
        &e,
        PluginStatus::InvalidValue,
        DAMAGED_PREFIX,
        "does not carry the HKSP file identifier",
    );
}

#[test]
fn refuses_a_body_outside_the_size_limits() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let n = bytes.len() - HEADER_SIZE;
    let lim = |min, max| BodySizeLimits { min, max };
    // max: the body must be smaller than max.
    let e = decode_payload_with_limits(&bytes, lim(12, n)).unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "{DAMAGED_PREFIX}body size {n} is outside the FlatBuffers limits: at least 12 and less than {n}"
        )
    );
    assert!(decode_payload_with_limits(&bytes, lim(12, n + 1)).is_ok());
    let e = decode_payload_with_limits(&bytes, lim(n + 1, usize::MAX)).unwrap_err();
    assert_refused(&e, PluginStatus::InvalidValue, DAMAGED_PREFIX, "body size");
    assert!(decode_payload_with_limits(&bytes, lim(n, usize::MAX)).is_ok());
    // The real limits: an 11-byte body is refused before its digest is looked at.
    let mut tiny = seal_body(&[0u8; 11]);
    tiny[20] ^= 1;
    let e = decode_payload(&tiny).unwrap_err();
    assert!(
        e.message.contains(
            "body size 11 is outside the FlatBuffers limits: at least 12 and less than 2147483647"
        ),
        "{}",
        e.message
    );
}

#[test]
fn refuses_a_non_empty_runtime_pass_by_value_list() {
    let mut raw = Raw::valid();
    raw.uids = vec![7];
    let e = raw.decode().unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "{INCOMPATIBLE_PREFIX}the plan takes runtime pass-by-value tensors (UIDs 7), which this provider does not support"
        )
    );
    assert_eq!(e.status, PluginStatus::NotApplicable);
    raw.uids = vec![7, 8];
    assert!(raw.decode().unwrap_err().message.contains("(UIDs 7, 8)"));
}

#[test]
fn damage_is_reported_before_incompatibility() {
    let mut raw = Raw::valid();
    raw.uids = vec![7];
    raw.workspace = None;
    let e = raw.decode().unwrap_err();
    assert_refused(
        &e,
        PluginStatus::InvalidValue,
        DAMAGED_PREFIX,
        "workspace_bytes is missing",
    );
    // Header damage beats an incompatible body too.
    let mut raw = Raw::valid();
    raw.uids = vec![7];
    let mut p = seal_body(&raw.body());
    p[HEADER_SIZE + 5] ^= 1;
    let e = decode_payload(&p).unwrap_err();
    assert_refused(
        &e,
        PluginStatus::InvalidValue,
        DAMAGED_PREFIX,
        "body digest mismatch",
    );
}

#[test]
fn rejects_malformed_launch_values() {
    let cases: [(RawValues, &str); 5] = [
        (
            vec![("a".into(), 0, false)],
            "launch value 'a' has unknown value type 0",
        ),
        (
            vec![("a".into(), 9, true)],
            "launch value 'a' has unknown value type 9",
        ),
        (
            vec![("a".into(), 2, true), ("".into(), 2, true)],
            "launch value at index 1 has no name",
        ),
        (
            vec![("a".into(), 2, true), ("a".into(), 2, true)],
            "launch value name 'a' occurs more than once",
        ),
        // The Rust FlatBuffers verifier already refuses a union with a type and no value, so
        // this case is damage at check 8; the structure check 9 stays as a second line.
        (
            vec![("a".into(), 2, false)],
            "the FlatBuffers verifier rejects the payload body, or the body does not carry the HKSP file identifier",
        ),
    ];
    for (values, text) in cases {
        let mut raw = Raw::valid();
        raw.values = values;
        let e = raw.decode().unwrap_err();
        assert_eq!(e.message, format!("{DAMAGED_PREFIX}{text}"));
        assert_eq!(e.status, PluginStatus::InvalidValue);
    }
}

#[test]
fn quotes_long_payload_text_cut_at_eighty_characters() {
    let mut raw = Raw::valid();
    let long = "n".repeat(100);
    raw.values = vec![(long.clone(), 2, true), (long, 2, true)];
    let e = raw.decode().unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "{DAMAGED_PREFIX}launch value name '{}... (100 characters)' occurs more than once",
            "n".repeat(80)
        )
    );
}

#[test]
fn rejects_a_missing_required_scalar() {
    let mut raw = Raw::valid();
    raw.workspace = None;
    let e = raw.decode().unwrap_err();
    assert_eq!(
        e.message,
        format!("{DAMAGED_PREFIX}the required field workspace_bytes is missing")
    );
}

#[test]
fn verifier_rejects_a_body_without_a_provider_version() {
    let mut raw = Raw::valid();
    raw.provider_version = None;
    let e = raw.decode().unwrap_err();
    assert_refused(
        &e,
        PluginStatus::InvalidValue,
        DAMAGED_PREFIX,
        "the FlatBuffers verifier rejects",
    );
}

/// An empty provider version passes the verifier but the writer refuses it, so the reader
/// refuses it as damage: every decoded payload re-encodes (found by the `ingestor_payload`
/// fuzz target, which re-encodes what decodes).
#[test]
fn rejects_an_empty_provider_version_the_writer_would_refuse() {
    let mut raw = Raw::valid();
    raw.provider_version = Some(String::new());
    let e = raw.decode().unwrap_err();
    assert_eq!(
        e.message,
        format!("{DAMAGED_PREFIX}the provider version is empty")
    );
    assert_eq!(e.status, PluginStatus::InvalidValue);
}

#[test]
fn rejects_a_malformed_kernel_digest() {
    let good = Raw::valid().sha256;
    for bad in [good[..63].to_string(), good.to_uppercase()] {
        let mut raw = Raw::valid();
        raw.sha256 = bad.clone();
        let e = raw.decode().unwrap_err();
        assert_eq!(
            e.message,
            format!("{DAMAGED_PREFIX}the kernel digest '{bad}' is not 64 lowercase hex characters")
        );
    }
}

#[test]
fn rejects_an_unset_or_unknown_source_kind() {
    for kind in [0u8, 9] {
        let mut raw = Raw::valid();
        raw.source_kind = kind;
        let e = raw.decode().unwrap_err();
        assert_eq!(
            e.message,
            format!("{DAMAGED_PREFIX}kernel source kind {kind} is unset or unknown")
        );
    }
}

#[test]
fn refuses_a_kernel_digest_that_does_not_match_the_code_object() {
    let mut raw = Raw::valid();
    let expected = raw.sha256.clone();
    raw.code[3] ^= 0x40;
    let got = sha256_hex(&raw.code);
    let e = raw.decode().unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "{DAMAGED_PREFIX}the kernel digest {expected} does not match the code object, which hashes to {got}"
        )
    );
    assert_eq!(e.status, PluginStatus::InvalidValue);
}

#[test]
fn writer_rejects_inputs_it_owns_as_an_internal_error() {
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|p| p.symbol.clear()), "the kernel symbol is empty"),
        (
            Box::new(|p| p.dispatch_symbol.clear()),
            "the dispatch symbol is empty",
        ),
        (
            Box::new(|p| p.sha256 = "ABC".into()),
            "the kernel digest 'ABC' is not 64 lowercase hex characters",
        ),
    ];
    for (edit, text) in cases {
        let mut p = sample(KernelSourceKind::Kpack);
        edit(&mut p);
        let e = encode_payload(&p).unwrap_err();
        assert_eq!(e.status, PluginStatus::InternalError);
        assert_eq!(e.message, format!("{ENCODE_PREFIX}{text}"));
    }
}

#[test]
fn writer_refuses_an_empty_provider_version() {
    let mut p = sample(KernelSourceKind::Kpack);
    p.provider_version.clear();
    let e = encode_payload(&p).unwrap_err();
    assert_eq!(e.status, PluginStatus::InternalError);
    assert_eq!(
        e.message,
        format!("{ENCODE_PREFIX}the provider version is empty")
    );
}

#[test]
fn writer_refuses_a_code_object_the_format_cannot_hold_with_the_load_prefix() {
    let p = sample(KernelSourceKind::Kpack);
    let e = encode_payload_with_limits(&p, BodySizeLimits { min: 12, max: 37 }).unwrap_err();
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert_eq!(
        e.message,
        format!(
            "{INCOMPATIBLE_PREFIX}the code object holds 37 bytes, and the payload format holds less than 37"
        )
    );
    let e = encode_payload_with_limits(&p, BodySizeLimits { min: 12, max: 38 }).unwrap_err();
    assert_eq!(e.status, PluginStatus::InternalError);
    assert!(e.message.starts_with(ENCODE_PREFIX), "{}", e.message);
}

/// For every body byte: flip it, reseal the header digest, decode. The outcome must be a
/// refusal with the right status and prefix, or a payload whose lengths fit inside the body.
#[test]
fn resealed_byte_sweep_never_panics_and_refuses_with_the_right_prefix() {
    let bytes = encode_payload(&sample(KernelSourceKind::Kpack)).unwrap();
    let body = body_of(&bytes);
    let mut refused = 0;
    for i in 0..body.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut b = body.clone();
            b[i] ^= mask;
            let sealed = seal_body(&b);
            let result = std::panic::catch_unwind(|| decode_payload(&sealed));
            match result.unwrap_or_else(|_| panic!("decode panicked at byte {i} mask {mask:#x}")) {
                Err(e) => {
                    refused += 1;
                    match e.status {
                        PluginStatus::InvalidValue => {
                            assert!(e.message.starts_with(DAMAGED_PREFIX), "{}", e.message)
                        }
                        PluginStatus::NotApplicable => {
                            assert!(e.message.starts_with(INCOMPATIBLE_PREFIX), "{}", e.message)
                        }
                        s => panic!("byte {i}: unexpected status {s:?}: {}", e.message),
                    }
                }
                Ok(p) => {
                    let text: usize = p.dispatch_symbol.len()
                        + p.symbol.len()
                        + p.target.len()
                        + p.sha256.len()
                        + p.provider_version.len()
                        + p.launch_values.keys().map(String::len).sum::<usize>();
                    assert!(p.code_object.len() <= b.len(), "byte {i}");
                    assert!(text <= b.len(), "byte {i}");
                    assert!(p.signature.len() * 4 <= b.len(), "byte {i}");
                }
            }
        }
    }
    assert!(refused > 0);
}
