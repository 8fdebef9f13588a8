//! The launch's checks of global memory beyond a view's bounds: the
//! buffers that really exist ([`Allocations`]), and the race shadow across
//! blocks ([`GlobalRaces`]). Both are the launch's, the same for all its
//! workers ([`GlobalChecks`]).
//!
//! # Allocations
//!
//! A launch may register the address ranges of the global buffers it was
//! given ([`super::Options::allocations`]). A global access whose bytes are
//! not all inside one of them is refused
//! ([`super::FindingKind::OutsideAllocation`]): a view longer than its
//! buffer, or one made from a wrong pointer, is caught even where its own
//! bounds let the access through. Without ranges an access through an
//! `unsafe` view is checked against the view alone, and a safe one
//! ([`crate::mem::Checked`]) is refused: the emulator cannot tell what
//! memory exists.
//!
//! # Races between blocks
//!
//! The blocks of a launch are not ordered: a word of global memory that one
//! block writes and another reads or writes holds whichever came last, on
//! the GPU as in an emulator run. With [`super::Options::global_races`] the
//! launch keeps one shadow of the 4-byte words its blocks touch, shared by
//! its workers: each word remembers up to two writes and two reads, each
//! of a different cluster, of the lowest clusters seen (a block of the
//! grid without clusters). An access by a block of one cluster to a word
//! that a block of another cluster wrote, or, for a write, read, is a
//! [`super::FindingKind::GlobalRace`]. Blocks of one cluster are not
//! checked against each other (a cluster barrier may order them), nor the
//! threads of one block (a `sync_threads` may), nor `raise_flag`, whose
//! writers all store the same value.
//!
//! A race is reported by the block later in the grid's order, naming the
//! earlier one as the other side, whichever of the two ran first: so one
//! pair of racing accesses reads the same with one worker or several, and
//! with another order of the blocks. What still depends on the order the
//! blocks ran in: which pairs are seen where three or more blocks touch a
//! word (each word keeps the two lowest clusters per kind of access, of
//! those that came before), and how many times a pair is counted. A run
//! with [`super::Schedule::Seeded`] shows other pairs.
//!
//! The shadow costs a lock and a hash lookup per global access, and about
//! a hundred bytes per word touched: a check for small launches, off by
//! default.

use super::types::Access;
use crate::Dim3;
use core::ops::Range;
use core::panic::Location;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

/// The address ranges of a launch's global buffers, for an `O(log n)`
/// test of whether an access lies inside one of them.
#[derive(Clone, Debug, Default)]
pub(super) struct Allocations {
    /// The non-empty ranges sorted by start, each as its start and the
    /// furthest end of it and of every range before it: an access that
    /// starts at `a` lies inside one range exactly when the furthest end
    /// of the ranges starting at or before `a` reaches its end.
    ranges: Vec<(usize, usize)>,
}

impl Allocations {
    pub(super) fn new(ranges: &[Range<usize>]) -> Allocations {
        let mut ranges: Vec<(usize, usize)> =
            ranges.iter().filter(|r| r.start < r.end).map(|r| (r.start, r.end)).collect();
        ranges.sort_unstable();
        let mut furthest = 0;
        for r in &mut ranges {
            furthest = furthest.max(r.1);
            r.1 = furthest;
        }
        Allocations { ranges }
    }

    /// Whether the launch registered no range.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether the `bytes` bytes at `address` all lie inside one range.
    pub(super) fn contains(&self, address: usize, bytes: usize) -> bool {
        let Some(end) = address.checked_add(bytes) else { return false };
        let before = self.ranges.partition_point(|&(start, _)| start <= address);
        before > 0 && self.ranges[before - 1].1 >= end
    }
}

/// One access to a global word, as the shadow remembers it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Accessor {
    /// The block's linear index in the grid.
    pub block: u64,
    /// The thread's linear index in its block.
    pub thread: u32,
    pub loc: &'static Location<'static>,
}

/// What the shadow keeps of one word: accesses of distinct clusters, the
/// lowest first.
#[derive(Default)]
struct Word {
    writes: [Option<Accessor>; 2],
    reads: [Option<Accessor>; 2],
}

/// Two accesses to the global word at `address` by blocks of different
/// clusters, at least one a write: `later` is the access of the block later
/// in the grid's order, `earlier` the other's.
pub(super) struct Race {
    pub address: usize,
    pub later: (Accessor, Access),
    pub earlier: (Accessor, Access),
}

/// The launch's shadow of global memory (see the module docs).
pub(super) struct GlobalRaces {
    /// Blocks per cluster: blocks `c * cluster ..` of the grid are cluster `c`.
    cluster: u64,
    words: Mutex<HashMap<usize, Word>>,
}

impl GlobalRaces {
    pub(super) fn new(cluster: u32) -> GlobalRaces {
        GlobalRaces { cluster: cluster.max(1) as u64, words: Mutex::new(HashMap::new()) }
    }

    /// The checks of `me`'s `access` (a read or a write) of the `bytes`
    /// bytes at `address`: every word they touch remembers it, and the
    /// first race found is returned.
    pub(super) fn check(&self, me: Accessor, access: Access, address: usize, bytes: usize) -> Option<Race> {
        let cluster = |a: &Accessor| a.block / self.cluster;
        let mine = cluster(&me);
        let write = access != Access::Read;
        let mut words = self.words.lock().unwrap_or_else(|e| e.into_inner());
        let mut race = None;
        let last = address.saturating_add(bytes.max(1) - 1) / 4;
        for w in address / 4..=last {
            let word = words.entry(w).or_default();
            // The other side: the lowest block of another cluster, a write
            // before a read of the same block.
            let writes = word.writes.iter().flatten().map(|a| (*a, Access::Write));
            let reads = word.reads.iter().flatten().map(|a| (*a, Access::Read));
            let other = writes
                .chain(reads.filter(|_| write))
                .filter(|(a, _)| cluster(a) != mine)
                .min_by_key(|(a, kind)| (a.block, *kind == Access::Read));
            if race.is_none()
                && let Some(other) = other
            {
                let (later, earlier) =
                    if other.0.block > me.block { (other, (me, access)) } else { ((me, access), other) };
                race = Some(Race { address: 4 * w, later, earlier });
            }
            remember(if write { &mut word.writes } else { &mut word.reads }, me, self.cluster);
        }
        race
    }
}

/// Adds `me` to `slots` (accesses of distinct clusters, the lowest first)
/// unless its cluster is there already or both slots hold lower ones.
fn remember(slots: &mut [Option<Accessor>; 2], me: Accessor, cluster: u64) {
    let c = me.block / cluster;
    let of = |s: &Option<Accessor>| s.map(|a| a.block / cluster);
    if slots.iter().any(|s| of(s) == Some(c)) {
        return;
    }
    match (of(&slots[0]), of(&slots[1])) {
        (None, _) => slots[0] = Some(me),
        (Some(a), None) if c < a => (slots[0], slots[1]) = (Some(me), slots[0]),
        (Some(_), None) => slots[1] = Some(me),
        (Some(a), Some(_)) if c < a => (slots[0], slots[1]) = (Some(me), slots[0]),
        (Some(_), Some(b)) if c < b => slots[1] = Some(me),
        _ => {}
    }
}

/// What a launch checks of global memory, the same for each of its
/// workers: its buffers, and its race shadow if it keeps one.
#[derive(Clone)]
pub(super) struct GlobalChecks {
    pub allocations: Allocations,
    pub races: Option<Arc<GlobalRaces>>,
    /// The grid, for the blocks' linear indices.
    pub grid: Dim3,
}
