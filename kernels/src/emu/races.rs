//! The shared-memory checks that need the history of each word: races
//! ([`super::FindingKind::SharedRace`]), reads of words no thread of the
//! block wrote, and accesses to an mbarrier's bytes; and the order of
//! accesses that decides what is a race.
//!
//! Each block counts its barriers (an epoch); each shared word remembers
//! the epoch, thread and line of its last write and of its reads, so two
//! accesses in one epoch by different threads, one a write, are a race,
//! whichever runs first, unless an mbarrier phase orders them. A read of a
//! word whose last write is older than the block is a read of unwritten
//! memory.
//!
//! # Mbarriers and bulk copies
//!
//! A pipeline of bulk copies (TMA) synchronises through mbarriers, not
//! barriers: a producer thread waits on an "empty" barrier that consumers
//! arrive on once they have read a stage, then copies into the stage; the
//! copy's bytes complete a "full" barrier that the consumers wait on. The
//! checker orders these accesses with vector clocks, as the PTX memory
//! model orders them:
//!
//! - each thread has a clock that ticks after each mbarrier arrival (and at
//!   each barrier), and its accesses carry it;
//! - an arrival releases: it joins the thread's clock and what the thread
//!   knows into its barrier's current phase; a wait that returns acquires
//!   what the completed phase released;
//! - a bulk copy writes as an agent of its own, the copies of its barrier
//!   in the phase it counts its bytes towards: the copy is ordered after
//!   what the issuing thread knows when it issues it, and before what
//!   acquires that phase (or a later one of the barrier). A `sync_threads`
//!   alone does not order it (the GPU's barrier does not wait for copies
//!   in flight), not even before the issuing thread's own reads; but what a
//!   thread acquired before a barrier, every thread knows after it.
//!
//! Epochs still order everything across a `sync_threads`, so what a
//! thread knows of the others is only needed within an epoch. A word keeps,
//! besides its last write, the latest read of each thread since then (in
//! a block that initialises an mbarrier; in one that does not, epochs alone
//! order accesses, so a word only tells one reader from several), and a
//! write is checked against all of them: the producer's copy into a stage
//! is clean only if the phase it waited for released every consumer's reads
//! of the stage. A bulk copy is not a load/store-unit request: it is not
//! counted, and neither are the mbarrier operations.

use super::checker::{Access, FindingKind};
use super::exec::unlinear;
use super::memory::{Memory, Request, ThreadMemory};
use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::sync::atomic::Ordering::Relaxed;
use std::vec::Vec;

/// One access to a shared word, as the race checks remember it.
#[derive(Clone, Copy, Default)]
pub(super) struct Event {
    /// The accessing thread's epoch (0: never).
    pub epoch: u32,
    /// What orders it before later accesses: a thread (`agent < threads`,
    /// its linear index), or the copies completing on an mbarrier
    /// (`threads + ` the barrier's index, [`super::mbarrier`]).
    pub agent: u32,
    /// The agent's clock: a thread's at the access; for a copy, the phase
    /// of the barrier whose transactions it counts towards.
    pub clock: u32,
    /// The line (a launch-wide site id).
    pub site: u32,
    /// The thread that made the access, or issued the copy.
    pub thread: u32,
}

/// Reads of one word at one line, epoch and clock, by the threads
/// `read.thread`, `read.thread + stride`, ... up to `last`: the threads of
/// a warpgroup that read one `wgmma` operand in turn (every fourth lane,
/// say) are one run.
#[derive(Clone, Copy)]
struct Run {
    read: Event,
    last: u32,
    stride: u32,
}

impl Run {
    fn of(read: Event) -> Run {
        Run { read, last: read.thread, stride: 0 }
    }

    /// Whether `e`, a read by one thread, is one of this run's.
    fn covers(&self, e: &Event) -> bool {
        let r = &self.read;
        (r.site, r.epoch, r.clock) == (e.site, e.epoch, e.clock)
            && (r.thread..=self.last).contains(&e.thread)
            && (self.stride == 0 || (e.thread - r.thread).is_multiple_of(self.stride))
    }

    /// Adds `e`, a read by a later thread, if it continues the run.
    fn extend(&mut self, e: &Event) -> bool {
        let r = &self.read;
        if (r.site, r.epoch, r.clock) != (e.site, e.epoch, e.clock) || e.thread <= self.last {
            return false;
        }
        let step = e.thread - self.last;
        if self.stride == 0 || self.stride == step {
            (self.stride, self.last) = (step, e.thread);
            return true;
        }
        false
    }

