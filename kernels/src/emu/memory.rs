//! What the emulator sees of every access a kernel makes through a view
//! ([`crate::mem`]): the checker's findings and the memory counters.
//!
//! # The checker
//!
//! Every launch runs it. Each finding names the source line of the access
//! (`#[track_caller]` on the views), the block and the thread:
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
//!   the other: no barrier between them, nor an mbarrier phase (below).
//!   Each block counts its barriers (an epoch); each shared word remembers
//!   the epoch, thread and line of its last write and of its reads, so two
//!   accesses in one epoch by different threads, one a write, are a race,
//!   whichever runs first, unless an mbarrier phase orders them;
//! - [`FindingKind::MbarrierBytes`]: an access to the 8 bytes of an
//!   mbarrier the block initialised (its state lives there on the GPU).
//!
//! Findings with the same kind and lines are folded into one, with a count
//! and the first occurrence's block, thread and address. An access reports
//! at most one finding, and every word it touches remembers it.
//!
//! ## Mbarriers and bulk copies
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
//!
//! # The counters
//!
//! [`super::launch_checked`] also counts, per source line of an access
//! (a [`Site`]): a *request* is one warp-level execution of the line,
//! the 32 lanes' accesses grouped by (block, warp, line, how many times
//! each thread had executed that line before). Per request:
//!
//! - global memory: the 32-byte sectors that the lanes' bytes touch, at
//!   their real addresses (a request of 32 consecutive floats is 4 sectors
//!   when aligned, 5 when not);
//! - shared memory: wavefronts, as the Hopper L1 processes them. Shared
//!   memory has 32 banks of 4-byte words (word `w` in bank `w % 32`); lanes
//!   that touch the same word are served together (a broadcast for loads, one
//!   write for stores), different words in one bank take a wavefront each.
//!   Accesses of 4 bytes or less go through as one phase of 32 lanes, 8-byte
//!   accesses as two phases of 16 lanes (lanes 0-15, 16-31), 16-byte accesses
//!   as four phases of 8 lanes (128 bytes a phase, what the banks deliver per
//!   cycle). A phase takes as many wavefronts as the most distinct words any
//!   one bank holds among its lanes' words; a request, the sum over its
//!   phases with active lanes. Not modelled: lanes of different phases
//!   that read the same address are served together on the GPU, so a
//!   16-byte load whose lanes share addresses (GEMM steps 5-7's fragment
//!   loads) takes fewer wavefronts than the four phases charged here
//!   (`docs/gemm.md` puts the two side by side).
//! - `cp.async` ([`crate::Shared::copy_async_16`]): its two sides apart, as
//!   [`Op::CopyAsyncLoad`] (sectors) and [`Op::CopyAsyncStore`]
//!   (wavefronts), since `ncu` counts `LDGSTS` apart from shared stores.
//!
//! and the bytes the lanes asked for, against the ideal: for global memory
//! the sectors a packed, aligned request for those bytes would touch, for
//! shared memory one wavefront per phase.
//!
//! The emulator has no SIMT scheduler, so lanes are paired by how many times
//! each executed the line: exact when the lanes of a warp that execute a
//! line execute the same iterations of it (every interior tile here, and
//! edges where a lane either takes or skips a whole run of iterations), an
//! approximation where lanes skip different iterations of an inner loop
//! (step 7's scalar path on its right edge tiles).
//!
//! Sources: the CUDA C++ Programming Guide, "Shared Memory" for compute
//! capability 5.x and later (32 banks of successive 32-bit words; lanes on
//! one word do not conflict: broadcast for reads, one writer for writes);
//! Nsight Compute's Kernel Profiling Guide (requests, sectors of 32 bytes,
//! wavefronts: "at least one wavefront is generated for each request");
//! for 16-byte accesses, four wavefronts of 128 bytes as the minimum
//! (NVIDIA developer forums, "bank_conflicts metric vs wavefronts for shared
//! memory LDS.128", where `ncu` counts 4 wavefronts and 0 conflicts).
//!
//! Counted per line of the source, that is at PTX granularity: where
//! ptxas merges a kernel's consecutive 4-byte shared loads into one 8- or
//! 16-byte load, the GPU makes fewer, wider requests than counted here. The
//! operands a `wgmma` reads from shared memory pass the checker (races,
//! unwritten words) but are not counted: they do not go through the
//! load/store unit.

