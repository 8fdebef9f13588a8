//! The state the threads of one cluster (of one block, without clusters)
//! share: the barriers of the block, of each warp's shuffles and of each
//! warpgroup's `wgmma`s, the shared memory, the memory checks
//! ([`super::memory`]), the mbarriers, and the first error. A worker
//! ([`super::exec`]) keeps one for all the clusters it runs.

use super::barrier::{Abandoned, Barrier, Unmet, Waypoint};
use super::error::EmuError;
use super::fiber::Fiber;
use super::global::GlobalChecks;
use super::mbarrier::Mbarriers;
use super::memory::Memory;
use super::types::{SHARED_POISON, WARP_SIZE, WARPGROUP_SIZE};
use crate::{Dim3, LaunchDims};
use std::boxed::Box;
use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::vec::Vec;

/// Values in flight during one warp shuffle.
pub(super) struct Warp {
    pub(super) lanes: u32,
    pub(super) slots: Mutex<[u32; WARP_SIZE as usize]>,
    pub(super) barrier: Barrier,
}

/// The operands each thread of a warpgroup gave its `wgmma`: the two
/// descriptors and the scale-d flag.
pub(super) struct Warpgroup {
    pub(super) threads: u32,
    pub(super) slots: Mutex<Vec<(u64, u64, u64)>>,
    /// Each thread's `A` fragment of a `wgmma` that reads `A` from
    /// registers, as its bits.
    pub(super) fragments: Mutex<Vec<[u32; 4]>>,
    pub(super) barrier: Barrier,
}

/// The state the threads of one cluster (one block, without clusters)
/// share, kept by a worker from one cluster to the next.
pub(super) struct Shared {
    pub(super) dims: LaunchDims,
    /// Blocks per cluster (1: no clusters), consecutive in `x`.
    pub(super) cluster: u32,
    /// Bytes between two blocks' regions of `smem`: the dynamic shared
    /// memory rounded up to 16.
    pub(super) cta_stride: usize,
    /// Every thread of the cluster (of the block, without clusters): the
    /// block's end, and `cluster_wait`.
    block_barrier: Barrier,
    /// One per block of a cluster (`sync_threads`); empty without clusters,
    /// where `block_barrier` serves.
    cta_barriers: Vec<Barrier>,
    pub(super) warps: Vec<Warp>,
    pub(super) warpgroups: Vec<Warpgroup>,
    /// The dynamic shared memory of this block (of each block of the
    /// cluster, one region after the other), in u128 words: 16-byte aligned.
    pub(super) smem: UnsafeCell<Vec<u128>>,
    pub(super) abort: AtomicBool,
    error: Mutex<Option<EmuError>>,
    pub(super) memory: Memory,
    pub(super) mbarriers: Mbarriers,
    /// The threads that are not blocked in a wait or at a barrier: when the
    /// last of them blocks, the launch is deadlocked.
    pub(super) running: AtomicU32,
    /// The most steps a thread may take in one block ([`super::STEP_LIMIT`]).
    pub(super) step_limit: u64,
}

