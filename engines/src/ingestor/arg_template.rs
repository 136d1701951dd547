//! A launch's kernel arguments decided once, when its plan is built or restored (issue 29).
//!
//! A dispatch handler builds a launch's kernel arguments from the launch (its saved values)
//! and the addresses the variant pack binds; for every handler here the addresses only pass
//! through (a pointer argument is a bound tensor's address, the workspace's, or null) and the
//! rest depends on the launch alone. [`ArgTemplate::probe`] finds that out per launch instead
//! of trusting it: it asks the handler twice, with two sets of made-up addresses, and keeps
//! the result as a template (the arguments with each address position marked by its tensor
//! UID or the workspace) only when both answers agree everywhere except at those positions.
//! An execute then copies the template and writes the bound addresses in: no launch-value
//! lookups, no allocation.
//!
//! The made-up addresses are 16 bytes past a 4096-byte boundary, so a handler that needs more
//! than 16-byte alignment (or refuses anything else about them) refuses the probe and keeps
//! its own path. [`ArgTemplate::fill`] takes the template only when every address the launch
//! passes is bound on the device at a multiple of 16 (and the workspace, when the plan has
//! one, too); anything else (a missing or host binding, an unaligned address) goes to the
//! handler, whose errors and arguments are then exactly what they were.

use super::device::KernelArgValue;
use super::dispatch::{DispatchHandler, PreparedLaunch};
use hipdnn_backend::engine::{BufferRef, TensorBinding};

/// Where the addresses of one probe start; each UID gets its own 4096-byte page, plus 16.
const PROBE_BASES: [u64; 2] = [0x7e00_0000_0000, 0x6d00_0000_0000];
/// The workspace's page offset from a probe base.
const PROBE_WORKSPACE: u64 = 0x00f0_0000_0000;

/// One address a launch passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The address bound to this tensor UID.
    Tensor(i64),
    /// The execute's workspace.
    Workspace,
}

/// A launch's kernel arguments with the positions of the addresses the variant pack supplies.
#[derive(Debug, Clone)]
pub struct ArgTemplate {
    /// The arguments, each supplied address as a null pointer.
    args: Vec<KernelArgValue>,
    /// (argument index, what goes there).
    slots: Vec<(usize, Slot)>,
    /// Whether the handler was given a workspace address (the plan has a workspace).
    with_workspace: bool,
}

impl ArgTemplate {
    /// Asks `handler` for `launch`'s kernel arguments twice, with made-up device addresses for
    /// the launch's `pointer_uids` (and the workspace when `workspace_bytes` > 0), and keeps
    /// the template when the answers agree except where an address passes through. `None`
    /// when the handler refuses the probe or derives anything from an address; executes of
    /// that launch then call the handler.
    pub fn probe(
        handler: &dyn DispatchHandler,
        launch: &PreparedLaunch,
        workspace_bytes: u64,
    ) -> Option<ArgTemplate> {
        let with_workspace = workspace_bytes > 0;
        let address = |base: u64, slot: usize| base + 4096 * slot as u64 + 16;
        let answers = PROBE_BASES.map(|base| {
            let bindings: Vec<TensorBinding<'static>> = launch
                .pointer_uids
                .iter()
                .enumerate()
                .map(|(i, &uid)| TensorBinding {
                    uid,
                    data: BufferRef::Device {
                        addr: address(base, i),
                        len: 0,
                    },
                })
                .collect();
            let ws = if with_workspace {
                base + PROBE_WORKSPACE + 16
            } else {
                0
            };
            handler
                .kernel_args_with_workspace(launch, &bindings, ws)
                .ok()
        });
        let [Some(a), Some(b)] = answers else {
            return None;
        };
        if a.len() != b.len() {
            return None;
        }
        // What a made-up address of probe `p` stands for.
        let slot_of = |p: usize, v: &KernelArgValue| -> Option<Slot> {
            let KernelArgValue::Pointer(addr) = *v else {
                return None;
            };
            let base = PROBE_BASES[p];
            if with_workspace && addr == base + PROBE_WORKSPACE + 16 {
                return Some(Slot::Workspace);
            }
            let i = addr.checked_sub(base + 16)?;
            (i % 4096 == 0)
                .then(|| launch.pointer_uids.get((i / 4096) as usize).copied())
                .flatten()
                .map(Slot::Tensor)
        };
        let mut args = Vec::with_capacity(a.len());
        let mut slots = Vec::new();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            match (slot_of(0, x), slot_of(1, y)) {
                (Some(s), Some(t)) if s == t => {
                    slots.push((i, s));
                    args.push(KernelArgValue::Pointer(0));
                }
                (None, None) if x == y => args.push(*x),
                _ => return None,
            }
        }
        Some(ArgTemplate {
            args,
            slots,
            with_workspace,
        })
    }

    /// The arguments with each supplied address as null.
    pub fn args(&self) -> &[KernelArgValue] {
        &self.args
    }

    /// Calls `each(argument index, address)` for every address the launch passes, for
    /// `tensors` and `workspace` (the address the handler would be given), and returns true;
    /// false (after calling `each` for some of them) when an address is not bound on the
    /// device at a multiple of 16, which the handler must judge.
    pub fn addresses(
        &self,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
        mut each: impl FnMut(usize, u64),
    ) -> bool {
        // A plan with a workspace needs the execute's workspace to be a device address the
        // handler would accept, whether or not its kernel takes it as an argument.
        if self.with_workspace && (workspace == 0 || workspace % 16 != 0) {
            return false;
        }
        for &(i, slot) in &self.slots {
            let addr = match slot {
                Slot::Workspace => workspace,
                Slot::Tensor(uid) => match tensors.iter().find(|t| t.uid == uid) {
                    Some(TensorBinding {
                        data: BufferRef::Device { addr, .. },
                        ..
                    }) => *addr,
                    _ => return false,
                },
            };
            if addr == 0 || addr % 16 != 0 {
                return false;
            }
            each(i, addr);
        }
        true
    }

    /// Writes the arguments for `tensors` and `workspace` into `out` (cleared first) and
    /// returns true; false (with `out` unspecified) as [`Self::addresses`].
    pub fn fill(
        &self,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
        out: &mut Vec<KernelArgValue>,
    ) -> bool {
        out.clear();
        out.extend_from_slice(&self.args);
        self.addresses(tensors, workspace, |i, addr| {
            out[i] = KernelArgValue::Pointer(addr)
        })
    }
}
