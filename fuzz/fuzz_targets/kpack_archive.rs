//! A kpack archive (header, MessagePack TOC, blob table or zstd frames) on any bytes: open,
//! then read every entry the TOC lists.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("hipdnn-fuzz-{}.kpack", std::process::id()));
    let Ok(mut f) = std::fs::File::create(&path) else {
        return;
    };
    if f.write_all(data).is_err() {
        return;
    }
    drop(f);
    if let Ok(a) = hipdnn_kpack::KpackArchive::open(&path) {
        let keys: Vec<(String, String)> = a
            .entries()
            .map(|(b, arch, _)| (b.to_string(), arch.to_string()))
            .collect();
        for (b, arch) in keys.iter().take(16) {
            let _ = a.get_kernel(b, arch);
        }
    }
});