    /// Each thread's read in the run.
    fn reads(&self) -> impl Iterator<Item = Event> + '_ {
        let step = self.stride.max(1) as usize;
        (self.read.thread..=self.last).step_by(step).map(|t| Event { agent: t, thread: t, ..self.read })
    }
}

/// The race checks' record of one 4-byte word of shared memory.
#[derive(Default)]
struct Word {
    /// The last write (epoch 0: none in this launch).
    write: Event,
    /// The reads since that write, all of one epoch: in a block with
    /// mbarriers every thread's (in runs), or, in a block without, the
    /// first read and `many` once a second thread reads too.
    reads: Vec<Run>,
    many: bool,
    /// The epoch of the `mbarrier_init` whose barrier these bytes hold (0:
    /// none), so that accesses to them are found.
    mbarrier: u32,
}

/// A word's record, and a summary of it that the reads of a block without
/// mbarriers check without borrowing the record (most reads change
/// nothing: a word read by many threads, as `wgmma` operands are, is
/// marked so at the second reader). A worker's fibers share one OS thread,
/// so cells serve.
#[derive(Default)]
pub(super) struct Shadow {
    /// `epoch << 32 | agent` of the last write.
    write: Cell<u64>,
    /// `epoch << 32 | thread` of the reads since, or `| MANY` for several
    /// threads, or kept ones ([`Word::reads`] of a block with mbarriers).
    reads: Cell<u64>,
    word: RefCell<Word>,
}

/// The reads stamp of several threads.
const MANY: u64 = u32::MAX as u64;

fn stamp(epoch: u32, who: u64) -> u64 {
    (epoch as u64) << 32 | who
}

/// `into = max(into, from)`, entry by entry (vector clocks, missing
/// entries 0).
fn join(into: &mut Vec<u32>, from: &[u32]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    into.iter_mut().zip(from).for_each(|(a, &b)| *a = (*a).max(b));
}

/// `reads` folded to the latest read of each thread, in runs again: a
/// write must follow each thread's latest read, and so its earlier ones
/// too (a thread's clock only grows, and its later reads come later in the
/// list).
fn latest_per_thread(reads: &mut Vec<Run>) {
    let mut latest: std::collections::BTreeMap<u32, Event> = std::collections::BTreeMap::new();
    for run in reads.iter() {
        for e in run.reads() {
            latest.insert(e.thread, e);
        }
    }
    reads.clear();
    for e in latest.into_values() {
        if !reads.last_mut().is_some_and(|run| run.extend(&e)) {
            reads.push(Run::of(e));
        }
    }
}

impl Memory {
    fn word(&self, i: usize) -> core::cell::RefMut<'_, Word> {
        self.words[i].word.borrow_mut()
    }

    /// The threads' knowledge of mbarrier phases, before a `sync_threads`:
    /// each thread adds its own to the join of the epoch it is ending. The
    /// slot of that epoch's parity was last used two barriers ago, and every
    /// thread has read it since (it had to reach the barrier in between).
    pub(super) fn before_sync(&self, local: &ThreadMemory) {
        let epoch = local.epoch.get();
        if self.mbarrier_block.load(Relaxed) != local.block_start.get() {
            return;
        }
        let mut join_ = self.sync_join.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut join_[epoch as usize % 2];
        if slot.0 != epoch {
            *slot = (epoch, Vec::new());
        }
        let vc = local.vc.borrow();
        join(&mut slot.1, vc.get(self.threads as usize..).unwrap_or(&[]));
    }

    /// After the `sync_threads` ([`Memory::before_sync`]): every thread
    /// knows the phases any of them had acquired. Threads' own accesses
    /// need no entry: the epochs order them.
    pub(super) fn after_sync(&self, local: &ThreadMemory) {
        let ended = local.epoch.get() - 1;
        if self.mbarrier_block.load(Relaxed) != local.block_start.get() {
            return;
        }
        let join_ = self.sync_join.lock().unwrap_or_else(|e| e.into_inner());
        let (tag, bars) = &join_[ended as usize % 2];
        if *tag == ended {
            let mut vc = local.vc.borrow_mut();
            let threads = self.threads as usize;
            if vc.len() < threads + bars.len() {
                vc.resize(threads + bars.len(), 0);
            }
            vc[threads..].iter_mut().zip(bars).for_each(|(a, &b)| *a = (*a).max(b));
        }
    }

    /// Marks the 8 bytes at `byte` as an mbarrier's, initialised in
    /// `epoch` of the block that started in `block_start`.
    pub(super) fn mark_mbarrier(&self, byte: usize, epoch: u32, block_start: u32) {
        self.mbarrier_block.store(block_start, Relaxed);
        for w in byte / 4..(byte + 8) / 4 {
            self.word(w).mbarrier = epoch;
        }
    }
}

