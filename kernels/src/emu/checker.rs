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
//!   mbarrier the block initialised (its state lives there on the GPU).
//!
//! The first three are checked where every access starts
//! ([`super::memory`]), the others by the shared-memory checks of
//! [`super::races`].
//!
//! Findings with the same kind and lines are folded into one, with a count
//! and the first occurrence's block, thread and address. An access reports
//! at most one finding, and every word it touches remembers it.

use super::memory::{Memory, Site};
use crate::Dim3;
use crate::mem::Space;
use std::string::String;

/// A load or a store, as a finding names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    /// The write of a bulk copy (TMA) that the thread issued.
    Copy,
}

impl Access {
    pub(super) fn of(store: bool) -> Access {
        if store { Access::Write } else { Access::Read }
    }

    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Copy => "copies to",
        }
    }
}

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
        let (b, t) = (self.block, self.thread);
        write!(f, "{}: block ({}, {}, {}) thread ({}, {}, {}) ", self.site, b.x, b.y, b.z, t.x, t.y, t.z)?;
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
                    Some(o) => write!(f, "thread ({}, {}, {})", o.x, o.y, o.z)?,
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

impl Memory {
    /// Records a finding of `kind` at `site`, folded into an equal one
    /// (same kind, access and lines) if the launch has one.
    pub(super) fn find(&self, kind: FindingKind, site: Site, block: Dim3, thread: Dim3) {
        let mut all = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        let key = kind.key();
        match all.iter_mut().find(|(_, f)| f.site == site && f.kind.key() == key) {
            Some((_, f)) => f.count += 1,
            None => all.push((self.position(), Finding { kind, site, block, thread, count: 1 })),
        }
    }
}