use super::unlinear;
use crate::Dim3;
use crate::mem::Space;
use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::collections::HashMap;
use std::string::String;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
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

/// What an access does, and to which memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    GlobalLoad,
    GlobalStore,
    SharedLoad,
    SharedStore,
    /// The global side of a `cp.async` (`LDGSTS`): read without a register.
    CopyAsyncLoad,
    /// Its shared side: written without a register.
    CopyAsyncStore,
}

impl Op {
    /// Every op, in the order tables list them.
    pub const ALL: [Op; 6] =
        [Op::GlobalLoad, Op::GlobalStore, Op::SharedLoad, Op::SharedStore, Op::CopyAsyncLoad, Op::CopyAsyncStore];

    /// `copy_async`: the access is one side of a `cp.async`, which `ncu`
    /// counts apart from loads and stores (`op_ldgsts`).
    fn new(space: Space, store: bool, copy_async: bool) -> Op {
        match (space, store, copy_async) {
            (Space::Global, false, false) => Op::GlobalLoad,
            (Space::Global, true, _) => Op::GlobalStore,
            (Space::Shared, false, _) => Op::SharedLoad,
            (Space::Shared, true, false) => Op::SharedStore,
            (Space::Global, false, true) => Op::CopyAsyncLoad,
            (Space::Shared, true, true) => Op::CopyAsyncStore,
        }
    }

    pub fn space(self) -> Space {
        match self {
            Op::GlobalLoad | Op::GlobalStore | Op::CopyAsyncLoad => Space::Global,
            Op::SharedLoad | Op::SharedStore | Op::CopyAsyncStore => Space::Shared,
        }
    }

    pub fn is_store(self) -> bool {
        matches!(self, Op::GlobalStore | Op::SharedStore | Op::CopyAsyncStore)
    }

    /// `global ld`, `shared st`, ...
    pub fn name(self) -> &'static str {
        match self {
            Op::GlobalLoad => "global ld",
            Op::CopyAsyncLoad => "cp.async ld",
            Op::CopyAsyncStore => "cp.async st",
            Op::GlobalStore => "global st",
            Op::SharedLoad => "shared ld",
            Op::SharedStore => "shared st",
        }
    }

    /// What a request costs in this memory: `sectors` or `wavefronts`.
    pub fn unit(self) -> &'static str {
        match self.space() {
            Space::Global => "sectors",
            Space::Shared => "wavefronts",
        }
    }
}

/// Counts of one [`Op`] at one line, or summed over lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Warp-level executions of the access.
    pub requests: u64,
    /// Thread-level accesses (32 per request of a full warp).
    pub accesses: u64,
    /// Bytes the threads asked for.
    pub bytes: u64,
    /// Global: 32-byte sectors touched. Shared: wavefronts.
    pub transactions: u64,
    /// The fewest transactions that serve the same requests: global, the
    /// sectors of each request's distinct bytes packed and aligned; shared,
    /// one wavefront per phase.
    pub ideal: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.accesses += other.accesses;
        self.bytes += other.bytes;
        self.transactions += other.transactions;
        self.ideal += other.ideal;
    }

    /// Sectors (global) or wavefronts (shared) per request; 0 without requests.
    pub fn per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.transactions as f64 / self.requests as f64 }
    }

    /// The ideal per request.
    pub fn ideal_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.ideal as f64 / self.requests as f64 }
    }

    /// Ideal over actual transactions, 1 when there were none: for global
    /// memory the share of the sectors' bytes that were asked for (when every
    /// byte is asked for once), for shared memory 1 / (the average conflict
    /// degree).
    pub fn efficiency(&self) -> f64 {
        if self.transactions == 0 { 1.0 } else { self.ideal as f64 / self.transactions as f64 }
    }
}

/// The counters of one line of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteCounters {
    pub site: Site,
    pub op: Op,
    /// Bytes one thread moves per access (4 for an f32, 16 for an F4).
    pub width: u32,
    pub tally: Tally,
    /// One request of this line, lane by lane: the first one counted (the
    /// first block's first warp that runs the line, its first execution).
    /// What a picture of the line draws.
    pub sample: Vec<LaneAccess>,
}

