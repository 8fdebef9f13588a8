//! What the emulator sees of every access a kernel makes through a view
//! ([`crate::mem`]): the state it keeps for a launch and for each thread,
//! and the path each access takes.
//!
//! Every load and store through a view, and each side of a `cp.async`, is
//! one access, keyed by its [`Site`] (the source line that made it). It is
//! checked for bounds and alignment and, in shared memory, against the
//! launch's shared bytes ([`super::checker`] lists what the checker finds);
//! a shared access then goes through the race checks of [`super::races`];
//! and when the launch counts, the access is logged for
//! [`super::counters`]. A launch's findings and counters come back as one
//! [`Report`].

use super::checker::{Access, Finding, FindingKind};
use super::counters::{Counters, LineTally, Op, Record, SiteCounters};
use super::races::Shadow;
use crate::Dim3;
use crate::mem::Space;
use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::vec::Vec;

/// The source location of a `load` or `store` on a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site {
    /// As the compiler names it (`kernels/src/transpose/03_tiled.rs`).
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
}

impl Site {
    fn of(loc: &'static Location<'static>) -> Site {
        Site { file: loc.file(), line: loc.line(), column: loc.column() }
    }

    /// The file name without its folders (`03_tiled.rs`).
    pub fn file_name(&self) -> &'static str {
        self.file.rsplit(['/', '\\']).next().unwrap_or(self.file)
    }
}

impl core::fmt::Display for Site {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// The findings and counters of one emulated launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Empty for the plain [`super::launch`], which does not count.
    pub counters: Counters,
    pub findings: Vec<Finding>,
}

impl Report {
    /// This report and `later`'s, as one: of an op that launches several
    /// kernels, its counters summed line by line (each line keeping its
    /// first sample) and every finding.
    pub fn merge(&mut self, later: Report) {
        for c in later.counters.sites {
            match self.counters.sites.iter_mut().find(|s| (s.site, s.op) == (c.site, c.op)) {
                Some(s) => {
                    s.tally.add(&c.tally);
                    s.width = s.width.max(c.width);
                }
                None => self.counters.sites.push(c),
            }
        }
        self.counters.sites.sort_by_key(|c| (c.site, c.op));
        self.findings.extend(later.findings);
    }
}

/// What every thread of a launch shares about memory.
pub(super) struct Memory {
    pub(super) counting: bool,
    pub(super) block: Dim3,
    /// Threads per block: the first agents of every vector clock.
    pub(super) threads: u32,
    pub(super) shared_bytes: u32,
    pub(super) sites: Mutex<Vec<Site>>,
    pub(super) words: Vec<Shadow>,
    /// The block-start epoch of the last block that initialised an
    /// mbarrier: in that block reads are kept per thread, since a phase
    /// may order them before a later write by another thread.
    pub(super) mbarrier_block: AtomicU32,
    /// The knowledge of mbarrier phases that the threads bring to a
    /// `sync_threads`, joined: by the parity of the epoch the barrier ends,
    /// tagged with that epoch ([`Memory::before_sync`]).
    pub(super) sync_join: Mutex<[(u32, Vec<u32>); 2]>,
    /// The findings, each with the position (in the launch's order) of
    /// the cluster of its first occurrence.
    pub(super) findings: Mutex<Vec<(u64, Finding)>>,
    /// This block's records, one list per thread (counting only).
    pub(super) logs: Vec<Mutex<Vec<Record>>>,
    pub(super) tallies: Mutex<HashMap<(u32, Op), LineTally>>,
    /// The position in the launch's order of the cluster running.
    pub(super) position: AtomicU64,
}

impl Memory {
    pub(super) fn new(counting: bool, block: Dim3, threads: u32, shared_bytes: u32) -> Memory {
        let words = (shared_bytes as usize).div_ceil(4);
        Memory {
            counting,
            block,
            threads,
            shared_bytes,
            sites: Mutex::new(Vec::new()),
            words: (0..words).map(|_| Shadow::default()).collect(),
            mbarrier_block: AtomicU32::new(0),
            sync_join: Mutex::new([(0, Vec::new()), (0, Vec::new())]),
            findings: Mutex::new(Vec::new()),
            logs: (0..if counting { threads } else { 0 }).map(|_| Mutex::new(Vec::new())).collect(),
            tallies: Mutex::new(HashMap::new()),
            position: AtomicU64::new(0),
        }
    }

