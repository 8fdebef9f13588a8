//! The plain types every part of the emulator names: where an access was
//! made ([`Site`]), what it did ([`Access`], and for the counters [`Op`]),
//! what made it ([`Via`]), one lane's part of a request ([`LaneAccess`]),
//! a thread's or block's coordinates from its linear index
//! ([`unlinear`]), the limits of a launch, and what is wrong with an
//! mbarrier operation ([`MbarrierProblem`]).
//! A leaf: it imports nothing of the emulator.

use crate::Dim3;
use crate::mem::Space;
use core::panic::Location;

/// The source location of a `load` or `store` on a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site {
    /// As the compiler names it (`kernels/src/transpose/03_tiled.rs`).
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
}

impl Site {
    pub(super) fn of(loc: &'static Location<'static>) -> Site {
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

    /// `reads`, `writes`, `copies to`: how a message says it.
    pub fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Copy => "copies to",
        }
    }
}

/// What makes an access: the counters log the load/store unit's requests
/// (`ld`, `st`, and both sides of a `cp.async`, which `ncu` counts as
/// `ldgsts`); a bulk copy (`cp.async.bulk`) is the copy engine's, which
/// `ncu`'s request and sector counters do not see: checked, not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Via {
    Lsu,
    /// A `raise_flag`: the load/store unit's store, atomic (many writers
    /// raise one flag), so exempt from the cross-block race checks.
    Flag,
    CopyAsync,
    Bulk,
}

/// The coordinates of linear index `i` in `d`, `x` fastest, as CUDA numbers
/// threads and blocks.
pub(super) fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let (x, y) = (d.x as u64, d.y as u64);
    Dim3::new((i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32)
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
    pub(super) fn new(space: Space, store: bool, copy_async: bool) -> Op {
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

/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// Threads in a warpgroup: 4 consecutive warps, the unit that issues `wgmma`.
pub const WARPGROUP_SIZE: u32 = 128;
/// The byte that fills shared memory before each block.
pub const SHARED_POISON: u8 = 0xFF;
/// Stack of each emulated thread. Kernel bodies keep their register arrays
/// (a GEMM thread's 8x16 accumulators and staging fragments) on it, and an
/// unoptimised (debug) build needs several times what a release build does.
/// Only touched pages are committed, so 1024 threads cost little real memory.
pub const EMU_STACK_BYTES: usize = 4 << 20;
/// The most threads one block may have, as on every CUDA GPU since Fermi.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;

/// The most steps one thread may take in one block before the launch fails
/// ([`super::EmuError::StepLimit`]), unless the launch's
/// [`super::Options::step_limit`] says otherwise. A step is an access
/// through a view (each side of a `cp.async`, and of a bulk copy each 16
/// bytes that go through the checks), a barrier, a shuffle, an mbarrier
/// operation, a `wgmma` or a copy into shared memory (TMA, bulk,
/// `st.async`): a thread that loops forever through any of them ends the
/// launch instead of hanging it, and its counters' records (one per
/// access) stay bounded. 4 Mi steps are far more than a
/// thread of any kernel here takes at the tests' shapes (tens of
/// thousands at most), and take a fraction of a second to reach.
pub const STEP_LIMIT: u64 = 1 << 22;

/// The most blocks a cluster may have: 16, the non-portable size Hopper
/// allows (8 is the portable one).
pub const MAX_CLUSTER: u32 = 16;

/// The most arrivals a phase may expect, and the largest tx-count either
/// way: `mbarrier.init` takes a count in `1..2^20`, and the tx-count is kept
/// in `-(2^20 - 1)..=2^20 - 1`.
pub const MBARRIER_MAX: u32 = (1 << 20) - 1;

/// The most `mbarrier_init`s one block may make: a few per pipeline stage
/// is what kernels make; a loop of them would otherwise grow the block's
/// barriers, and every clock of its race checks, without end.
pub const MBARRIER_INITS: usize = 4096;

/// What is wrong with an mbarrier operation ([`super::EmuError::Mbarrier`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbarrierProblem {
    /// The address is not 8-byte aligned.
    Misaligned,
    /// The barrier's 8 bytes end past the launch's shared memory.
    PastSharedMemory { shared_bytes: u32 },
    /// `mbarrier_init` with a count outside `1..=MBARRIER_MAX`.
    BadCount(u32),
    /// No thread of this block initialised a barrier there.
    Uninitialised,
    /// Used by a thread that nothing orders after the barrier's init (a
    /// `sync_threads` after the init belongs in between).
    InitNotOrdered,
    /// An arrival on a phase that has had all its arrivals (and waits for
    /// transaction bytes).
    TooManyArrivals,
    /// The tx-count left `-MBARRIER_MAX..=MBARRIER_MAX`.
    TxCountOverflow,
    /// More than [`MBARRIER_INITS`] inits in one block (each init makes a
    /// new barrier, which the race checks' clocks keep for the block).
    TooManyInits,
}

impl core::fmt::Display for MbarrierProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MbarrierProblem::Misaligned => write!(f, "not 8-byte aligned"),
            MbarrierProblem::PastSharedMemory { shared_bytes } => {
                write!(f, "its 8 bytes end past the launch's {shared_bytes} bytes of shared memory")
            }
            MbarrierProblem::BadCount(c) => write!(f, "initialised with count {c} (must be 1..={MBARRIER_MAX})"),
            MbarrierProblem::Uninitialised => write!(f, "never initialised in this block"),
            MbarrierProblem::InitNotOrdered => {
                write!(f, "used by a thread that nothing orders after its init (a sync_threads belongs in between)")
            }
            MbarrierProblem::TooManyArrivals => write!(f, "arrival on a phase that had all its arrivals"),
            MbarrierProblem::TxCountOverflow => write!(f, "transaction count out of range (±{MBARRIER_MAX} bytes)"),
            MbarrierProblem::TooManyInits => write!(f, "more than {MBARRIER_INITS} inits in one block"),
        }
    }
}
