//! Issue 37, class 2 (shared caches on other file systems: EBUSY/ENOENT escaping from
//! temp-file cleanup and renames): `Graph::save_to_file` / `load_from_file` cycles on tmpfs,
//! on overlayfs (a file of the lower layer replaced, so the rename copies up) and on a bind
//! mount, and a save whose rename fails with EBUSY (the target is itself a bind-mount point):
//! a typed error naming the path and the cause, the target untouched, no temporary file left.
//!
//! overlayfs and bind mounts run in a user and mount namespace (`unshare -Urm`), the test
//! binary re-run inside it (`child_process_entry`); where the namespace cannot be made, the
//! test prints why and checks what it can.

mod common;

use hipdnn::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const N: usize = 65;

fn graph(mode: PointwiseMode) -> Graph {
    common::unary_graph(mode, N)
}

fn run(g: &Graph, h: &Handle) -> Vec<u32> {
    let x: Vec<f32> = (0..N).map(|i| (i as f32 - 32.0) / 7.0).collect();
    common::run_unary(g, h, &x)
}

/// Two built graphs (relu, tanh) with their saved bytes and outputs.
fn pair(h: &Handle) -> Vec<(Graph, Vec<u8>, Vec<u32>)> {
    [PointwiseMode::ReluFwd, PointwiseMode::TanhFwd]
        .into_iter()
        .map(|m| {
            let mut g = graph(m);
            g.build(h).unwrap();
            let bytes = g.to_binary().unwrap();
            let out = run(&g, h);
            (g, bytes, out)
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// 40 save/load cycles of `dir/x.hdgp`, alternating the two graphs; then, with `busy`, a save
/// over a bind-mount point that must fail cleanly. `first` is the graph `x.hdgp` holds before
/// (overlay: a file of the lower layer).
fn cycle(dir: &Path, first: Option<usize>, busy: Option<&Path>) {
    let h = Handle::cpu().unwrap();
    let both = pair(&h);
    let path = dir.join("x.hdgp");
    if let Some(k) = first {
        let g = Graph::load_from_file(&h, &path).unwrap();
        assert_eq!(g.to_binary().unwrap(), both[k].1);
    }
    let before: Vec<String> = names(dir);
    for i in 0..40 {
        let (g, bytes, out) = &both[i % 2];
        g.save_to_file(&path, Form::GraphAndPlan).unwrap();
        let loaded = Graph::load_from_file(&h, &path).unwrap();
        assert_eq!(loaded.to_binary().unwrap(), *bytes, "cycle {i}");
        assert_eq!(run(&loaded, &h), *out, "cycle {i}");
    }
    let mut want = before;
    if !want.contains(&"x.hdgp".to_string()) {
        want.push("x.hdgp".into());
        want.sort();
    }
    assert_eq!(names(dir), want, "only the saved file is left");
    if let Some(busy) = busy {
        let old = std::fs::read(busy).unwrap();
        let e = both[0]
            .0
            .save_to_file(busy, Form::GraphAndPlan)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue);
        let prefix = format!("cannot save to '{}': ", busy.display());
        assert!(e.message.starts_with(&prefix), "{}", e.message);
        assert!(e.message.contains("(os error 16)"), "{}", e.message);
        assert_eq!(std::fs::read(busy).unwrap(), old, "the target is untouched");
        assert_eq!(
            names(busy.parent().unwrap()),
            want,
            "no temporary file left"
        );
        println!("EBUSY: {}", e.message);
    }
}

/// The child half: `cycle` in the mounted directory the parent names.
#[test]
fn child_process_entry() {
    let Ok(dir) = std::env::var("HIPDNN_CLASS2_DIR") else {
        return;
    };
    let first = std::env::var("HIPDNN_CLASS2_FIRST")
        .ok()
        .map(|v| v.parse().unwrap());
    let busy = std::env::var("HIPDNN_CLASS2_BUSY").ok().map(PathBuf::from);
    cycle(Path::new(&dir), first, busy.as_deref());
    println!("CHILD ok");
}

#[test]
fn save_and_load_cycles_hold_on_tmpfs() {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if !mounts
        .lines()
        .any(|l| l.starts_with("tmpfs /dev/shm tmpfs "))
    {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    cycle(dir.path(), None, None);
}

/// Runs `script` (after `set -e`) in a new user and mount namespace, then the child test
/// with `envs`. `None` when the namespace cannot be made (the reason is printed).
fn in_namespace(script: &str, envs: &[(&str, String)]) -> Option<String> {
    let probe = Command::new("unshare").args(["-Urm", "true"]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipped: unshare -Urm is not permitted here: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("skipped: unshare is not available: {e}");
            return None;
        }
    }
    let exe = std::env::current_exe().unwrap();
    let full = format!(
        "set -e\n{script}\nexec \"$EXE\" --exact child_process_entry --nocapture --test-threads=1"
    );
    let mut c = Command::new("unshare");
    c.args(["-Urm", "sh", "-c", &full]).env("EXE", exe);
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && text.contains("CHILD ok"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(text)
}

#[test]
fn save_and_load_cycles_hold_on_overlayfs_replacing_a_lower_layer_file() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir(r.join(d)).unwrap();
    }
    // The lower layer holds the tanh file; the first save replaces it (copy-up + rename).
    let h = Handle::cpu().unwrap();
    let both = pair(&h);
    std::fs::write(r.join("lower/x.hdgp"), &both[1].1).unwrap();
    let script = "mount -t overlay overlay -o lowerdir=\"$R/lower\",upperdir=\"$R/upper\",workdir=\"$R/work\" \"$R/merged\"";
    let d = r.join("merged");
    let Some(_) = in_namespace(
        script,
        &[
            ("R", r.display().to_string()),
            ("HIPDNN_CLASS2_DIR", d.display().to_string()),
            ("HIPDNN_CLASS2_FIRST", "1".into()),
        ],
    ) else {
        return;
    };
    // The lower layer is untouched; the upper layer holds the last save (the tanh graph after
    // 40 alternating saves ends on index 1).
    assert_eq!(std::fs::read(r.join("lower/x.hdgp")).unwrap(), both[1].1);
    assert_eq!(std::fs::read(r.join("upper/x.hdgp")).unwrap(), both[1].1);
}

#[test]
fn save_and_load_cycles_hold_on_a_bind_mount_and_a_busy_target_fails_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["src", "mnt"] {
        std::fs::create_dir(r.join(d)).unwrap();
    }
    std::fs::write(r.join("pinned"), b"pinned content").unwrap();
    std::fs::write(r.join("src/busy.hdgp"), b"").unwrap();
    let script =
        "mount --bind \"$R/src\" \"$R/mnt\"\nmount --bind \"$R/pinned\" \"$R/mnt/busy.hdgp\"";
    let Some(text) = in_namespace(
        script,
        &[
            ("R", r.display().to_string()),
            ("HIPDNN_CLASS2_DIR", r.join("mnt").display().to_string()),
            (
                "HIPDNN_CLASS2_BUSY",
                r.join("mnt/busy.hdgp").display().to_string(),
            ),
        ],
    ) else {
        return;
    };
    assert!(text.contains("EBUSY: cannot save to"), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.split_once("EBUSY: ").map(|(_, m)| m));
    eprintln!("EBUSY: {}", line.unwrap_or_default());
    // Outside the namespace: the files written through the bind mount are in src/.
    assert_eq!(names(&r.join("src")), ["busy.hdgp", "x.hdgp"]);
    assert_eq!(std::fs::read(r.join("pinned")).unwrap(), b"pinned content");
}
