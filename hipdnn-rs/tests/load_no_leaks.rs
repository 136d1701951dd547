//! 100,000 loads of missing and damaged plan files through `Graph::load_from_file` leave the
//! open-descriptor count and the directory listing unchanged and create nothing (issue 37,
//! class 3). One test in this binary, so no other test opens descriptors meanwhile.

use hipdnn::*;
use std::path::Path;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_hundred_thousand_failed_loads_leave_no_descriptor_or_file() {
    let h = Handle::cpu().unwrap();
    // A real container, then damaged copies of it: truncated, one flipped byte in the plan
    // part, an empty file, a directory.
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([2, 3])
            .data_type(DataType::Float),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_uid(y, 2);
    g.build(&h).unwrap();
    let good = g.to_binary().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut flipped = good.clone();
    let at = flipped.len() - 40;
    flipped[at] ^= 0x10;
    std::fs::write(dir.path().join("truncated.hdgp"), &good[..good.len() / 2]).unwrap();
    std::fs::write(dir.path().join("flipped.hdgp"), &flipped).unwrap();
    std::fs::write(dir.path().join("empty.hdgp"), b"").unwrap();
    std::fs::create_dir(dir.path().join("dir.hdgp")).unwrap();
    std::fs::write(dir.path().join("good.hdgp"), &good).unwrap();
    let damaged = ["truncated.hdgp", "flipped.hdgp", "empty.hdgp", "dir.hdgp"];
    // The good file loads (so the failures below are the damage, not the setup).
    Graph::load_from_file(&h, dir.path().join("good.hdgp")).unwrap();
    let (fds, files) = (open_fds(), listing(dir.path()));
    assert!(fds > 0, "/proc/self/fd is readable");
    for i in 0..50_000 {
        let missing = dir.path().join(format!("missing-{i}.hdgp"));
        let e = Graph::load_from_file(&h, &missing).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue);
        assert!(e.message.starts_with("cannot read '"), "{}", e.message);
        let bad = dir.path().join(damaged[i % damaged.len()]);
        assert!(Graph::load_from_file(&h, &bad).is_err(), "{bad:?} loaded");
    }
    assert_eq!(open_fds(), fds, "open descriptors changed");
    assert_eq!(listing(dir.path()), files, "the directory listing changed");
}
