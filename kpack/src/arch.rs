//! Architecture selection for kpack archives (kpack.md §6, rocm-libraries plugin SDK
//! `ArchMatch.hpp` / `GpuGenericTargets.hpp` @22ee9c8c, final tiers per PR13315). Owns the match
//! rule and the generic-target table; it never opens archives.

/// How a selected archive key serves the device (`ArchTier`; lower wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArchTier {
    /// A key not ending in `-generic` that prefix-matches the decorated device arch.
    Explicit = 0,
    /// A known LLVM generic target (e.g. `gfx11-generic`) whose members contain the device.
    Generic = 1,
    /// Reserved upstream (`UNRESTRICTED`); never produced by this selector.
    Unrestricted = 2,
}

/// The result of [`select_arch`]: which candidate was chosen and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchSelection {
    /// Index into the candidate list (the archive's `gfx_arches`), identifying the exact element.
    pub index: usize,
    /// The tier that chose it.
    pub tier: ArchTier,
}

/// One LLVM AMDGPU generic target and the processors it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenericTarget {
    /// The generic target name, e.g. `"gfx11-generic"`.
    pub name: &'static str,
    /// Base processor names (no feature suffix) that can run code built for it.
    pub members: &'static [&'static str],
}

/// The generic targets this project knows, copied from LLVM's AMDGPUUsage "Generic processors"
/// table (LLVM 20). Upstream's exact table is unconfirmed (kpack.md §6); v1 packs use no
/// generics. `gfx9-4-generic` lists LLVM 20's members (gfx940/gfx941 were removed from LLVM).
pub const GENERIC_TARGETS: &[GenericTarget] = &[
    GenericTarget {
        name: "gfx9-generic",
        members: &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"],
    },
    GenericTarget {
        name: "gfx9-4-generic",
        members: &["gfx942", "gfx950"],
    },
    GenericTarget {
        name: "gfx10-1-generic",
        members: &["gfx1010", "gfx1011", "gfx1012", "gfx1013"],
    },
    GenericTarget {
        name: "gfx10-3-generic",
        members: &[
            "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        ],
    },
    GenericTarget {
        name: "gfx11-generic",
        members: &[
            "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
        ],
    },
    GenericTarget {
        name: "gfx12-generic",
        members: &["gfx1200", "gfx1201"],
    },
];

/// `stripArchFeatures`: the base arch, cut at the first `:` (`gfx942:sramecc+:xnack-` →
/// `gfx942`; `sm_90` → `sm_90`). This is the saved plan target (ingestor-payload.md §9).
pub fn strip_arch_features(arch: &str) -> &str {
    arch.split_once(':').map_or(arch, |(base, _)| base)
}

/// `archMatches(deviceArch, entry, PREFIX)`: `entry` is a prefix of the decorated `device_arch`
/// and the next device character is `:` or the end. NVIDIA keys (`sm_*`) carry no features and
/// must equal the device arch exactly, so `sm_80` never serves `sm_90` (kpack.md §10).
pub fn arch_matches(device_arch: &str, entry: &str) -> bool {
    if entry.is_empty() {
        return false;
    }
    if entry.starts_with("sm_") || device_arch.starts_with("sm_") {
        return entry == device_arch;
    }
    match device_arch.strip_prefix(entry) {
        Some(rest) => rest.is_empty() || rest.starts_with(':'),
        None => false,
    }
}

/// `findGenericTarget`: the table row named exactly `name`, if any.
pub fn find_generic_target(name: &str) -> Option<&'static GenericTarget> {
    GENERIC_TARGETS.iter().find(|g| g.name == name)
}

/// `genericTargetContains`: whether `generic` serves the device, judged on the device's base
/// arch ([`strip_arch_features`]).
pub fn generic_target_contains(generic: &GenericTarget, device_arch: &str) -> bool {
    let base = strip_arch_features(device_arch);
    generic.members.contains(&base)
}

/// Selects the archive key that serves `device_arch` (the **decorated** device arch, e.g. the
/// raw `gcnArchName` `gfx942:sramecc+:xnack-`; on NVIDIA `sm_<major><minor>`).
///
/// Tier 1 ([`ArchTier::Explicit`]): the first candidate, in the given (archive) order, that does
/// not end in `-generic` and satisfies [`arch_matches`]. Tier 2 ([`ArchTier::Generic`]): the
/// first candidate that is a known generic target ([`find_generic_target`]) containing the
/// device's base arch; a `-generic` key not in [`GENERIC_TARGETS`] never matches. Logs INFO
/// `kpack: device arch '<d>' is served by generic archive key '<g>'` when a generic serves.
/// Returns `None` when nothing serves the device.
pub fn select_arch<S: AsRef<str>>(device_arch: &str, candidates: &[S]) -> Option<ArchSelection> {
    if let Some(index) = candidates
        .iter()
        .position(|c| !c.as_ref().ends_with("-generic") && arch_matches(device_arch, c.as_ref()))
    {
        return Some(ArchSelection {
            index,
            tier: ArchTier::Explicit,
        });
    }
    let index = candidates.iter().position(|c| {
        find_generic_target(c.as_ref()).is_some_and(|g| generic_target_contains(g, device_arch))
    })?;
    log::info!(
        "kpack: device arch '{device_arch}' is served by generic archive key '{}'",
        candidates[index].as_ref()
    );
    Some(ArchSelection {
        index,
        tier: ArchTier::Generic,
    })
}
