//! What the emulator sees of every access a kernel makes through a view
//! ([`crate::mem`]): the state a worker keeps for its clusters and for each
//! thread, composed of the checker's findings ([`super::checker`]), the
//! counters ([`super::counters`]) and the race checks ([`super::races`]),
//! and the path each access takes through them (`Request`).
//!
//! Every load and store through a view, and each side of a `cp.async`, is
//! one access, keyed by its [`Site`] (the source line that made it). It is
//! checked for bounds and, in global memory, against the launch's
//! registered buffers (`global`), then for alignment and, in
//! shared memory, against the launch's shared bytes ([`super::checker`]
//! lists what the checker finds); a shared access then goes through the
//! race checks of [`super::races`], a global one through the launch's race
//! shadow if it keeps one (`global`); and when the launch counts,
//! the access is logged for [`super::counters`]. A launch's findings and
//! counters come back as one [`Report`], merged from its workers'
//! (`Partial`).

use super::checker::{Finding, FindingKind, Findings};
use super::counters::{Counters, Op, Record, SiteCounters, Tallies, give_back, record_list};
use super::global::{Accessor, GlobalChecks};
use super::races::{Clock, Event, Problem, Races};
use super::types::{Access, Site, Via, unlinear};
use crate::Dim3;
use crate::mem::Space;
use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::vec::Vec;

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

/// What a worker's threads share about memory, from one cluster to the next.
pub(super) struct Memory {
    pub(super) counting: bool,
    pub(super) block: Dim3,
    /// Threads per cluster: the first agents of every vector clock.
    pub(super) threads: u32,
    pub(super) shared_bytes: u32,
    /// The lines seen, by id.
    sites: RefCell<Vec<Site>>,
    findings: RefCell<Findings>,
    /// Counting only.
    tallies: RefCell<Tallies>,
    pub(super) races: Races,
    /// The launch's buffers and race shadow.
    global: GlobalChecks,
    /// The index of the cluster running.
    cluster: Cell<u64>,
}

impl Memory {
    pub(super) fn new(counting: bool, block: Dim3, threads: u32, shared_bytes: u32, global: GlobalChecks) -> Memory {
        Memory {
            counting,
            block,
            threads,
            shared_bytes,
            sites: RefCell::new(Vec::new()),
            findings: RefCell::new(Findings::default()),
            tallies: RefCell::new(Tallies::new(if counting { threads } else { 0 })),
            races: Races::new(threads, shared_bytes),
            global,
            cluster: Cell::new(0),
        }
    }

    /// Cluster `c` of the grid runs next.
    pub(super) fn set_cluster(&self, c: u64) {
        self.cluster.set(c);
    }

    fn site(&self, id: u32) -> Site {
        self.sites.borrow()[id as usize]
    }

    /// The id of `site`, given on its first sighting.
    fn site_of(&self, site: Site) -> u32 {
        let mut all = self.sites.borrow_mut();
        let id = all.iter().position(|s| *s == site).unwrap_or_else(|| {
            all.push(site);
            all.len() - 1
        });
        id as u32
    }

    pub(super) fn find(&self, kind: FindingKind, site: Site, block: Dim3, thread: Dim3) {
        self.find_in(self.cluster.get(), kind, site, block, thread);
    }

    /// [`Memory::find`], of an occurrence in cluster `cluster` (a global
    /// race, which another cluster's access may find).
    fn find_in(&self, cluster: u64, kind: FindingKind, site: Site, block: Dim3, thread: Dim3) {
        self.findings.borrow_mut().find(cluster, kind, site, block, thread);
    }

    /// Thread `linear`'s part of the cluster that ended: its records, for
    /// counting, and its lines' executions, back to zero.
    pub(super) fn end_block(&self, linear: u32, local: &ThreadMemory) {
        if self.counting {
            self.tallies.borrow_mut().hand_over(linear, &mut local.records.borrow_mut());
        }
        local.sites.borrow_mut().iter_mut().for_each(|s| s.2 = 0);
    }

    /// Counts the cluster's requests, after every thread's [`Memory::end_block`].
    pub(super) fn tally_block(&self) {
        if self.counting {
            self.tallies.borrow_mut().tally_block(self.cluster.get());
        }
    }

    /// What this worker's clusters found and counted, for [`Partial::merge`].
    pub(super) fn partial(self) -> Partial {
        let sites = self.sites.into_inner();
        let counters = self.tallies.into_inner().into_counters(&sites);
        Partial { counters, findings: self.findings.into_inner().into_vec() }
    }
}

/// What one worker's clusters found and counted: each line's counters with
/// the index of the cluster its sample comes from, each finding with that
/// of its first occurrence.
pub(super) struct Partial {
    counters: Vec<(u64, SiteCounters)>,
    findings: Vec<(u64, Finding)>,
}

