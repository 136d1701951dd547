//! Kernel descriptor JSON (with its library-path containment check) on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = hipdnn_engines::ingestor::KernelDescriptor::parse(
        Path::new("/tmp/hipdnn-fuzz-tree"),
        Path::new("/tmp/hipdnn-fuzz-tree/sub/d.json"),
        text,
    );
});
