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

use super::types::Access;
use core::cell::{Cell, RefCell};
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

/// The first problem an access has, at the word at `byte`: it holds an
/// mbarrier, it was never written in this block, or another access
/// conflicts with it (the other side, and whether it stands for several
/// threads' reads).
pub(super) enum Problem {
    Mbarrier { byte: usize },
    Unwritten { byte: usize },
    Race { byte: usize, other_access: Access, other: Event, several: bool },
}

/// One thread's side of the race checks, across the blocks it runs: its
/// epochs, its clock, and what it acquired.
#[derive(Default)]
pub(super) struct Clock {
    /// Barriers passed in this launch, plus one per block started.
    epoch: Cell<u32>,
    /// The epoch this block started in.
    block_start: Cell<u32>,
    /// This thread's clock: it ticks after each release (an mbarrier
    /// arrival) and at each barrier, so what a thread released once never
    /// covers what it does later.
    clock: Cell<u32>,
    /// What this thread has acquired through mbarrier phases (a vector
    /// clock, [`Races`]' agents): the clocks of other threads, and per
    /// barrier the phases completed (which orders the copies they counted).
    vc: RefCell<Vec<u32>>,
}

impl Clock {
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

    /// This thread's (of linear index `linear`) access now, at the line of id `site`.
    pub(super) fn event(&self, linear: u32, site: u32) -> Event {
        let (epoch, clock) = (self.epoch.get(), self.clock.get());
        Event { epoch, agent: linear, clock, site, thread: linear }
    }

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

    /// Whether `e` happens before what thread `linear` (with this clock)
    /// does now, in clusters of `threads` threads: it is of an earlier
    /// block, or it is a thread's access and this thread made it, or a
    /// `sync_threads` lies between (an earlier epoch), or an mbarrier phase
    /// this thread acquired released it (its clock is known). A copy is
    /// ordered only by a completed phase of its barrier, which this thread
    /// acquired or another did before a `sync_threads`: the barrier alone
    /// does not wait for copies in flight.
    pub(super) fn ordered(&self, threads: u32, linear: u32, e: &Event) -> bool {
        if e.epoch < self.block_start.get() {
            return true;
        }
        let thread = e.agent < threads;
        if thread && (e.agent == linear || e.epoch < self.epoch.get()) {
            return true;
        }
        let known = self.vc.borrow().get(e.agent as usize).copied().unwrap_or(0);
        if thread { known >= e.clock } else { known > e.clock }
    }
}

/// A worker's race checks: one [`Shadow`] a word of the cluster's shared
/// memory, and what orders accesses beyond the epochs.
pub(super) struct Races {
    /// Threads per cluster: the first agents of every vector clock.
    threads: u32,
    words: Vec<Shadow>,
    /// The block-start epoch of the last block that initialised an
    /// mbarrier: in that block reads are kept per thread, since a phase
    /// may order them before a later write by another thread.
    mbarrier_block: Cell<u32>,
    /// The knowledge of mbarrier phases that the threads bring to a
    /// `sync_threads`, joined: by the parity of the epoch the barrier ends,
    /// tagged with that epoch ([`Races::before_sync`]).
    sync_join: RefCell<[(u32, Vec<u32>); 2]>,
}

impl Races {
    /// The checks of `shared_bytes` of shared memory, for clusters of
    /// `threads` threads.
    pub(super) fn new(threads: u32, shared_bytes: u32) -> Races {
        Races {
            threads,
            words: (0..(shared_bytes as usize).div_ceil(4)).map(|_| Shadow::default()).collect(),
            mbarrier_block: Cell::new(0),
            sync_join: RefCell::new([(0, Vec::new()), (0, Vec::new())]),
        }
    }

    /// The threads' knowledge of mbarrier phases, before a `sync_threads`:
    /// each thread adds its own to the join of the epoch it is ending. The
    /// slot of that epoch's parity was last used two barriers ago, and every
    /// thread has read it since (it had to reach the barrier in between).
    pub(super) fn before_sync(&self, clock: &Clock) {
        let epoch = clock.epoch.get();
        if self.mbarrier_block.get() != clock.block_start.get() {
            return;
        }
        let mut join_ = self.sync_join.borrow_mut();
        let slot = &mut join_[epoch as usize % 2];
        if slot.0 != epoch {
            *slot = (epoch, Vec::new());
        }
        let vc = clock.vc.borrow();
        join(&mut slot.1, vc.get(self.threads as usize..).unwrap_or(&[]));
    }

    /// After the `sync_threads` ([`Races::before_sync`]): every thread
    /// knows the phases any of them had acquired. Threads' own accesses
    /// need no entry: the epochs order them.
    pub(super) fn after_sync(&self, clock: &Clock) {
        let ended = clock.epoch.get() - 1;
        if self.mbarrier_block.get() != clock.block_start.get() {
            return;
        }
        let join_ = self.sync_join.borrow();
        let (tag, bars) = &join_[ended as usize % 2];
        if *tag == ended {
            let mut vc = clock.vc.borrow_mut();
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
        self.mbarrier_block.set(block_start);
        for w in byte / 4..(byte + 8) / 4 {
            self.words[w].word.borrow_mut().mbarrier = epoch;
        }
    }

    /// The checks of the access `me` (`access`: a read, a write, or a bulk
    /// copy's write) of the shared bytes `byte..byte + bytes`: every word
    /// remembers it, and the first problem is returned.
    ///
    /// A write is checked against the word's last write and the reads
    /// since, a read against the last write; what [`Clock::ordered`]
    /// does not order before the access is a race. A word keeps one read
    /// per thread (its latest), of the current epoch only: a later epoch's
    /// access is ordered after all of them. In a block without mbarriers
    /// only epochs order accesses, so the reads of a second thread fold
    /// into "several threads", which a write of the same epoch races with.
    pub(super) fn check(&self, clock: &Clock, me: Event, access: Access, byte: usize, bytes: usize) -> Option<Problem> {
        let store = access != Access::Read;
        let start = clock.block_start.get();
        let keep_all = self.mbarrier_block.get() == start;
        let threads = self.threads;
        let ordered = |e: &Event| clock.ordered(threads, me.thread, e);
        let written = |e: &Event| if e.agent < threads { Access::Write } else { Access::Copy };
        let mut problem = None;
        for i in byte / 4..=(byte + bytes.max(1) - 1) / 4 {
            let shadow = &self.words[i];
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
                Some(Problem::Mbarrier { byte: 4 * i })
            } else if store {
                let found = if !ordered(&w.write) {
                    Some(Problem::Race { byte: 4 * i, other_access: written(&w.write), other: w.write, several: false })
                } else if w.many {
                    // Several threads' reads of a block without mbarriers:
                    // ordered only by an epoch.
                    (w.reads[0].read.epoch == me.epoch).then(|| Problem::Race {
                        byte: 4 * i,
                        other_access: Access::Read,
                        other: w.reads[0].read,
                        several: true,
                    })
                } else {
                    w.reads.iter().find_map(|run| run.reads().find(|r| !ordered(r))).map(|r| Problem::Race {
                        byte: 4 * i,
                        other_access: Access::Read,
                        other: r,
                        several: false,
                    })
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
                    Some(Problem::Unwritten { byte: 4 * i })
                } else if !ordered(&w.write) {
                    Some(Problem::Race { byte: 4 * i, other_access: written(&w.write), other: w.write, several: false })
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
        problem
    }
}
