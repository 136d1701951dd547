//! Architecture selection (kpack.md §6, §10, §11 "TestKpackArchSelection").

use std::sync::Mutex;

use hipdnn_kpack::{
    ArchSelection, ArchTier, arch_matches, find_generic_target, select_arch, strip_arch_features,
};

fn pick(device: &str, candidates: &[&str]) -> Option<ArchSelection> {
    select_arch(device, candidates)
}

fn explicit(index: usize) -> Option<ArchSelection> {
    Some(ArchSelection {
        index,
        tier: ArchTier::Explicit,
    })
}

fn generic(index: usize) -> Option<ArchSelection> {
    Some(ArchSelection {
        index,
        tier: ArchTier::Generic,
    })
}

#[test]
fn a_decorated_device_picks_a_bare_entry() {
    assert_eq!(pick("gfx90a:sramecc+:xnack-", &["gfx90a"]), explicit(0));
}

#[test]
fn a_decorated_device_picks_a_decorated_entry() {
    assert_eq!(
        pick("gfx90a:sramecc+:xnack-", &["gfx90a:sramecc+"]),
        explicit(0)
    );
    assert_eq!(
        pick("gfx90a:sramecc+:xnack-", &["gfx90a:xnack-"]),
        None,
        "features match in device order only"
    );
}

#[test]
fn the_first_matching_entry_wins() {
    let c = ["gfx942", "gfx90a:sramecc+", "gfx90a"];
    assert_eq!(pick("gfx90a:sramecc+:xnack-", &c), explicit(1));
    // Identity of the chosen list element, not just an equal name.
    assert_eq!(pick("gfx90a", &["gfx90a", "gfx90a"]), explicit(0));
}

#[test]
fn a_stripped_device_name_cannot_select_a_decorated_entry() {
    assert_eq!(pick("gfx90a", &["gfx90a:xnack-"]), None);
}

#[test]
fn a_family_stem_does_not_match() {
    assert_eq!(pick("gfx90a", &["gfx90"]), None);
    assert_eq!(pick("gfx90a:xnack-", &["gfx9"]), None);
    assert!(!arch_matches("gfx1151", "gfx115"));
}

#[test]
fn no_entry_for_the_device_selects_nothing() {
    assert_eq!(pick("gfx90a", &["gfx942", "gfx1100"]), None);
    assert_eq!(pick("gfx90a", &[]), None);
}

#[test]
fn an_explicit_entry_beats_a_generic_entry() {
    assert_eq!(pick("gfx1151", &["gfx11-generic", "gfx1151"]), explicit(1));
}

#[test]
fn prefers_the_exact_device_arch_over_a_generic_key() {
    assert_eq!(
        pick("gfx1100:xnack-", &["gfx11-generic", "gfx1100"]),
        explicit(1)
    );
}

#[test]
fn a_generic_entry_serves_a_member_device() {
    assert_eq!(pick("gfx1151", &["gfx942", "gfx11-generic"]), generic(1));
    assert_eq!(
        pick("gfx942:sramecc+:xnack-", &["gfx9-4-generic"]),
        generic(0),
        "judged on the base arch"
    );
    assert!(
        find_generic_target("gfx11-generic")
            .unwrap()
            .members
            .contains(&"gfx1151")
    );
}

#[test]
fn a_generic_only_archive_selects_the_generic_key() {
    assert_eq!(pick("gfx1030", &["gfx10-3-generic"]), generic(0));
}

#[test]
fn a_generic_entry_does_not_serve_a_non_member() {
    assert_eq!(pick("gfx1030", &["gfx11-generic"]), None);
    assert_eq!(
        pick("gfx90a", &["gfx9-generic"]),
        None,
        "gfx90a is not in LLVM's gfx9-generic"
    );
}

#[test]
fn a_generic_key_not_in_the_table_never_matches() {
    assert_eq!(pick("gfx1300", &["gfx13-generic"]), None);
    // Even where the prefix rule alone would accept it.
    assert_eq!(pick("gfx99-generic", &["gfx99-generic"]), None);
}

#[test]
fn an_sm_90_device_selects_sm_90_not_sm_80() {
    assert_eq!(pick("sm_90", &["sm_80", "sm_90"]), explicit(1));
    assert_eq!(pick("sm_90", &["sm_80"]), None, "no forward-JIT tier");
    assert_eq!(pick("sm_90a", &["sm_90"]), None);
    assert_eq!(pick("sm_90", &["sm_9"]), None);
}

#[test]
fn a_capture_records_the_device_base_name() {
    assert_eq!(strip_arch_features("gfx942:sramecc+:xnack-"), "gfx942");
    assert_eq!(strip_arch_features("gfx90a"), "gfx90a");
    assert_eq!(strip_arch_features("sm_90"), "sm_90");
}

struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        if record.level() == log::Level::Info {
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

#[test]
fn a_generic_selection_logs_info() {
    let _ = log::set_logger(&CAPTURE);
    log::set_max_level(log::LevelFilter::Info);
    pick("gfx1152", &["gfx11-generic"]);
    pick("gfx1153", &["gfx1153", "gfx11-generic"]);
    let logged = CAPTURE.0.lock().unwrap().clone();
    assert!(
        logged.contains(
            &"kpack: device arch 'gfx1152' is served by generic archive key 'gfx11-generic'"
                .to_string()
        )
    );
    assert!(
        !logged.iter().any(|m| m.contains("'gfx1153'")),
        "an explicit selection logs nothing"
    );
}
