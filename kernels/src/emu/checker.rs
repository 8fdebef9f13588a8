//! The checker's findings: what it reports about a kernel's accesses
//! through views ([`crate::mem`]), how equal findings fold into one, and
//! how each reads in an error message.
//!
//! Every launch runs the checker. Each finding names the source line of the
//! access (`#[track_caller]` on the views), the block and the thread:
//!
//! - [`FindingKind::OutOfBounds`]: an index past the view's length (the load
//!   reads `U::default()`, the store is dropped, and the kernel goes on);
//! - [`FindingKind::PastSharedMemory`]: a shared view longer than the
//!   launch's dynamic shared memory, used past its end;
//! - [`FindingKind::Misaligned`]: an address not aligned for the access (a
//!   16-byte `F4` at an address that is not a multiple of 16, which the GPU
//!   refuses with "misaligned address");
//! - [`FindingKind::UnwrittenShared`]: a read of a shared-memory word that no
//!   thread of this block has written (its content is another block's, or
//!   undefined);
//! - [`FindingKind::SharedRace`]: two threads touch one 4-byte word of shared
//!   memory, at least one of them writing, and nothing orders one before
//!   the other: no barrier between them, nor an mbarrier phase
//!   ([`super::races`] says how accesses are ordered);
//! - [`FindingKind::MbarrierBytes`]: an access to the 8 bytes of an
//!   mbarrier the block initialised (its state lives there on the GPU);
//! - [`FindingKind::OutsideAllocation`]: a global access whose bytes are
//!   not all inside one of the buffers the launch registered
//!   ([`super::Options::allocations`]), or a safe access
//!   ([`crate::mem::Checked`]) in a launch that registered none: refused,
//!   as an out-of-bounds one is;
//! - [`FindingKind::GlobalRace`]: two blocks of one launch touch one
//!   4-byte word of global memory, at least one of them writing
//!   (with [`super::Options::global_races`]: the emulator's `global` checks).
//!
//! Bounds, alignment, shared-memory bounds and allocations are checked
//! where every access starts ([`super::memory`]), shared races, unwritten
//! words and mbarrier bytes by the shared-memory checks of
//! [`super::races`], global races by the launch's shadow (`global`); `Findings` keeps
//! what a worker found.
//!
//! Findings with the same kind and lines are folded into one, with a count
//! and the first occurrence's block, thread and address. An access reports
//! at most one finding, and every word it touches remembers it.

use super::types::{Access, Site};
use crate::Dim3;
use crate::mem::Space;
use std::string::String;
use std::vec::Vec;

/// What the checker found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FindingKind {
    /// Element `index` (and the `elements - 1` after it, for a wide access)
    /// of a view of `len` elements.
    OutOfBounds { space: Space, access: Access, index: usize, elements: usize, len: usize },
    /// Bytes `byte..byte + bytes` of shared memory, past the launch's `shared_bytes`.
    PastSharedMemory { access: Access, byte: usize, bytes: usize, shared_bytes: u32 },
    /// An access of `align`-byte alignment at an address that is not (for
    /// a bulk copy, [`Access::Copy`], the shared address of its destination).
    Misaligned { space: Space, access: Access, address: usize, align: usize },
    /// A read of the shared word at byte `byte` that no thread of the block wrote.
    UnwrittenShared { byte: usize },
    /// The shared word at byte `byte`, accessed by this thread (`access`)
    /// and by `other_thread` (`None`: several threads) at `other_site`
    /// (`other_access`), with nothing ordering the two: no barrier since,
    /// nor an mbarrier phase this thread acquired ([`super::races`]).
    SharedRace { byte: usize, access: Access, other_access: Access, other_thread: Option<Dim3>, other_site: Site },
    /// An access through a view, or a bulk copy's write, to the shared word
    /// at byte `byte`, which holds an mbarrier this block initialised.
    MbarrierBytes { byte: usize, access: Access },
    /// A global access of `bytes` bytes at `address` that is not inside
    /// one of the launch's registered buffers ([`super::Options::allocations`]),
    /// or a safe one in a launch that registered none: refused (the load
    /// reads `U::default()`, the store is dropped).
    OutsideAllocation { access: Access, address: usize, bytes: usize },
    /// The global word at `address`, accessed by this block (`access`) and
    /// by thread `other_thread` of block `other_block` at `other_site`
    /// (`other_access`), at least one of them a write: nothing orders two
    /// blocks of one launch. Reported by the block later in the grid's
    /// order, whichever ran first.
    GlobalRace {
        address: usize,
        access: Access,
        other_access: Access,
        other_block: Dim3,
        other_thread: Dim3,
        other_site: Site,
    },
}