    /// The cluster at `position` in the launch's order runs next.
    pub(super) fn set_position(&self, position: u64) {
        self.position.store(position, Relaxed);
    }

    pub(super) fn position(&self) -> u64 {
        self.position.load(Relaxed)
    }

    pub(super) fn site(&self, id: u32) -> Site {
        self.sites.lock().unwrap_or_else(|e| e.into_inner())[id as usize]
    }

    /// What this worker's clusters found and counted, for [`Partial::merge`].
    pub(super) fn partial(self) -> Partial {
        let sites = self.sites.into_inner().unwrap_or_else(|e| e.into_inner());
        let tallies = self.tallies.into_inner().unwrap_or_else(|e| e.into_inner());
        let counters = tallies
            .into_iter()
            .map(|((site, op), (width, tally, sample, position))| {
                (position, SiteCounters { site: sites[site as usize], op, width, tally, sample })
            })
            .collect();
        Partial { counters, findings: self.findings.into_inner().unwrap_or_else(|e| e.into_inner()) }
    }
}

/// What one worker's clusters found and counted: each line's counters with
/// the position of the cluster its sample comes from, each finding with
/// that of its first occurrence.
pub(super) struct Partial {
    counters: Vec<(u64, SiteCounters)>,
    findings: Vec<(u64, Finding)>,
}

impl Partial {
    /// The launch's report from its workers': counters summed line by
    /// line, findings folded by kind and line as [`Memory::find`] folds
    /// them, and what comes from one occurrence (a line's sample, a
    /// finding's block, thread and details) from the earliest cluster in
    /// the launch's order. The same as one worker running every cluster.
    pub(super) fn merge(parts: Vec<Partial>) -> Report {
        let mut counters: Vec<(u64, SiteCounters)> = Vec::new();
        let mut findings: Vec<(u64, Finding)> = Vec::new();
        for part in parts {
            for (position, c) in part.counters {
                match counters.iter_mut().find(|(_, s)| (s.site, s.op) == (c.site, c.op)) {
                    Some((p, s)) => {
                        s.tally.add(&c.tally);
                        s.width = s.width.max(c.width);
                        if position < *p {
                            (*p, s.sample) = (position, c.sample);
                        }
                    }
                    None => counters.push((position, c)),
                }
            }
            for (position, f) in part.findings {
                match findings.iter_mut().find(|(_, g)| g.site == f.site && g.kind.key() == f.kind.key()) {
                    Some((p, g)) => {
                        let count = g.count + f.count;
                        if position < *p {
                            (*p, *g) = (position, f);
                        }
                        g.count = count;
                    }
                    None => findings.push((position, f)),
                }
            }
        }
        let mut counters: Vec<SiteCounters> = counters.into_iter().map(|(_, c)| c).collect();
        counters.sort_by_key(|c| (c.site, c.op));
        findings.sort_by_key(|(position, f)| (f.site, f.kind.key().0, *position));
        Report { counters: Counters { sites: counters }, findings: findings.into_iter().map(|(_, f)| f).collect() }
    }
}

/// What one emulated thread keeps about its own accesses, across blocks.
#[derive(Default)]
pub(super) struct ThreadMemory {
    /// The lines seen: location, launch-wide id, executions in this block.
    pub(super) sites: RefCell<Vec<(&'static Location<'static>, u32, u32)>>,
    pub(super) records: RefCell<Vec<Record>>,
    /// Barriers passed in this launch, plus one per block started.
    pub(super) epoch: Cell<u32>,
    /// The epoch this block started in.
    pub(super) block_start: Cell<u32>,
    /// This thread's clock: it ticks after each release (an mbarrier
    /// arrival) and at each barrier, so what a thread released once never
    /// covers what it does later.
    pub(super) clock: Cell<u32>,
    /// What this thread has acquired through mbarrier phases (a vector
    /// clock, [`Memory`]'s agents): the clocks of other threads, and per
    /// barrier the phases completed (which orders the copies they counted).
    pub(super) vc: RefCell<Vec<u32>>,
}

impl ThreadMemory {
    /// A new block starts: a new epoch that no earlier write shares, and
    /// nothing known of this block's mbarriers.
    pub(super) fn start_block(&self) {
        self.barrier();
        self.block_start.set(self.epoch.get());
        self.vc.borrow_mut().clear();
    }

