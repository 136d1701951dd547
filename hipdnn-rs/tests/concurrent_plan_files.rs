//! Issue 37, class 1 (mixed entries from concurrent writers: a reader that paired one writer's
//! code with another writer's metadata): 16 processes save two different graph-and-plan
//! files over one path as fast as they can while 16 processes load and execute it. Every load
//! must succeed, re-save to exactly one of the two files' bytes and compute exactly that
//! graph's output; a mixed or partial file would fail one of the three.
//!
//! The children are this test binary run again with `HIPDNN_CLASS1_ROLE` set (see
//! `child_process_entry`); each runs for `SECONDS` and prints what it did.

mod common;

use hipdnn::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SECONDS: u64 = 3;
const N: usize = 257;

fn graph(mode: PointwiseMode) -> Graph {
    common::unary_graph(mode, N)
}

fn input() -> Vec<f32> {
    (0..N).map(|i| (i as f32 - 128.0) / 17.0).collect()
}

fn run(g: &Graph, h: &Handle) -> Vec<u32> {
    common::run_unary(g, h, &input())
}

/// The two files' bytes and outputs, built in this process.
fn files() -> [(Vec<u8>, Vec<u32>); 2] {
    let h = Handle::cpu().unwrap();
    [PointwiseMode::ReluFwd, PointwiseMode::TanhFwd].map(|m| {
        let mut g = graph(m);
        g.build(&h).unwrap();
        (g.to_binary().unwrap(), run(&g, &h))
    })
}

/// The child half: a writer or a reader of the shared path, for `SECONDS`.
#[test]
fn child_process_entry() {
    let (Ok(role), Ok(path)) = (
        std::env::var("HIPDNN_CLASS1_ROLE"),
        std::env::var("HIPDNN_CLASS1_PATH"),
    ) else {
        return;
    };
    let path = PathBuf::from(path);
    let both = files();
    let h = Handle::cpu().unwrap();
    let end = Instant::now() + Duration::from_secs(SECONDS);
    let mut n = 0usize;
    let mut seen = [0usize; 2];
    while Instant::now() < end {
        if role == "writer" {
            write_atomically(&path, &both[n % 2].0).unwrap();
        } else {
            let g =
                Graph::load_from_file(&h, &path).unwrap_or_else(|e| panic!("load {n} failed: {e}"));
            let bytes = g.to_binary().unwrap();
            let k = both
                .iter()
                .position(|(b, _)| *b == bytes)
                .unwrap_or_else(|| panic!("load {n} re-saved bytes of neither file"));
            assert_eq!(
                run(&g, &h),
                both[k].1,
                "load {n}: output of the other graph"
            );
            seen[k] += 1;
        }
        n += 1;
    }
    println!("CHILD {role} {n} {} {}", seen[0], seen[1]);
}

fn spawn(role: &str, path: &Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HIPDNN_CLASS1_ROLE", role)
        .env("HIPDNN_CLASS1_PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn sixteen_writers_and_sixteen_readers_never_meet_a_mixed_or_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.hdgp");
    let both = files();
    assert_ne!(both[0].1, both[1].1);
    write_atomically(&path, &both[0].0).unwrap();
    let children: Vec<_> = (0..32)
        .map(|i| spawn(if i % 2 == 0 { "writer" } else { "reader" }, &path))
        .collect();
    let (mut writes, mut loads, mut seen) = (0usize, 0usize, [0usize; 2]);
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find_map(|l| l.split_once("CHILD ").map(|(_, v)| v.to_string()))
            .unwrap_or_else(|| panic!("no CHILD line in {text}"));
        let f: Vec<&str> = line.split(' ').collect();
        let n: usize = f[1].parse().unwrap();
        if f[0] == "writer" {
            writes += n;
        } else {
            loads += n;
            seen[0] += f[2].parse::<usize>().unwrap();
            seen[1] += f[3].parse::<usize>().unwrap();
        }
    }
    eprintln!(
        "{writes} writes, {loads} loads ({} relu, {} tanh)",
        seen[0], seen[1]
    );
    assert!(
        writes >= 16 && loads >= 16,
        "{writes} writes, {loads} loads"
    );
    // Only the two files and no temporary file is left in the directory.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["shared.hdgp"]);
}