impl FindingKind {
    /// What folds two findings into one: the kind, its access, and the other line.
    pub(super) fn key(&self) -> (u8, Option<Access>, Option<Access>, Option<Site>) {
        match *self {
            FindingKind::OutOfBounds { access, .. } => (0, Some(access), None, None),
            FindingKind::PastSharedMemory { access, .. } => (1, Some(access), None, None),
            FindingKind::Misaligned { access, .. } => (2, Some(access), None, None),
            FindingKind::UnwrittenShared { .. } => (3, None, None, None),
            FindingKind::SharedRace { access, other_access, other_site, .. } => {
                (4, Some(access), Some(other_access), Some(other_site))
            }
            FindingKind::MbarrierBytes { access, .. } => (5, Some(access), None, None),
            FindingKind::OutsideAllocation { access, .. } => (6, Some(access), None, None),
            FindingKind::GlobalRace { access, other_access, other_site, .. } => {
                (7, Some(access), Some(other_access), Some(other_site))
            }
        }
    }
}

/// One problem the checker found, at one line, with the first block and
/// thread it happened in and how many times it happened in the launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub site: Site,
    pub block: Dim3,
    pub thread: Dim3,
    pub count: u64,
}

fn space_name(space: Space) -> &'static str {
    match space {
        Space::Global => "global",
        Space::Shared => "shared",
    }
}

impl core::fmt::Display for Finding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: block {} thread {} ", self.site, self.block, self.thread)?;
        match &self.kind {
            FindingKind::OutOfBounds { space, access, index, elements, len } => {
                let what = if *elements == 1 {
                    std::format!("element {index}")
                } else {
                    std::format!("elements {index}..{}", index + elements)
                };
                write!(f, "{} {what} of a {} view of {len}: out of bounds", access.verb(), space_name(*space))?
            }
            FindingKind::PastSharedMemory { access, byte, bytes, shared_bytes } => write!(
                f,
                "{} shared bytes {byte}..{} past the launch's {shared_bytes} bytes of shared memory",
                access.verb(),
                byte + bytes
            )?,
            FindingKind::Misaligned { space, access, address, align } => write!(
                f,
                "{} {} address {address:#x}, not aligned to the access's {align} bytes",
                access.verb(),
                space_name(*space)
            )?,
            FindingKind::UnwrittenShared { byte } => {
                write!(f, "reads shared byte {byte}, which no thread of this block has written")?
            }
            FindingKind::SharedRace { byte, access, other_access, other_thread, other_site } => {
                write!(f, "{} shared byte {byte}, which ", access.verb())?;
                if *other_access == Access::Copy {
                    write!(f, "a bulk copy by ")?;
                }
                match other_thread {
                    Some(o) => write!(f, "thread {o}")?,
                    None => write!(f, "several threads")?,
                }
                write!(
                    f,
                    " {} at {other_site} with no barrier between: a race",
                    match other_access {
                        Access::Read => "read",
                        Access::Write | Access::Copy => "wrote",
                    }
                )?
            }
            FindingKind::MbarrierBytes { byte, access } => {
                write!(f, "{} shared byte {byte}, which holds an mbarrier", access.verb())?
            }
            FindingKind::OutsideAllocation { access, address, bytes } => {
                write!(f, "{} {bytes} bytes at {address:#x} outside every buffer of the launch", access.verb())?
            }
            FindingKind::GlobalRace { address, access, other_access, other_block, other_thread, other_site } => write!(
                f,
                "{} global {address:#x} that block {other_block} thread {other_thread} {} at {other_site}: \
                 blocks of one launch are not ordered",
                access.verb(),
                match other_access {
                    Access::Read => "read",
                    Access::Write | Access::Copy => "wrote",
                }
            )?,
        }
        if self.count > 1 {
            write!(f, " ({} times in this launch)", self.count)?;
        }
        Ok(())
    }
}

/// `findings`, one per line, for an error message.
pub(super) fn list(findings: &[Finding]) -> String {
    let mut s = String::new();
    for (i, finding) in findings.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&std::format!("{finding}"));
    }
    s
}

/// The findings of one worker's clusters, folded, each with the index of
/// the cluster of its first occurrence: the lowest index where a finding
/// recurs ([`Findings::find`]).
#[derive(Default)]
pub(super) struct Findings(Vec<(u64, Finding)>);

impl Findings {
    /// Records a finding of `kind` at `site`, folded into an equal one
    /// (same kind, access and lines) if there is one.
    /// A cluster of lower index replaces the occurrence kept (a seeded
    /// schedule runs clusters out of order).
    pub(super) fn find(&mut self, cluster: u64, kind: FindingKind, site: Site, block: Dim3, thread: Dim3) {
        let key = kind.key();
        match self.0.iter_mut().find(|(_, f)| f.site == site && f.kind.key() == key) {
            Some((c, f)) if cluster < *c => {
                let count = f.count + 1;
                (*c, *f) = (cluster, Finding { kind, site, block, thread, count });
            }
            Some((_, f)) => f.count += 1,
            None => self.0.push((cluster, Finding { kind, site, block, thread, count: 1 })),
        }
    }

    pub(super) fn into_vec(self) -> Vec<(u64, Finding)> {
        self.0
    }
}
