//! The CPU emulator: runs kernel bodies on the host, each CUDA thread a
//! fiber (a stackful coroutine), so that every kernel is tested on machines
//! without a GPU.
//!
//! A launch shares the grid's blocks out among a few OS threads, one a
//! core; each runs a block's threads as fibers that take turns between
//! their synchronisation points ([`Schedule`]), so a launch runs the same
//! way every time. What the emulator keeps faithful:
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
//! - A launch with [`Options`] ([`launch_with`]) may register the global
//!   buffers that exist: an access outside all of them is refused and
//!   reported ([`FindingKind::OutsideAllocation`]), and the views' safe
//!   methods ([`crate::mem::Checked`]) touch nothing else. It may also keep
//!   a shadow of global memory across blocks, which reports two blocks
//!   touching one word, one writing ([`FindingKind::GlobalRace`]).
//!
//! Whatever a kernel body does through the emulator, the launch ends with
//! a report or an error: a thread that takes more than
//! [`STEP_LIMIT`] steps in one block (accesses and synchronisations: an
//! endless loop) fails it with [`EmuError::StepLimit`] at the line it
//! loops on, and a panicking thread is one [`EmuError::Panicked`], with
//! where it panicked, and no message printed per thread. What it cannot
//! stop: a loop that makes no access nor synchronisation, a recursion that
//! overflows a fiber's stack ([`EMU_STACK_BYTES`]), or memory the kernel
//! allocates itself.
//!
//! What it does not model: timing, caches, raw-pointer accesses (the kernels
//! not yet written with views are neither checked nor counted), or
//! blocks that wait for each other (a block runs to its end once started,
//! and blocks of different clusters may run at once on different OS
//! threads), so a kernel that relies on inter-block communication within
//! one launch is not caught; nor
//! asynchrony, beyond what the checker makes of it: bulk copies land at
//! issue, but the checker orders their writes only through their barrier's
//! phase, as the GPU does ([`races`]); a kernel that overwrites a `wgmma`
//! operand before waiting for it, arrives on a barrier before its `wgmma`s
//! that read a stage completed, or omits a proxy fence, passes here and
//! fails on the GPU.
//!
//! # Where each part lives
//!
//! One concern a file, each importing only the files listed before it:
//!
//! - plain types: `types` (sites, accesses, ops, lanes, the launch's
//!   limits), [`cost`] (what one request costs: sectors, banks, phases),
//!   `error` ([`EmuError`]), `panics` (the hook that makes a kernel's
//!   panic one error);
//! - what every access through a view goes through: [`checker`] (its
//!   findings), [`counters`] (per line: requests, sectors, wavefronts),
//!   [`races`] (shared-memory races and unwritten reads, ordered by
//!   barriers and mbarrier phases), `global` (the launch's buffers and its
//!   race shadow across blocks), each keeping its own state, and
//!   [`memory`], which composes them into the path of one access and the
//!   [`Report`];
//! - running a launch: `fiber` (the threads as coroutines, [`Schedule`]),
//!   `barrier` (barriers that notice divergence and deadlock), `mbarrier`,
//!   `block` (what a cluster's threads share), `tma` and `wgmma` (the
//!   bulk copies' maps and the tensor cores' sums), `ctx` ([`EmuCtx`], the
//!   [`ThreadCtx`](crate::ThreadCtx) of one thread), and `exec` (the
//!   launch functions and their workers).

mod barrier;
mod block;
pub mod checker;
pub mod cost;
pub mod counters;
mod ctx;
mod error;
mod exec;
mod fiber;
mod global;
mod mbarrier;
pub mod memory;
mod panics;
pub mod races;
mod tma;
mod types;
mod wgmma;
pub use checker::{Finding, FindingKind};
pub use cost::{bank_ways, request_cost};
pub use counters::{Counters, LaneAccess, Op, SiteCounters, Tally};
pub use ctx::EmuCtx;
pub use error::EmuError;
pub use exec::{
    Options, SyncMutPtr, SyncPtr, launch, launch_checked, launch_cluster, launch_cluster_checked, launch_scheduled,
    launch_with, workers,
};
pub use fiber::Schedule;
pub use mbarrier::MBARRIER_TIMEOUT;
pub use memory::Report;
pub use tma::{TmaMap, TmaSwizzle, round_tf32};
pub use types::{
    Access, EMU_STACK_BYTES, MAX_CLUSTER, MAX_THREADS_PER_BLOCK, MBARRIER_INITS, MBARRIER_MAX, MbarrierProblem,
    SHARED_POISON, STEP_LIMIT, Site, WARP_SIZE, WARPGROUP_SIZE,
};
pub use wgmma::descriptor_address;