/// One lane's part of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneAccess {
    /// The lane, 0-31.
    pub lane: u32,
    /// Global memory: the byte offset from the start of the first 32-byte
    /// sector the request touches, so that the sectors are `addr / 32` and
    /// nothing depends on where the host put the buffer. Shared memory: the
    /// byte offset in the block's shared memory (bank `addr / 4 % 32`).
    pub addr: u64,
    pub bytes: u32,
}

/// The counters of one launch, one entry per (line, op), in source order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sites: Vec<SiteCounters>,
}

impl Counters {
    /// The sum over every line of `op`.
    pub fn total(&self, op: Op) -> Tally {
        let mut t = Tally::default();
        self.sites.iter().filter(|s| s.op == op).for_each(|s| t.add(&s.tally));
        t
    }

    /// The lines of `op`, in source order.
    pub fn of(&self, op: Op) -> impl Iterator<Item = &SiteCounters> {
        self.sites.iter().filter(move |s| s.op == op)
    }
}

/// A load or a store, as a finding names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    /// The write of a bulk copy (TMA) that the thread issued.
    Copy,
}

impl Access {
    fn of(store: bool) -> Access {
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
    /// nor an mbarrier phase this thread acquired (module docs).
    SharedRace { byte: usize, access: Access, other_access: Access, other_thread: Option<Dim3>, other_site: Site },
    /// An access through a view, or a bulk copy's write, to the shared word
    /// at byte `byte`, which holds an mbarrier this block initialised.
    MbarrierBytes { byte: usize, access: Access },
}

impl FindingKind {
    /// What folds two findings into one: the kind, its access, and the other line.
    fn key(&self) -> (u8, Option<Access>, Option<Access>, Option<Site>) {
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

/// What the counters keep of one (line, op): the widest access, the
/// tally, and the first request's lanes.
type LineTally = (u32, Tally, Vec<LaneAccess>);

/// One access as a thread logged it, for the counters.
#[derive(Clone, Copy)]
struct Record {
    site: u32,
    instance: u32,
    op: Op,
    bytes: u32,
    /// Global: the host address; shared: the byte offset in the block's memory.
    addr: usize,
}

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

/// The race checks' record of one 4-byte word of shared memory.
#[derive(Default)]
struct Word {
    /// The last write (epoch 0: none in this launch).
    write: Event,
    /// The reads since that write, all of one epoch: one per thread (its
    /// latest), or, in a block without mbarriers, the first read and
    /// `many` once a second thread reads too.
    reads: Vec<Event>,
    many: bool,
    /// The epoch of the `mbarrier_init` whose barrier these bytes hold (0:
    /// none), so that accesses to them are found.
    mbarrier: u32,
}

/// A word's record, and a summary of it that the reads of a block without
/// mbarriers check without taking the lock (most reads change nothing:
/// a word read by many threads, as `wgmma` operands are, is marked so at
/// the second reader). Both stamps are written under the lock.
#[derive(Default)]
struct Shadow {
    /// `epoch << 32 | agent` of the last write.
    write: AtomicU64,
    /// `epoch << 32 | thread` of the reads since, or `| MANY` for several
    /// threads, or kept ones ([`Word::reads`] of a block with mbarriers).
    reads: AtomicU64,
    word: Mutex<Word>,
}

/// The reads stamp of several threads.
const MANY: u64 = u32::MAX as u64;

fn stamp(epoch: u32, who: u64) -> u64 {
    (epoch as u64) << 32 | who
}

/// `into = max(into, from)`, entry by entry (vector clocks, missing
/// entries 0).
pub(super) fn join(into: &mut Vec<u32>, from: &[u32]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    into.iter_mut().zip(from).for_each(|(a, &b)| *a = (*a).max(b));
}

/// What every thread of a launch shares about memory.
pub(super) struct Memory {
    counting: bool,
    block: Dim3,
    /// Threads per block: the first agents of every vector clock.
    pub(super) threads: u32,
    shared_bytes: u32,
    sites: Mutex<Vec<Site>>,
    words: Vec<Shadow>,
    /// The block-start epoch of the last block that initialised an
    /// mbarrier: in that block reads are kept per thread, since a phase
    /// may order them before a later write by another thread.
    mbarrier_block: AtomicU32,
    /// The knowledge of mbarrier phases that the threads bring to a
    /// `sync_threads`, joined: by the parity of the epoch the barrier ends,
    /// tagged with that epoch ([`Memory::before_sync`]).
    sync_join: Mutex<[(u32, Vec<u32>); 2]>,
    findings: Mutex<Vec<Finding>>,
    /// This block's records, one list per thread (counting only).
    logs: Vec<Mutex<Vec<Record>>>,
    tallies: Mutex<HashMap<(u32, Op), LineTally>>,
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
        }
    }