impl ThreadMemory {
    /// An mbarrier arrival of thread `linear`: what this thread knows, and
    /// its own accesses so far, join `phase` (the barrier's release); its
    /// clock then ticks.
    pub(super) fn release(&self, linear: u32, phase: &mut Vec<u32>) {
        join(phase, &self.vc.borrow());
        let me = linear as usize;
        if phase.len() <= me {
            phase.resize(me + 1, 0);
        }
        phase[me] = phase[me].max(self.clock.get());
        self.clock.set(self.clock.get() + 1);
    }

    /// A completed phase's wait: this thread learns what the phase released.
    pub(super) fn acquire(&self, phase: &[u32]) {
        join(&mut self.vc.borrow_mut(), phase);
    }
}

impl Request<'_> {
    /// The checks of a read of shared memory that no load instruction of
    /// this thread makes (a `wgmma` operand, which the tensor cores read):
    /// races and unwritten words, at `loc`; not counted.
    pub(super) fn operand_read(&self, loc: &'static Location<'static>, byte: usize, bytes: usize) {
        let (site, _) = self.site_id(loc, false);
        self.shadow(loc, site, false, byte, bytes);
    }

    /// The checks of the shared bytes `byte..byte + bytes` that a bulk copy
    /// (TMA) this thread issues writes at `loc`: the copy is ordered after
    /// what this thread knows when it issues it, and its writes are ordered
    /// before an access only by a completed phase `phase` of the barrier
    /// whose agent is `agent` ([`Request::ordered`]). Not counted.
    pub(super) fn copy_write(
        &self, loc: &'static Location<'static>, byte: usize, bytes: usize, agent: u32, phase: u32,
    ) {
        let (site, _) = self.site_id(loc, false);
        let me = Event { agent, clock: phase, ..self.event(site) };
        self.record(loc, me, Access::Copy, byte, bytes);
    }

    /// This thread's access now, at the line of id `site`.
    pub(super) fn event(&self, site: u32) -> Event {
        let (epoch, clock) = (self.local.epoch.get(), self.local.clock.get());
        Event { epoch, agent: self.linear, clock, site, thread: self.linear }
    }

    /// Whether `e` happens before what this thread does now: it is of an
    /// earlier block, or it is a thread's access and this thread made it,
    /// or a `sync_threads` lies between (an earlier epoch), or an mbarrier
    /// phase this thread acquired released it (its clock is known). A copy
    /// is ordered only by a completed phase of its barrier, which this
    /// thread acquired or another did before a `sync_threads`: the barrier
    /// alone does not wait for copies in flight.
    pub(super) fn ordered(&self, e: &Event) -> bool {
        if e.epoch < self.local.block_start.get() {
            return true;
        }
        let thread = e.agent < self.memory.threads;
        if thread && (e.agent == self.linear || e.epoch < self.local.epoch.get()) {
            return true;
        }
        let known = self.local.vc.borrow().get(e.agent as usize).copied().unwrap_or(0);
        if thread { known >= e.clock } else { known > e.clock }
    }

    /// The race and unwritten-read checks of a shared access of `bytes`
    /// bytes at byte `byte`: at most one finding per access.
    pub(super) fn shadow(&self, loc: &'static Location<'static>, site: u32, store: bool, byte: usize, bytes: usize) {
        self.record(loc, self.event(site), Access::of(store), byte, bytes);
    }

    /// The checks of the access `me` (`access`: a read, a write, or a bulk
    /// copy's write) of the shared bytes `byte..byte + bytes`: every word
    /// remembers it, and the first problem is reported, at `loc`.
    ///
    /// A write is checked against the word's last write and the reads
    /// since, a read against the last write; what [`Request::ordered`]
    /// does not order before the access is a race. A word keeps one read
    /// per thread (its latest), of the current epoch only: a later epoch's
    /// access is ordered after all of them. In a block without mbarriers
    /// only epochs order accesses, so the reads of a second thread fold
    /// into "several threads", which a write of the same epoch races with.
    fn record(&self, loc: &'static Location<'static>, me: Event, access: Access, byte: usize, bytes: usize) {
        let (mem, store) = (self.memory, access != Access::Read);
        let start = self.local.block_start.get();
        let keep_all = mem.mbarrier_block.load(Relaxed) == start;
        let threads = mem.threads;
        let written = |e: &Event| if e.agent < threads { Access::Write } else { Access::Copy };
        // The first problem: a word that holds an mbarrier, one never
        // written, or a conflicting access (the other side and whether it
        // stands for several threads' reads).
        enum Problem {
            Mbarrier(usize),
            Unwritten(usize),
            Race(usize, Access, Event, bool),
        }
        let mut problem = None;
        for i in byte / 4..=(byte + bytes.max(1) - 1) / 4 {
            let shadow = &mem.words[i];
            if !store && !keep_all {
                // A read that its word already shows, of a write ordered
                // before it by an epoch or made by this thread: nothing to
                // record, nothing to report.
                let (r, w) = (shadow.reads.get(), shadow.write.get());
                let (w_epoch, w_agent) = ((w >> 32) as u32, w as u32);
                if r >> 32 == me.epoch as u64
                    && (r as u32 as u64 == MANY || r as u32 == me.thread)
                    && w_epoch >= start
                    && w_agent < threads
                    && (w_epoch < me.epoch || w_agent == me.thread)
                {
                    continue;
                }
            }
            let mut w = shadow.word.borrow_mut();
            let found = if w.mbarrier >= start {
                Some(Problem::Mbarrier(i))
            } else if store {
                let found = if !self.ordered(&w.write) {
                    Some(Problem::Race(i, written(&w.write), w.write, false))
                } else if w.many {
                    // Several threads' reads of a block without mbarriers:
                    // ordered only by an epoch.
                    (w.reads[0].read.epoch == me.epoch).then(|| Problem::Race(i, Access::Read, w.reads[0].read, true))
                } else {
                    w.reads
                        .iter()
                        .find_map(|run| run.reads().find(|r| !self.ordered(r)))
                        .map(|r| Problem::Race(i, Access::Read, r, false))
                };
                // What comes later and is ordered after this write is after
                // the reads too; what is not, races with this write.
                w.write = me;
                w.reads.clear();
                w.many = false;
                found
            } else {
                if w.reads.first().is_some_and(|r| r.read.epoch != me.epoch) {
                    w.reads.clear();
                    w.many = false;
                }
                if keep_all {
                    // Every thread's reads are kept, in runs; a write must
                    // follow all of them. The list is folded to one read a
                    // thread when it outgrows the threads.
                    if !w.reads.last_mut().is_some_and(|run| run.covers(&me) || run.extend(&me)) {
                        w.reads.push(Run::of(me));
                    }
                    if w.reads.len() > 2 * threads as usize {
                        latest_per_thread(&mut w.reads);
                    }
                } else if w.reads.is_empty() {
                    w.reads.push(Run::of(me));
                } else if w.reads[0].read.thread != me.thread {
                    w.many = true;
                }
                if w.write.epoch < start {
                    Some(Problem::Unwritten(i))
                } else if !self.ordered(&w.write) {
                    Some(Problem::Race(i, written(&w.write), w.write, false))
                } else {
                    None
                }
            };
            shadow.write.set(stamp(w.write.epoch, w.write.agent as u64));
            let several = w.many || w.reads.len() > 1 || w.reads.first().is_some_and(|r| r.stride > 0);
            let reads = match (w.reads.first(), several) {
                (None, _) => 0,
                (Some(r), false) => stamp(r.read.epoch, r.read.thread as u64),
                (Some(r), true) => stamp(r.read.epoch, MANY),
            };
            shadow.reads.set(reads);
            drop(w);
            if problem.is_none() {
                problem = found;
            }
        }
        let kind = match problem {
            None => return,
            Some(Problem::Mbarrier(i)) => FindingKind::MbarrierBytes { byte: i * 4, access },
            Some(Problem::Unwritten(i)) => FindingKind::UnwrittenShared { byte: i * 4 },
            Some(Problem::Race(i, other_access, other, several)) => FindingKind::SharedRace {
                byte: i * 4,
                access,
                other_access,
                other_thread: (!several).then(|| unlinear(other.thread as u64, mem.block)),
                other_site: mem.site(other.site),
            },
        };
        self.find(kind, loc);
    }
}
