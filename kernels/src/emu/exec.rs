//! Execution: how a launch runs a kernel on the CPU.
//!
//! A launch spawns one OS thread per thread of a block, each with its own
//! [`EmuCtx`]; together they walk the grid's blocks in order, meeting at
//! the block's end, where thread 0 tallies the block's requests, resets
//! its mbarriers and poisons the shared memory for the next block. The
//! threads share one [`Shared`]: the block's barriers, the slots of warp
//! shuffles and `wgmma`s, the shared memory, the memory checks, and the
//! first error, which aborts the launch (every waiting thread unwinds).
//!
//! A launch with thread-block clusters ([`launch_cluster`]) runs the blocks
//! of one cluster at once: one OS thread per thread of every block of the
//! cluster, each block with its own shared memory (one region each, side by
//! side) and its own `sync_threads` barrier, and the cluster's barrier over
//! all of them. Inside the emulator a shared address is the cluster's: the
//! block's rank times the region's size, plus the address the kernel sees
//! (which, as on the GPU, is its own block's), so mbarriers, bulk copies and
//! the race checks tell the blocks' shared memories apart.
//!
//! Kernel bodies take raw pointers; [`SyncPtr`] and [`SyncMutPtr`] let a
//! launch closure share them with the threads.

use super::barrier::{Abandoned, Barrier, Unmet, Waypoint};
use super::mbarrier::Mbarriers;
use super::memory::{Memory, Report, ThreadMemory};
use super::{EMU_STACK_BYTES, EmuCtx, EmuError, MAX_THREADS_PER_BLOCK, SHARED_POISON, WARP_SIZE, WARPGROUP_SIZE};
use crate::{Dim3, LaunchDims};
use std::boxed::Box;
use std::cell::UnsafeCell;
use std::string::String;
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

/// The state all threads of one launch share.
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
}

// SAFETY: `smem` is only written through raw pointers by kernel code (whose
// correctness is what is being tested) and re-poisoned by thread 0 between two
// block barriers, when no other thread touches it.
unsafe impl Sync for Shared {}

impl Shared {
    pub(super) fn fail(&self, error: EmuError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(error);
        drop(slot);
        self.abort.store(true, Ordering::Release);
        self.block_barrier.wake_all();
        for b in &self.cta_barriers {
            b.wake_all();
        }
        for w in &self.warps {
            w.barrier.wake_all();
        }
        for w in &self.warpgroups {
            w.barrier.wake_all();
        }
        self.mbarriers.wake_all();
    }

    /// Fails the launch with `error` and unwinds this thread.
    pub(super) fn abandon(&self, error: EmuError) -> ! {
        self.fail(error);
        std::panic::resume_unwind(Box::new(Abandoned))
    }

    /// Waits at `barrier` (the block's, a warp's or a warpgroup's); when it
    /// can never complete, fails the launch: divergence, or a deadlock,
    /// which names a thread's mbarrier wait if there is one.
    pub(super) fn meet(&self, barrier: &Barrier, site: Waypoint, block: Dim3) {
        match barrier.wait(site, &self.abort, &self.running) {
            Ok(()) => {}
            Err(Unmet::Diverged) => self.abandon(EmuError::DivergentBarrier { block }),
            Err(Unmet::Deadlock) => self.abandon(
                self.mbarriers.deadlock(block, self.dims.block).unwrap_or(EmuError::DivergentBarrier { block }),
            ),
        }
    }

    /// Waits at the barrier of every thread of the cluster (of the block,
    /// without clusters).
    pub(super) fn sync(&self, site: Waypoint, block: Dim3) {
        self.meet(&self.block_barrier, site, block);
    }

    /// `sync_threads` of the block of rank `rank` in its cluster.
    pub(super) fn sync_block(&self, rank: u32, block: Dim3) {
        match self.cta_barriers.get(rank as usize) {
            Some(b) => self.meet(b, Waypoint::Kernel, block),
            None => self.sync(Waypoint::Kernel, block),
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        String::from(*s)
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("(non-string panic payload)")
    }
}

pub(super) fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let (x, y) = (d.x as u64, d.y as u64);
    Dim3::new((i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32)
}

/// Runs `kernel` for every thread of the launch `dims`, on the CPU, under
/// the checker ([`super::checker`]): its findings, if any, are
/// [`EmuError::Checker`].
///
/// `kernel` is called once per (block, thread) with that thread's context.
/// Blocks run one after another; a block's threads run concurrently.
///
/// Global memory is whatever the closure captures: kernel bodies take raw
/// pointers, so wrap them in [`SyncPtr`] / [`SyncMutPtr`] to share them.
pub fn launch<F>(dims: LaunchDims, kernel: F) -> Result<(), EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    launch_cluster(dims, 1, kernel)
}

/// [`launch`] in thread-block clusters of `cluster` blocks, consecutive in
/// `x` (as a launch with the cluster dimension `(cluster, 1, 1)`): the
/// blocks of a cluster run at once, each with its own shared memory, which
/// the others reach through [`crate::ThreadCtx::st_async_f32x2`]. The grid's
/// `x` must be a multiple of `cluster` (1 to [`MAX_CLUSTER`]), and each
/// block a whole number of warps ([`EmuError::InvalidCluster`]).
pub fn launch_cluster<F>(dims: LaunchDims, cluster: u32, kernel: F) -> Result<(), EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    let report = run(dims, cluster, false, kernel)?;
    if report.findings.is_empty() { Ok(()) } else { Err(EmuError::Checker(report.findings)) }
}