    /// The thread passed a barrier.
    pub(super) fn barrier(&self) {
        self.epoch.set(self.epoch.get() + 1);
        self.clock.set(self.clock.get() + 1);
    }

    pub(super) fn epoch(&self) -> u32 {
        self.epoch.get()
    }

    pub(super) fn block_start(&self) -> u32 {
        self.block_start.get()
    }
}

/// What makes an access: the counters log the load/store unit's requests
/// (`ld`, `st`, and both sides of a `cp.async`, which `ncu` counts as
/// `ldgsts`); a bulk copy (`cp.async.bulk`) is the copy engine's, which
/// `ncu`'s request and sector counters do not see: checked, not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Via {
    Lsu,
    CopyAsync,
    Bulk,
}

/// One access through a view, as the emulated thread makes it.
pub(super) struct Request<'a> {
    pub memory: &'a Memory,
    pub local: &'a ThreadMemory,
    pub block: Dim3,
    pub thread: Dim3,
    pub linear: u32,
    /// Start of the block's shared memory.
    pub shared_base: usize,
}

impl Request<'_> {
    /// The launch-wide id of `loc`'s line, and how many times this thread
    /// executed it before in this block (counted only when `count`).
    pub(super) fn site_id(&self, loc: &'static Location<'static>, count: bool) -> (u32, u32) {
        let mut sites = self.local.sites.borrow_mut();
        let found =
            sites.iter().position(|s| core::ptr::eq(s.0, loc)).or_else(|| sites.iter().position(|s| *s.0 == *loc));
        let i = match found {
            Some(i) => i,
            None => {
                let site = Site::of(loc);
                let mut all = self.memory.sites.lock().unwrap_or_else(|e| e.into_inner());
                let id = match all.iter().position(|s| *s == site) {
                    Some(id) => id,
                    None => {
                        all.push(site);
                        all.len() - 1
                    }
                };
                sites.push((loc, id as u32, 0));
                sites.len() - 1
            }
        };
        let s = &mut sites[i];
        s.2 += count as u32;
        (s.1, s.2.wrapping_sub(1))
    }

    pub(super) fn find(&self, kind: FindingKind, loc: &'static Location<'static>) {
        self.memory.find(kind, Site::of(loc), self.block, self.thread);
    }

    /// Checks (and, when counting, logs) an access of `bytes` bytes aligned
    /// to `align` at element `i` of the `len` elements of `elem` bytes at
    /// `base`, made `via` the load/store unit, a `cp.async` or a bulk copy.
    /// Returns the address to access, or `None` when the access must not
    /// happen (out of bounds).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn access(
        &self, loc: &'static Location<'static>, space: Space, store: bool, base: usize,
        (elem, len, i): (usize, usize, usize), (bytes, align): (usize, usize), via: Via,
    ) -> Option<usize> {
        let access = Access::of(store);
        let elements = if elem == 0 { 1 } else { bytes.div_ceil(elem).max(1) };
        if i.checked_add(elements).is_none_or(|end| end > len) {
            self.find(FindingKind::OutOfBounds { space, access, index: i, elements, len }, loc);
            return None;
        }
        let addr = base.wrapping_add(i.wrapping_mul(elem));
        if !addr.is_multiple_of(align) {
            self.find(FindingKind::Misaligned { space, access, address: addr, align }, loc);
        }
        let counting = self.memory.counting;
        // A global access needs the line's id only to be counted; a shared
        // one for the race checks too.
        let (logged, site) = match space {
            Space::Global => (addr, counting.then(|| self.site_id(loc, true))),
            Space::Shared => {
                let byte = addr.wrapping_sub(self.shared_base);
                if byte.checked_add(bytes).is_none_or(|end| end > self.memory.shared_bytes as usize) {
                    let shared_bytes = self.memory.shared_bytes;
                    self.find(FindingKind::PastSharedMemory { access, byte, bytes, shared_bytes }, loc);
                    return None;
                }
                let site = self.site_id(loc, counting);
                self.shadow(loc, site.0, store, byte, bytes);
                (byte, Some(site))
            }
        };
        if let (true, Some((site, instance))) = (counting && via != Via::Bulk, site) {
            let op = Op::new(space, store, via == Via::CopyAsync);
            self.local.records.borrow_mut().push(Record { site, instance, op, bytes: bytes as u32, addr: logged });
        }
        Some(addr)
    }
}
