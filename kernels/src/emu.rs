//! The CPU emulator: runs kernel bodies on the host, one OS thread per CUDA
//! thread, so that every kernel is tested on machines without a GPU.
//!
//! A launch spawns one thread per thread of a block; together they walk the
//! grid's blocks in order. What the emulator keeps faithful:
//!
//! - `sync_threads` is a real barrier over the block's threads. A barrier
//!   reached by only some threads (one that returned early, say) is reported
//!   as [`EmuError::DivergentBarrier`] instead of hanging or silently pairing
//!   with the wrong barrier, as real hardware may.
//! - Each block gets its own dynamic shared memory, filled with a poison byte
//!   (`0xFF`, a NaN for f32) before the block starts, so a kernel that reads
//!   shared memory it did not write, or expects another block's data, fails.
//! - Warp shuffles exchange values among the 32 lanes of a warp (threads with
//!   consecutive linear index, as on the GPU); a missing lane is an error.
//! - `wgmma` is warpgroup-collective: the 128 threads of a warpgroup meet at
//!   a barrier, check that they name the same operands (a missing thread,
//!   differing descriptors or scale-d is an error), and each takes its
//!   fragment of `D += A * B^T` (or `D = A * B^T`, scale-d 0), computed from
//!   shared memory through the matrix descriptors (start address, strides,
//!   swizzle) as the tensor cores read it. Each 8-deep step's sum is
//!   rounded into the f32 accumulator toward zero, as the tensor cores
//!   truncate it (see `EmuCtx::wgmma_tf32`), so the bias that this
//!   leaves in a long sum shows on the emulator too. The product completes
//!   at issue, so `wgmma_wait` and the proxy fences have nothing left to do.
//! - Mbarriers keep their arrivals, transaction bytes and phases per block
//!   (PTX semantics: a phase completes when both its pending arrivals and
//!   its tx-count reach zero, and a wait names the parity of the phase it
//!   waits for). A wait that can never end fails the launch instead of
//!   hanging ([`EmuError::MbarrierDeadlock`]): the launch counts the
//!   threads not blocked in a wait or at a barrier, so it knows when none
//!   is left to arrive (barriers that can never meet, a `sync_threads` in
//!   one lane and a shuffle in the others, say, are found the same way).
//!   Misuse (an address never initialised, an arrival too many) is an
//!   [`EmuError::Mbarrier`].
//! - Bulk tensor copies (TMA, `tma_load_2d`) read the emulator's own
//!   encoding of a tensor map ([`TmaMap`]), copy the box at once in the
//!   issuing thread (zeros outside the tensor, the 128-byte swizzle that
//!   `wgmma` descriptors read), then count its bytes on the barrier.
//! - Every access through a view ([`crate::mem`]) is checked: bounds,
//!   alignment, shared-memory races and reads of unwritten shared memory
//!   ([`checker`] says what it finds, [`races`] how it orders accesses,
//!   mbarriers and bulk copies included). [`launch`] returns the findings
//!   as [`EmuError::Checker`]; [`launch_checked`] returns them in a
//!   [`Report`], with the memory counters ([`counters`]): 32-byte sectors
//!   per global request and wavefronts per shared request (bank conflicts),
//!   per source line, as [`cost`] models them.
//!
//! What it does not model: timing, caches, raw-pointer accesses (the kernels
//! not yet written with views are neither checked nor counted), or
//! blocks running concurrently (they run one after another), so a kernel that
//! relies on inter-block communication within one launch is not caught; nor
//! asynchrony, beyond what the checker makes of it: bulk copies land at
//! issue, but the checker orders their writes only through their barrier's
//! phase, as the GPU does ([`races`]); a kernel that overwrites a `wgmma`
//! operand before waiting for it, arrives on a barrier before its `wgmma`s
//! that read a stage completed, or omits a proxy fence, passes here and
//! fails on the GPU.
//!
//! # Where each part lives
//!
//! - running a launch: `exec` (threads, blocks, the shared state, the
//!   launch functions), `barrier` (barriers that notice divergence and
//!   deadlock), `ctx` ([`EmuCtx`], the [`ThreadCtx`](crate::ThreadCtx) of
//!   one thread), `wgmma`, `mbarrier`, `tma`;
//! - what every access through a view goes through: [`memory`] (the
//!   launch's and each thread's state, the bounds and alignment checks,
//!   the [`Report`]);
//! - the checker: [`checker`] (its findings), [`races`] (shared-memory
//!   races and unwritten reads, ordered by barriers and mbarrier phases);
//! - the counters: [`counters`] (per line: requests, sectors, wavefronts)
//!   and [`cost`] (what one request costs: sectors, banks, phases).

use crate::Dim3;
use std::string::String;
use std::vec::Vec;