impl Shared {
    /// The state of clusters of `cluster` blocks of the launch `dims`,
    /// counting or not, whose threads may take `step_limit` steps a block,
    /// with the launch's checks of global memory.
    pub(super) fn new(dims: LaunchDims, cluster: u32, counting: bool, step_limit: u64, global: GlobalChecks) -> Shared {
        let block_threads = dims.block.count() as u32;
        let threads = block_threads * cluster;
        let warps = (0..threads.div_ceil(WARP_SIZE))
            .map(|w| {
                let lanes = (threads - w * WARP_SIZE).min(WARP_SIZE);
                Warp { lanes, slots: Mutex::new([0; WARP_SIZE as usize]), barrier: Barrier::new(lanes) }
            })
            .collect();
        let warpgroups = (0..threads.div_ceil(WARPGROUP_SIZE))
            .map(|w| {
                let threads = (threads - w * WARPGROUP_SIZE).min(WARPGROUP_SIZE);
                Warpgroup {
                    threads,
                    slots: Mutex::new(std::vec![(0, 0, 0); threads as usize]),
                    fragments: Mutex::new(std::vec![[0; 4]; threads as usize]),
                    barrier: Barrier::new(threads),
                }
            })
            .collect();
        let words = (dims.shared_bytes as usize).div_ceil(16);
        let cta_stride = 16 * words;
        // The checks see the cluster's shared memory as one: the last block's
        // region ends at its shared_bytes.
        let shared_bytes = (cluster as usize - 1) * cta_stride + dims.shared_bytes as usize;
        Shared {
            dims,
            cluster,
            cta_stride,
            block_barrier: Barrier::new(threads),
            cta_barriers: if cluster > 1 {
                (0..cluster).map(|_| Barrier::new(block_threads)).collect()
            } else {
                Vec::new()
            },
            warps,
            warpgroups,
            smem: UnsafeCell::new(std::vec![u128::from_ne_bytes([SHARED_POISON; 16]); words * cluster as usize]),
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            memory: Memory::new(counting, dims.block, threads, shared_bytes as u32, global),
            mbarriers: Mbarriers::new(),
            running: AtomicU32::new(threads),
            step_limit,
        }
    }

    /// Threads of a cluster (of a block, without clusters).
    pub(super) fn threads(&self) -> u32 {
        self.dims.block.count() as u32 * self.cluster
    }

    /// The first failure of the cluster that ran, if it failed.
    pub(super) fn take_error(&self) -> Option<EmuError> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The shared memory of the whole cluster (of the block, without
    /// clusters): block `r`'s region starts `r * cta_stride` bytes in.
    pub(super) fn cluster_smem(&self) -> *mut u8 {
        // SAFETY: only the pointer is taken; the memory is written through
        // it by the cluster's fibers, one at a time, and poisoned between
        // clusters, when none is alive.
        unsafe { (*self.smem.get()).as_mut_ptr().cast() }
    }

    /// Where block `rank`'s region starts in the cluster's shared memory.
    pub(super) fn region(&self, rank: u32) -> u32 {
        rank * self.cta_stride as u32
    }

    pub(super) fn fail(&self, error: EmuError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(error);
        drop(slot);
        self.abort.store(true, Ordering::Release);
    }

    /// Fails the launch with `error` and unwinds this thread.
    pub(super) fn abandon(&self, error: EmuError) -> ! {
        self.fail(error);
        std::panic::resume_unwind(Box::new(Abandoned))
    }

    /// Waits at `barrier` (the block's, a warp's or a warpgroup's); when it
    /// can never complete, fails the launch: divergence, or a deadlock,
    /// which names a thread's mbarrier wait if there is one.
    pub(super) fn meet(&self, barrier: &Barrier, site: Waypoint, block: Dim3, fiber: &Fiber) {
        match barrier.wait(site, &self.abort, &self.running, fiber) {
            Ok(()) => {}
            Err(Unmet::Diverged) => self.abandon(EmuError::DivergentBarrier { block }),
            Err(Unmet::Deadlock) => self.abandon(
                self.mbarriers.deadlock(block, self.dims.block).unwrap_or(EmuError::DivergentBarrier { block }),
            ),
        }
    }

    /// Waits at the barrier of every thread of the cluster (of the block,
    /// without clusters).
    pub(super) fn sync(&self, site: Waypoint, block: Dim3, fiber: &Fiber) {
        self.meet(&self.block_barrier, site, block, fiber);
    }

    /// `sync_threads` of the block of rank `rank` in its cluster.
    pub(super) fn sync_block(&self, rank: u32, block: Dim3, fiber: &Fiber) {
        match self.cta_barriers.get(rank as usize) {
            Some(b) => self.meet(b, Waypoint::Kernel, block, fiber),
            None => self.sync(Waypoint::Kernel, block, fiber),
        }
    }
}