/// The most blocks a cluster may have: 16, the non-portable size Hopper
/// allows (8 is the portable one).
pub const MAX_CLUSTER: u32 = 16;

/// [`launch`], counting as well ([`super::counters`]): returns the memory
/// counters of every line that accesses memory through a view, and the
/// checker's findings, as values. Errors are those of [`launch`] but
/// [`EmuError::Checker`].
///
/// The sectors are counted at the buffers' real addresses: a caller that
/// wants the GPU's figures gives buffers aligned as `cuMemAlloc`'s (256
/// bytes), as the host's `*_checked` launchers do.
pub fn launch_checked<F>(dims: LaunchDims, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, 1, true, kernel)
}

/// [`launch_checked`] in clusters, as [`launch_cluster`].
pub fn launch_cluster_checked<F>(dims: LaunchDims, cluster: u32, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, cluster, true, kernel)
}

fn run<F>(dims: LaunchDims, cluster: u32, counting: bool, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    let block_threads = dims.block.count();
    if block_threads == 0 || block_threads > MAX_THREADS_PER_BLOCK {
        return Err(EmuError::InvalidBlock(dims.block));
    }
    if dims.grid.count() == 0 {
        return Err(EmuError::EmptyGrid(dims.grid));
    }
    if cluster == 0
        || cluster > MAX_CLUSTER
        || !dims.grid.x.is_multiple_of(cluster)
        || (cluster > 1 && !block_threads.is_multiple_of(WARP_SIZE as u64))
    {
        return Err(EmuError::InvalidCluster { cluster, grid: dims.grid, block: dims.block });
    }
    let block_threads = block_threads as u32;
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
    let shared = Shared {
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
        memory: Memory::new(counting, dims.block, threads, shared_bytes as u32),
        mbarriers: Mbarriers::new(),
        running: AtomicU32::new(threads),
    };
    std::thread::scope(|scope| {
        for linear in 0..threads {
            let shared = &shared;
            let kernel = &kernel;
            std::thread::Builder::new()
                .stack_size(EMU_STACK_BYTES)
                .spawn_scoped(scope, move || run_thread(shared, kernel, linear))
                .expect("the emulator could not spawn a thread");
        }
    });
    match shared.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(shared.memory.report()),
    }
}

fn run_thread<F: Fn(&EmuCtx<'_>) + Sync>(shared: &Shared, kernel: &F, linear: u32) {
    let block_threads = shared.dims.block.count();
    let (rank, thread) =
        ((linear as u64 / block_threads) as u32, unlinear(linear as u64 % block_threads, shared.dims.block));
    let local = ThreadMemory::default();
    let mut current = Dim3::new(0, 0, 0);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let cluster = shared.cluster as u64;
        for c in 0..shared.dims.grid.count() / cluster {
            let block = unlinear(c * cluster + rank as u64, shared.dims.grid);
            current = block;
            local.start_block();
            kernel(&EmuCtx { shared, local: &local, thread, linear, rank, block });
            shared.memory.end_block(linear, &local);
            // Everyone is done with this block's shared memory; thread 0
            // counts the block's requests and poisons the memory for the
            // next block while the others wait.
            shared.sync(Waypoint::BlockEnd, block);
            if linear == 0 {
                shared.memory.tally_block();
                shared.mbarriers.reset();
                // SAFETY: all other threads are parked at the next barrier.
                unsafe { (*shared.smem.get()).fill(u128::from_ne_bytes([SHARED_POISON; 16])) };
            }
            shared.sync(Waypoint::BlockEnd, block);
        }
    }));
    if let Err(payload) = outcome
        && !payload.is::<Abandoned>()
    {
        shared.fail(EmuError::Panicked { block: current, thread, message: panic_message(&*payload) });
    }
}

/// A `*const T` that may be shared with the emulator's threads.
///
/// Kernel bodies take raw pointers, which are neither `Send` nor `Sync`.
/// Capture this wrapper in the launch closure and call [`SyncPtr::get`].
#[derive(Clone, Copy, Debug)]
pub struct SyncPtr<T>(*const T);
// SAFETY: the pointer is only dereferenced by kernel code under the same
// rules as on the GPU (the kernel's own `# Safety` contract).
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    pub fn new(slice: &[T]) -> Self {
        SyncPtr(slice.as_ptr())
    }
    pub fn get(self) -> *const T {
        self.0
    }
}

/// A `*mut T` that may be shared with the emulator's threads; see [`SyncPtr`].
#[derive(Clone, Copy, Debug)]
pub struct SyncMutPtr<T>(*mut T);
// SAFETY: as for SyncPtr; concurrent writes must go to disjoint elements, as
// on the GPU.
unsafe impl<T> Send for SyncMutPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncMutPtr<T> {}
impl<T> SyncMutPtr<T> {
    pub fn new(slice: &mut [T]) -> Self {
        SyncMutPtr(slice.as_mut_ptr())
    }
    pub fn get(self) -> *mut T {
        self.0
    }
}