impl Partial {
    /// The launch's report from its workers': counters summed line by
    /// line, findings folded by kind and line as [`Memory::find`] folds
    /// them, and what comes from one occurrence (a line's sample, a
    /// finding's block, thread and details) from the grid's lowest cluster
    /// that has it: the same as one worker running every cluster in order,
    /// whatever the order and the workers were.
    pub(super) fn merge(parts: Vec<Partial>) -> Report {
        let mut counters: Vec<(u64, SiteCounters)> = Vec::new();
        let mut findings: Vec<(u64, Finding)> = Vec::new();
        for part in parts {
            for (cluster, c) in part.counters {
                match counters.iter_mut().find(|(_, s)| (s.site, s.op) == (c.site, c.op)) {
                    Some((p, s)) => {
                        s.tally.add(&c.tally);
                        s.width = s.width.max(c.width);
                        if cluster < *p {
                            (*p, s.sample) = (cluster, c.sample);
                        }
                    }
                    None => counters.push((cluster, c)),
                }
            }
            for (cluster, f) in part.findings {
                match findings.iter_mut().find(|(_, g)| g.site == f.site && g.kind.key() == f.kind.key()) {
                    Some((p, g)) => {
                        let count = g.count + f.count;
                        if cluster < *p {
                            (*p, *g) = (cluster, f);
                        }
                        g.count = count;
                    }
                    None => findings.push((cluster, f)),
                }
            }
        }
        let mut counters: Vec<SiteCounters> = counters.into_iter().map(|(_, c)| c).collect();
        counters.sort_by_key(|c| (c.site, c.op));
        findings.sort_by_key(|(cluster, f)| (f.site, f.kind.key().0, *cluster));
        Report { counters: Counters { sites: counters }, findings: findings.into_iter().map(|(_, f)| f).collect() }
    }
}

/// What one emulated thread keeps about its own accesses, across the
/// clusters its worker runs.
pub(super) struct ThreadMemory {
    /// The lines seen: location, id, executions in this block.
    pub(super) sites: RefCell<Vec<(&'static Location<'static>, u32, u32)>>,
    pub(super) records: RefCell<Vec<Record>>,
    /// Its side of the race checks.
    pub(super) clock: Clock,
    /// Steps taken in this block: accesses and synchronisations
    /// ([`super::STEP_LIMIT`]).
    pub(super) steps: Cell<u64>,
    /// Where the stack of the fiber running it ends (it grows down to it).
    pub(super) stack_limit: Cell<usize>,
}

impl ThreadMemory {
    pub(super) fn new() -> ThreadMemory {
        ThreadMemory {
            sites: RefCell::default(),
            records: RefCell::new(record_list()),
            clock: Clock::default(),
            steps: Cell::new(0),
            stack_limit: Cell::new(0),
        }
    }
}

impl Drop for ThreadMemory {
    fn drop(&mut self) {
        give_back(core::mem::take(self.records.get_mut()));
    }
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
    /// The id of `loc`'s line, and how many times this thread executed it
    /// before in this block (counted only when `count`).
    pub(super) fn site_id(&self, loc: &'static Location<'static>, count: bool) -> (u32, u32) {
        let mut sites = self.local.sites.borrow_mut();
        let found =
            sites.iter().position(|s| core::ptr::eq(s.0, loc)).or_else(|| sites.iter().position(|s| *s.0 == *loc));
        let i = found.unwrap_or_else(|| {
            sites.push((loc, self.memory.site_of(Site::of(loc)), 0));
            sites.len() - 1
        });
        let s = &mut sites[i];
        s.2 = s.2.wrapping_add(count as u32);
        (s.1, s.2.wrapping_sub(1))
    }

    pub(super) fn find(&self, kind: FindingKind, loc: &'static Location<'static>) {
        self.memory.find(kind, Site::of(loc), self.block, self.thread);
    }

    /// This thread's access now, at the line of id `site`.
    pub(super) fn event(&self, site: u32) -> Event {
        self.local.clock.event(self.linear, site)
    }

    /// Whether `e` happens before what this thread does now ([`Clock::ordered`]).
    pub(super) fn ordered(&self, e: &Event) -> bool {
        self.local.clock.ordered(self.memory.threads, self.linear, e)
    }

    /// The checks of a read of shared memory that no load instruction of
    /// this thread makes (a `wgmma` operand, which the tensor cores read):
    /// races and unwritten words, at `loc`; not counted.
    pub(super) fn operand_read(&self, loc: &'static Location<'static>, byte: usize, bytes: usize) {
        let (site, _) = self.site_id(loc, false);
        self.shadow(loc, self.event(site), Access::Read, byte, bytes);
    }

