//! Why an emulated launch failed ([`EmuError`]), as a value and as a message.

use super::checker::{self, Finding};
use super::types::{MAX_CLUSTER, MAX_THREADS_PER_BLOCK, MbarrierProblem, Site, WARPGROUP_SIZE};
use crate::Dim3;
use std::string::String;
use std::vec::Vec;

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmuError {
    /// The block has no threads or more than [`MAX_THREADS_PER_BLOCK`].
    InvalidBlock(Dim3),
    /// The grid has no blocks.
    EmptyGrid(Dim3),
    /// A cluster launch ([`super::launch_cluster`]) of `cluster` blocks: not 1 to
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
    /// A kernel thread panicked (an out-of-bounds index, say), at `site`
    /// (the `file:line:column` of the panic, when the panic said where).
    /// Only the launch's first panic is reported, and the emulator keeps
    /// the default panic message of its threads off stderr: this error is
    /// the one report.
    Panicked { block: Dim3, thread: Dim3, message: String, site: Option<Site> },
    /// `thread` took more than the launch's step limit
    /// ([`super::STEP_LIMIT`] unless [`super::Options::step_limit`] says
    /// otherwise) of accesses and synchronisations in one block: an
    /// endless loop, most likely. `site` is the access or synchronisation
    /// where it crossed the limit (the line the thread loops on), `steps`
    /// the steps it had taken then: the limit plus one.
    StepLimit { block: Dim3, thread: Dim3, site: Site, steps: u64 },
    /// `thread` had nearly used up its stack ([`super::EMU_STACK_BYTES`])
    /// at `site`: a function that calls itself without end, most likely.
    /// Found at a step (an access or a synchronisation): a recursion that
    /// makes none still overflows the stack, and ends the process.
    StackOverflow { block: Dim3, thread: Dim3, site: Site },
    /// An mbarrier operation at shared address `bar` that the hardware does
    /// not allow, or on no barrier.
    Mbarrier { block: Dim3, thread: Dim3, bar: u32, problem: MbarrierProblem },
    /// `thread` waits for the phase of parity `parity` of the mbarrier at
    /// `bar`, and no thread of the block can complete it: all are blocked,
    /// in waits or at barriers, or done with the block.
    MbarrierDeadlock { block: Dim3, thread: Dim3, bar: u32, parity: u32 },
    /// `thread`'s wait on the mbarrier at `bar` saw no arrival nor
    /// transaction for `seconds` ([`super::MBARRIER_TIMEOUT`]), with some
    /// thread of the block still running (looping through shuffles, say).
    MbarrierTimeout { block: Dim3, thread: Dim3, bar: u32, parity: u32, seconds: u64 },
    /// `tma_load_2d` was given a tensor map that is not a valid [`super::TmaMap`]'s
    /// encoding (`problem` says why).
    InvalidTensorMap { block: Dim3, thread: Dim3, problem: &'static str },
    /// The checker found problems in the kernel's memory accesses
    /// ([`super::memory`]); [`super::launch_checked`] returns them instead.
    Checker(Vec<Finding>),
}

impl core::fmt::Display for EmuError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EmuError::InvalidBlock(b) => write!(f, "block {b} must have 1..={MAX_THREADS_PER_BLOCK} threads"),
            EmuError::EmptyGrid(g) => write!(f, "grid {g} has no blocks"),
            EmuError::InvalidCluster { cluster, grid, block } => write!(
                f,
                "clusters of {cluster} blocks: need 1..={MAX_CLUSTER} blocks dividing grid {grid}'s x, of whole warps (block {block})"
            ),
            EmuError::DivergentBarrier { block } => {
                write!(f, "block {block}: not every thread reached the same sync_threads")
            }
            EmuError::PartialWarpShuffle { block, lanes } => {
                write!(f, "block {block}: warp shuffle in a warp of {lanes} lanes (needs 32)")
            }
            EmuError::PartialWarpgroup { block, threads } => {
                write!(f, "block {block}: wgmma in a warpgroup of {threads} threads (needs {WARPGROUP_SIZE})")
            }
            EmuError::DivergentWgmma { block, warpgroup } => {
                write!(f, "block {block}: the threads of warpgroup {warpgroup} gave one wgmma different operands")
            }
            EmuError::Panicked { block, thread, message, site } => match site {
                Some(site) => write!(f, "block {block} thread {thread} panicked at {site}: {message}"),
                None => write!(f, "block {block} thread {thread} panicked: {message}"),
            },
            EmuError::StepLimit { block, thread, site, steps } => write!(
                f,
                "block {block} thread {thread} took {steps} steps (accesses and synchronisations) in one block, \
                 past the launch's limit of {}, at {site}: an endless loop?",
                steps.saturating_sub(1)
            ),
            EmuError::StackOverflow { block, thread, site } => write!(
                f,
                "block {block} thread {thread} had used up its stack at {site}: a function that calls itself \
                 without end?"
            ),
            EmuError::Mbarrier { block, thread, bar, problem } => {
                write!(f, "block {block} thread {thread}: mbarrier at shared address {bar}: {problem}")
            }
            EmuError::MbarrierDeadlock { block, thread, bar, parity } => write!(
                f,
                "block {block} thread {thread} waits for the phase of parity {parity} of the mbarrier at \
                 shared address {bar}, which can never complete: every thread of the block is blocked"
            ),
            EmuError::MbarrierTimeout { block, thread, bar, parity, seconds } => write!(
                f,
                "block {block} thread {thread} waited {seconds} s for the phase of parity {parity} of the \
                 mbarrier at shared address {bar}, which made no progress"
            ),
            EmuError::InvalidTensorMap { block, thread, problem } => {
                write!(f, "block {block} thread {thread}: tma_load_2d on an invalid tensor map: {problem}")
            }
            EmuError::Checker(findings) => {
                write!(f, "the emulator's checker found {} problem(s):\n{}", findings.len(), checker::list(findings))
            }
        }
    }
}

impl std::error::Error for EmuError {}