mod barrier;
pub mod checker;
pub mod cost;
pub mod counters;
mod ctx;
mod exec;
mod fiber;
mod mbarrier;
pub mod memory;
pub mod races;
mod tma;
mod wgmma;
pub use checker::{Access, Finding, FindingKind};
pub use cost::{bank_ways, request_cost};
pub use counters::{Counters, LaneAccess, Op, SiteCounters, Tally};
pub use ctx::EmuCtx;
pub use exec::{
    MAX_CLUSTER, SyncMutPtr, SyncPtr, launch, launch_checked, launch_cluster, launch_cluster_checked, launch_scheduled,
    workers,
};
pub use fiber::Schedule;
pub use mbarrier::{MBARRIER_MAX, MBARRIER_TIMEOUT, MbarrierProblem};
pub use memory::{Report, Site};
pub use tma::{TmaMap, TmaSwizzle, round_tf32};
pub use wgmma::descriptor_address;

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

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmuError {
    /// The block has no threads or more than [`MAX_THREADS_PER_BLOCK`].
    InvalidBlock(Dim3),
    /// The grid has no blocks.
    EmptyGrid(Dim3),
    /// A cluster launch ([`launch_cluster`]) of `cluster` blocks: not 1 to
    /// [`MAX_CLUSTER`], not dividing the grid's `x`, or with blocks that are
    /// not whole warps.
    InvalidCluster { cluster: u32, grid: Dim3, block: Dim3 },
    /// Threads of one block met at different barriers (or some had returned).
    DivergentBarrier { block: Dim3 },
    /// A warp shuffle needs all 32 lanes and the warp had fewer.
    PartialWarpShuffle { block: Dim3, lanes: u32 },
    /// A `wgmma` needs all 128 threads of a warpgroup and it had fewer.
    PartialWarpgroup { block: Dim3, threads: u32 },
    /// The threads of a warpgroup issued one `wgmma` with different operands.
    DivergentWgmma { block: Dim3, warpgroup: u32 },
    /// A kernel thread panicked (an out-of-bounds index, say).
    Panicked { block: Dim3, thread: Dim3, message: String },
    /// An mbarrier operation at shared address `bar` that the hardware does
    /// not allow, or on no barrier.
    Mbarrier { block: Dim3, thread: Dim3, bar: u32, problem: MbarrierProblem },
    /// `thread` waits for the phase of parity `parity` of the mbarrier at
    /// `bar`, and no thread of the block can complete it: all are blocked,
    /// in waits or at barriers, or done with the block.
    MbarrierDeadlock { block: Dim3, thread: Dim3, bar: u32, parity: u32 },
    /// `thread`'s wait on the mbarrier at `bar` saw no arrival nor
    /// transaction for `seconds` ([`MBARRIER_TIMEOUT`]), with some thread
    /// still running (spinning, say).
    MbarrierTimeout { block: Dim3, thread: Dim3, bar: u32, parity: u32, seconds: u64 },
    /// `tma_load_2d` was given a tensor map that is not a valid [`TmaMap`]'s
    /// encoding (`problem` says why).
    InvalidTensorMap { block: Dim3, thread: Dim3, problem: &'static str },
    /// The checker found problems in the kernel's memory accesses
    /// ([`memory`]); [`launch_checked`] returns them instead.
    Checker(Vec<Finding>),
}

impl core::fmt::Display for EmuError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EmuError::InvalidBlock(b) => write!(f, "block {b:?} must have 1..={MAX_THREADS_PER_BLOCK} threads"),
            EmuError::EmptyGrid(g) => write!(f, "grid {g:?} has no blocks"),
            EmuError::InvalidCluster { cluster, grid, block } => write!(
                f,
                "clusters of {cluster} blocks: need 1..={MAX_CLUSTER} blocks dividing grid {grid:?}'s x, of whole warps (block {block:?})"
            ),
            EmuError::DivergentBarrier { block } => {
                write!(f, "block {block:?}: not every thread reached the same sync_threads")
            }
            EmuError::PartialWarpShuffle { block, lanes } => {
                write!(f, "block {block:?}: warp shuffle in a warp of {lanes} lanes (needs 32)")
            }
            EmuError::PartialWarpgroup { block, threads } => {
                write!(f, "block {block:?}: wgmma in a warpgroup of {threads} threads (needs {WARPGROUP_SIZE})")
            }
            EmuError::DivergentWgmma { block, warpgroup } => {
                write!(f, "block {block:?}: the threads of warpgroup {warpgroup} gave one wgmma different operands")
            }
            EmuError::Panicked { block, thread, message } => {
                write!(f, "block {block:?} thread {thread:?} panicked: {message}")
            }
            EmuError::Mbarrier { block, thread, bar, problem } => {
                write!(f, "block {block:?} thread {thread:?}: mbarrier at shared address {bar}: {problem}")
            }
            EmuError::MbarrierDeadlock { block, thread, bar, parity } => write!(
                f,
                "block {block:?} thread {thread:?} waits for the phase of parity {parity} of the mbarrier at \
                 shared address {bar}, which can never complete: every thread of the block is blocked"
            ),
            EmuError::MbarrierTimeout { block, thread, bar, parity, seconds } => write!(
                f,
                "block {block:?} thread {thread:?} waited {seconds} s for the phase of parity {parity} of the \
                 mbarrier at shared address {bar}, which made no progress"
            ),
            EmuError::InvalidTensorMap { block, thread, problem } => {
                write!(f, "block {block:?} thread {thread:?}: tma_load_2d on an invalid tensor map: {problem}")
            }
            EmuError::Checker(findings) => {
                write!(f, "the emulator's checker found {} problem(s):\n{}", findings.len(), checker::list(findings))
            }
        }
    }
}

impl std::error::Error for EmuError {}