    /// The checks of the shared bytes `byte..byte + bytes` that a bulk copy
    /// (TMA) this thread issues writes at `loc`: the copy is ordered after
    /// what this thread knows when it issues it, and its writes are ordered
    /// before an access only by a completed phase `phase` of the barrier
    /// whose agent is `agent` ([`Clock::ordered`]). Not counted.
    pub(super) fn copy_write(
        &self, loc: &'static Location<'static>, byte: usize, bytes: usize, agent: u32, phase: u32,
    ) {
        let (site, _) = self.site_id(loc, false);
        let me = Event { agent, clock: phase, ..self.event(site) };
        self.shadow(loc, me, Access::Copy, byte, bytes);
    }

    /// The race checks of the access `me` of the shared bytes
    /// `byte..byte + bytes` ([`Races::check`]), and its finding, at `loc`.
    fn shadow(&self, loc: &'static Location<'static>, me: Event, access: Access, byte: usize, bytes: usize) {
        let mem = self.memory;
        let kind = match mem.races.check(&self.local.clock, me, access, byte, bytes) {
            None => return,
            Some(Problem::Mbarrier { byte }) => FindingKind::MbarrierBytes { byte, access },
            Some(Problem::Unwritten { byte }) => FindingKind::UnwrittenShared { byte },
            Some(Problem::Race { byte, other_access, other, several }) => FindingKind::SharedRace {
                byte,
                access,
                other_access,
                other_thread: (!several).then(|| unlinear(other.thread as u64, mem.block)),
                other_site: mem.site(other.site),
            },
        };
        self.find(kind, loc);
    }

    /// The cross-block race check of this thread's `access` of the global
    /// `bytes` at `addr` ([`super::global::GlobalRaces::check`]), and its
    /// finding, made by the later block of the two, whichever this is.
    fn global_race(
        &self, races: &super::global::GlobalRaces, loc: &'static Location<'static>, access: Access, addr: usize,
        bytes: usize,
    ) {
        let mem = self.memory;
        let (grid, block) = (mem.global.grid, self.block);
        let linear = block.x as u64 + grid.x as u64 * (block.y as u64 + grid.y as u64 * block.z as u64);
        let thread = self.thread;
        let in_block = thread.x + mem.block.x * (thread.y + mem.block.y * thread.z);
        let me = Accessor { block: linear, thread: in_block, loc };
        let Some(race) = races.check(me, access, addr, bytes) else { return };
        let ((later, access), (earlier, other_access)) = (race.later, race.earlier);
        let kind = FindingKind::GlobalRace {
            address: race.address,
            access,
            other_access,
            other_block: unlinear(earlier.block, grid),
            other_thread: unlinear(earlier.thread as u64, mem.block),
            other_site: Site::of(earlier.loc),
        };
        let cluster = later.block / (mem.threads as u64 / mem.block.count()).max(1);
        let thread = unlinear(later.thread as u64, mem.block);
        mem.find_in(cluster, kind, Site::of(later.loc), unlinear(later.block, grid), thread);
    }

    /// Checks (and, when counting, logs) an access of `bytes` bytes aligned
    /// to `align` at element `i` of the `len` elements of `elem` bytes at
    /// `base`, made `via` the load/store unit, a `raise_flag`, a `cp.async`
    /// or a bulk copy; `safe`: made through a view's safe method
    /// ([`crate::mem::Checked`]), refused in global memory unless it lies
    /// inside a registered buffer. Returns the address to access, or
    /// `None` when the access must not happen (out of bounds, outside the
    /// launch's buffers or its shared memory).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn access(
        &self, loc: &'static Location<'static>, space: Space, store: bool, base: usize,
        (elem, len, i): (usize, usize, usize), (bytes, align): (usize, usize), via: Via, safe: bool,
    ) -> Option<usize> {
        let access = Access::of(store);
        let elements = if elem == 0 { 1 } else { bytes.div_ceil(elem).max(1) };
        if i.checked_add(elements).is_none_or(|end| end > len) {
            self.find(FindingKind::OutOfBounds { space, access, index: i, elements, len }, loc);
            return None;
        }
        let addr = base.wrapping_add(i.wrapping_mul(elem));
        if space == Space::Global {
            let global = &self.memory.global;
            // With no buffer registered, the emulator cannot tell what
            // memory exists: an unsafe view's access goes on (its caller
            // vouches for it), a safe one is refused.
            if (safe || !global.allocations.is_empty()) && !global.allocations.contains(addr, bytes) {
                self.find(FindingKind::OutsideAllocation { access, address: addr, bytes }, loc);
                return None;
            }
            if via != Via::Flag
                && let Some(races) = &global.races
            {
                self.global_race(races, loc, access, addr, bytes);
            }
        }
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
                self.shadow(loc, self.event(site.0), access, byte, bytes);
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
