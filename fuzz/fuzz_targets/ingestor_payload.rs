//! The kernel ingestor's payload (`HKIP` header + `HKSP` FlatBuffer body) on any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hipdnn_engines::ingestor::payload::decode_header(data);
    if let Ok(p) = hipdnn_engines::ingestor::payload::decode_payload(data) {
        let again = hipdnn_engines::ingestor::payload::encode_payload(&p).expect("re-encodes");
        hipdnn_engines::ingestor::payload::decode_payload(&again).expect("re-decodes");
    }
});