    fn word(&self, i: usize) -> std::sync::MutexGuard<'_, Word> {
        self.words[i].word.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The threads' knowledge of mbarrier phases, before a `sync_threads`:
    /// each thread adds its own to the join of the epoch it is ending. The
    /// slot of that epoch's parity was last used two barriers ago, and every
    /// thread has read it since (it had to reach the barrier in between).
    pub(super) fn before_sync(&self, local: &ThreadMemory) {
        let epoch = local.epoch.get();
        if self.mbarrier_block.load(SeqCst) != local.block_start.get() {
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
        if self.mbarrier_block.load(SeqCst) != local.block_start.get() {
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
        self.mbarrier_block.store(block_start, SeqCst);
        for w in byte / 4..(byte + 8) / 4 {
            self.word(w).mbarrier = epoch;
        }
    }

    fn site(&self, id: u32) -> Site {
        self.sites.lock().unwrap_or_else(|e| e.into_inner())[id as usize]
    }

    fn find(&self, kind: FindingKind, site: Site, block: Dim3, thread: Dim3) {
        let mut all = self.findings.lock().unwrap_or_else(|e| e.into_inner());
        let key = kind.key();
        match all.iter_mut().find(|f| f.site == site && f.kind.key() == key) {
            Some(f) => f.count += 1,
            None => all.push(Finding { kind, site, block, thread, count: 1 }),
        }
    }

    /// Hands this block's records of thread `linear` over for counting.
    pub(super) fn end_block(&self, linear: u32, local: &ThreadMemory) {
        if self.counting {
            let records = core::mem::take(&mut *local.records.borrow_mut());
            *self.logs[linear as usize].lock().unwrap_or_else(|e| e.into_inner()) = records;
        }
        local.sites.borrow_mut().iter_mut().for_each(|s| s.2 = 0);
    }

    /// Counts the block's requests (one thread calls this, between two
    /// barriers, after every thread's [`Memory::end_block`]).
    pub(super) fn tally_block(&self) {
        if !self.counting {
            return;
        }
        let mut tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        let mut warp = Vec::new();
        for lanes in self.logs.chunks(super::WARP_SIZE as usize) {
            warp.clear();
            for (lane, log) in lanes.iter().enumerate() {
                let log = core::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
                warp.extend(log.into_iter().map(|r| (lane as u32, r)));
            }
            // A line may access both memories (a helper called with a
            // global and a shared view): the op keeps their requests apart.
            warp.sort_unstable_by_key(|&(lane, r)| (r.site, r.op, r.instance, lane));
            for group in warp.chunk_by(|a, b| (a.1.site, a.1.op, a.1.instance) == (b.1.site, b.1.op, b.1.instance)) {
                let r = group[0].1;
                let (width, tally, sample) =
                    tallies.entry((r.site, r.op)).or_insert((r.bytes, Tally::default(), Vec::new()));
                *width = (*width).max(r.bytes);
                let lanes: Vec<(u32, usize, u32)> = group.iter().map(|&(l, r)| (l, r.addr, r.bytes)).collect();
                if sample.is_empty() {
                    let base = match r.op.space() {
                        Space::Global => lanes.iter().map(|l| l.1).min().unwrap_or(0) / 32 * 32,
                        Space::Shared => 0,
                    };
                    let at = |a: usize| (a - base) as u64;
                    sample.extend(lanes.iter().map(|&(lane, a, bytes)| LaneAccess { lane, addr: at(a), bytes }));
                }
                let (transactions, ideal) = match r.op.space() {
                    Space::Global => (sectors(&lanes), ideal_sectors(&lanes)),
                    Space::Shared => wavefronts(&lanes),
                };
                tally.add(&Tally {
                    requests: 1,
                    accesses: lanes.len() as u64,
                    bytes: lanes.iter().map(|l| l.2 as u64).sum(),
                    transactions,
                    ideal,
                });
            }
        }
    }

    /// The launch's report.
    pub(super) fn report(self) -> Report {
        let sites = self.sites.into_inner().unwrap_or_else(|e| e.into_inner());
        let tallies = self.tallies.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut counters: Vec<SiteCounters> = tallies
            .into_iter()
            .map(|((site, op), (width, tally, sample))| SiteCounters {
                site: sites[site as usize],
                op,
                width,
                tally,
                sample,
            })
            .collect();
        counters.sort_by_key(|c| (c.site, c.op));
        let mut findings = self.findings.into_inner().unwrap_or_else(|e| e.into_inner());
        findings.sort_by_key(|f| (f.site, f.kind.key().0));
        Report { counters: Counters { sites: counters }, findings }
    }
}

/// What one request costs, as the counters count it: 32-byte sectors
/// (global memory) or wavefronts (shared), and the ideal (see [`Tally`]).
pub fn request_cost(op: Op, lanes: &[LaneAccess]) -> (u64, u64) {
    let lanes: Vec<(u32, usize, u32)> = lanes.iter().map(|l| (l.lane, l.addr as usize, l.bytes)).collect();
    match op.space() {
        Space::Global => (sectors(&lanes), ideal_sectors(&lanes)),
        Space::Shared => wavefronts(&lanes),
    }
}

/// The 32-byte sectors that the lanes' `(lane, address, bytes)` touch.
fn sectors(lanes: &[(u32, usize, u32)]) -> u64 {
    let mut s: Vec<usize> = lanes.iter().flat_map(|&(_, a, n)| a / 32..=(a + n.max(1) as usize - 1) / 32).collect();
    s.sort_unstable();
    s.dedup();
    s.len() as u64
}

/// The sectors of the lanes' distinct bytes, packed into aligned sectors.
fn ideal_sectors(lanes: &[(u32, usize, u32)]) -> u64 {
    let mut ranges: Vec<(usize, usize)> = lanes.iter().map(|&(_, a, n)| (a, a + n as usize)).collect();
    ranges.sort_unstable();
    let (mut distinct, mut end) = (0usize, 0usize);
    for (a, b) in ranges {
        let a = a.max(end);
        if b > a {
            distinct += b - a;
            end = b;
        }
    }
    distinct.div_ceil(32) as u64
}

/// Wavefronts and the ideal of one shared-memory request (see the module
/// docs): phases of 32, 16 or 8 lanes for 4-, 8- and 16-byte accesses.
fn wavefronts(lanes: &[(u32, usize, u32)]) -> (u64, u64) {
    let (_, ways) = phases(lanes);
    let busy = ways.iter().map(|w| w.iter().copied().max().unwrap_or(0) as u64).filter(|&w| w > 0);
    busy.fold((0, 0), |(total, phases), w| (total + w, phases + 1))
}

/// The lanes of each phase of a shared-memory request (32 for accesses of
/// 4 bytes or less, 16 for 8-byte ones, 8 for 16-byte ones), and per phase
/// the distinct words each bank holds among its lanes' words (lanes on one
/// word are a broadcast, not a conflict; a phase with no lane is all 0).
fn phases(lanes: &[(u32, usize, u32)]) -> (u32, Vec<[u32; 32]>) {
    let width = lanes.iter().map(|l| l.2).max().unwrap_or(4).max(4);
    let per_phase = (32 / width.div_ceil(4)).max(8);
    let mut words: Vec<usize> = Vec::new();
    let ways = (0..32 / per_phase)
        .map(|phase| {
            words.clear();
            for &(_, a, n) in lanes.iter().filter(|l| l.0 / per_phase == phase) {
                words.extend(a / 4..=(a + n.max(1) as usize - 1) / 4);
            }
            words.sort_unstable();
            words.dedup();
            let mut per_bank = [0u32; 32];
            words.iter().for_each(|w| per_bank[w % 32] += 1);
            per_bank
        })
        .collect();
    (per_phase, ways)
}

/// [`phases`] of a sampled shared-memory request: lanes per phase, and the
/// distinct words of each bank in each phase (the conflicts a picture marks).
pub fn bank_ways(lanes: &[LaneAccess]) -> (u32, Vec<[u32; 32]>) {
    let lanes: Vec<(u32, usize, u32)> = lanes.iter().map(|l| (l.lane, l.addr as usize, l.bytes)).collect();
    phases(&lanes)
}

/// What one emulated thread keeps about its own accesses, across blocks.
#[derive(Default)]
pub(super) struct ThreadMemory {
    /// The lines seen: location, launch-wide id, executions in this block.
    sites: RefCell<Vec<(&'static Location<'static>, u32, u32)>>,
    records: RefCell<Vec<Record>>,
    /// Barriers passed in this launch, plus one per block started.
    epoch: Cell<u32>,
    /// The epoch this block started in.
    block_start: Cell<u32>,
    /// This thread's clock: it ticks after each release (an mbarrier
    /// arrival) and at each barrier, so what a thread released once never
    /// covers what it does later.
    clock: Cell<u32>,
    /// What this thread has acquired through mbarrier phases (a vector
    /// clock, [`Memory`]'s agents): the clocks of other threads, and per
    /// barrier the phases completed (which orders the copies they counted).
    vc: RefCell<Vec<u32>>,
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
    fn site_id(&self, loc: &'static Location<'static>, count: bool) -> (u32, u32) {
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
    /// `base`. Returns the address to access, or `None` when the access must
    /// not happen (out of bounds).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn access(
        &self,
        loc: &'static Location<'static>,
        space: Space,
        store: bool,
        base: usize,
        (elem, len, i): (usize, usize, usize),
        (bytes, align): (usize, usize),
        copy_async: bool,
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
        if let (true, Some((site, instance))) = (counting, site) {
            let op = Op::new(space, store, copy_async);
            self.local.records.borrow_mut().push(Record { site, instance, op, bytes: bytes as u32, addr: logged });
        }
        Some(addr)
    }

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
        &self,
        loc: &'static Location<'static>,
        byte: usize,
        bytes: usize,
        agent: u32,
        phase: u32,
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
    fn shadow(&self, loc: &'static Location<'static>, site: u32, store: bool, byte: usize, bytes: usize) {
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
        let keep_all = mem.mbarrier_block.load(SeqCst) == start;
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
                let (r, w) = (shadow.reads.load(SeqCst), shadow.write.load(SeqCst));
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
            let mut w = shadow.word.lock().unwrap_or_else(|e| e.into_inner());
            let found = if w.mbarrier >= start {
                Some(Problem::Mbarrier(i))
            } else if store {
                let found = if !self.ordered(&w.write) {
                    Some(Problem::Race(i, written(&w.write), w.write, false))
                } else if w.many {
                    // Several threads' reads of a block without mbarriers:
                    // ordered only by an epoch.
                    (w.reads[0].epoch == me.epoch).then(|| Problem::Race(i, Access::Read, w.reads[0], true))
                } else {
                    w.reads.iter().find(|r| !self.ordered(r)).map(|r| Problem::Race(i, Access::Read, *r, false))
                };
                // What comes later and is ordered after this write is after
                // the reads too; what is not, races with this write.
                w.write = me;
                w.reads.clear();
                w.many = false;
                found
            } else {
                if w.reads.first().is_some_and(|r| r.epoch != me.epoch) {
                    w.reads.clear();
                    w.many = false;
                }
                if keep_all {
                    // The latest read is the one a write must follow.
                    match w.reads.iter_mut().find(|r| r.thread == me.thread) {
                        Some(r) => *r = me,
                        None => w.reads.push(me),
                    }
                } else if w.reads.is_empty() {
                    w.reads.push(me);
                } else if w.reads[0].thread != me.thread {
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
            shadow.write.store(stamp(w.write.epoch, w.write.agent as u64), SeqCst);
            let reads = match (w.reads.first(), w.many || w.reads.len() > 1) {
                (None, _) => 0,
                (Some(r), false) => stamp(r.epoch, r.thread as u64),
                (Some(r), true) => stamp(r.epoch, MANY),
            };
            shadow.reads.store(reads, SeqCst);
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
