//! Execution: how a launch runs a kernel on the CPU.
//!
//! The grid's blocks (its clusters, with thread-block clusters) are shared
//! out among a few OS threads, the launch's workers ([`workers`]): each
//! takes the next cluster in the launch's order and runs its threads as
//! fibers ([`super::fiber`]), one per CUDA thread, each with its own
//! [`EmuCtx`]. A worker keeps one [`Shared`] for all its clusters: the
//! block's barriers, the slots of warp shuffles and `wgmma`s, the shared
//! memory, the memory checks, and the first error, which aborts the
//! cluster (every waiting thread unwinds). When a cluster's threads have
//! all returned, the worker tallies its requests, resets its mbarriers and
//! poisons the shared memory for the next one.
//!
//! What a launch reports does not depend on which worker ran which
//! cluster, nor on how many workers there were, nor on the order of the
//! clusters: each worker's findings and counters carry the index of the
//! cluster they first came from, and the launch merges them keeping the
//! lowest ([`super::memory::Partial`]), so a line's sample and a finding's
//! block are those of the grid's first cluster that has them. Of several
//! failing clusters, the error is the first one's in the launch's order: a
//! worker skips the clusters after a failure, and runs those before it.
//!
//! A launch with thread-block clusters ([`launch_cluster`]) runs the blocks
//! of one cluster at once: the fibers of every block of the cluster, each
//! block with its own shared memory (one region each, side by side) and
//! its own `sync_threads` barrier, and the cluster's barrier over all of
//! them. Inside the emulator a shared address is the cluster's: the
//! block's rank times the region's size, plus the address the kernel sees
//! (which, as on the GPU, is its own block's), so mbarriers, bulk copies and
//! the race checks tell the blocks' shared memories apart.
//!
//! Kernel bodies take raw pointers; [`SyncPtr`] and [`SyncMutPtr`] let a
//! launch closure share them with the workers.
//!
//! Whatever the kernel does, a launch ends: each thread may take
//! [`Options::step_limit`] steps a block (accesses and synchronisations,
//! [`super::STEP_LIMIT`]), past which the launch fails
//! ([`EmuError::StepLimit`]); a panic is one error, its message printed by
//! nobody ([`super::panics`]); with [`Options::allocations`] no access
//! through a view leaves the buffers that exist.

use super::barrier::{Abandoned, Waypoint};
use super::block::Shared;
use super::ctx::EmuCtx;
use super::error::EmuError;
use super::fiber::{self, Fiber, Mix, Schedule, Stacks};
use super::global::{Allocations, GlobalChecks, GlobalRaces};
use super::memory::{Partial, Report, ThreadMemory};
use super::panics;
use super::types::unlinear;
use super::types::{MAX_CLUSTER, MAX_THREADS_PER_BLOCK, SHARED_POISON, STEP_LIMIT, WARP_SIZE};
use crate::LaunchDims;
use core::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;

/// How a launch runs and what it checks beyond the checker's defaults
/// ([`launch_with`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The order of the blocks, and of each block's threads between their
    /// synchronisation points.
    pub schedule: Schedule,
    /// The address ranges (`start..end`, in bytes) of the global buffers
    /// that really exist for the launch. When there are any, every global
    /// access through a view (load, store, `raise_flag`, either side of a
    /// `cp.async` or a bulk copy) whose bytes are not all inside one range
    /// is refused and reported ([`super::FindingKind::OutsideAllocation`]);
    /// when there are none, an `unsafe` view's accesses are checked
    /// against the view alone, and a safe one's ([`crate::mem::Checked`])
    /// are all refused.
    ///
    /// Safe accesses trust these ranges, so only [`Options::register`]
    /// (`unsafe`) adds one; [`Options::allocations`] reads them.
    allocations: Vec<Range<usize>>,
    /// The most steps (accesses through views and synchronisations) one
    /// thread may take in one block before the launch fails with
    /// [`EmuError::StepLimit`].
    pub step_limit: u64,
    /// Whether the launch keeps a shadow of global memory across blocks
    /// and reports two blocks' accesses to one word, one a write, as a
    /// [`super::FindingKind::GlobalRace`] (a lock and a lookup per global
    /// access: for small launches).
    pub global_races: bool,
}

impl Options {
    /// These options, with `schedule`.
    pub fn with_schedule(self, schedule: Schedule) -> Options {
        Options { schedule, ..self }
    }

    /// These options, with a step limit of `step_limit`.
    pub fn with_step_limit(self, step_limit: u64) -> Options {
        Options { step_limit, ..self }
    }

    /// These options, with the cross-block race shadow on or off.
    pub fn with_global_races(self, global_races: bool) -> Options {
        Options { global_races, ..self }
    }

    /// Registers `range` (`start..end`, in bytes) as a global buffer that
    /// really exists for the launch: see [`Options::allocations`].
    ///
    /// # Safety
    /// Safe accesses ([`crate::mem::Checked`]) trust the range: it must be
    /// memory that the launch may read and write for its whole length, for
    /// as long as it runs (no reference to it alive elsewhere), and whose
    /// pointer's provenance was exposed when it became an address
    /// (`ptr as usize`, or `pointer::expose_provenance`).
    pub unsafe fn register(&mut self, range: Range<usize>) {
        self.allocations.push(range);
    }

    /// The address ranges (`start..end`, in bytes) of the global buffers
    /// that really exist for the launch. When there are any, every global
    /// access through a view (load, store, `raise_flag`, either side of a
    /// `cp.async` or a bulk copy) whose bytes are not all inside one range
    /// is refused and reported ([`super::FindingKind::OutsideAllocation`]);
    /// when there are none, an `unsafe` view's accesses are checked
    /// against the view alone, and a safe one's ([`crate::mem::Checked`])
    /// are all refused.
    pub fn allocations(&self) -> &[Range<usize>] {
        &self.allocations
    }
}

impl Default for Options {
    /// [`Schedule::from_env`], no allocations, [`STEP_LIMIT`], no global
    /// race shadow: what [`launch`] and the others run with.
    fn default() -> Options {
        Options { schedule: Schedule::from_env(), allocations: Vec::new(), step_limit: STEP_LIMIT, global_races: false }
    }
}

/// Runs `kernel` for every thread of the launch `dims`, on the CPU, under
/// the checker ([`super::checker`]): its findings, if any, are
/// [`EmuError::Checker`].
///
/// `kernel` is called once per (block, thread) with that thread's context.
/// Blocks run on a few OS threads at once, and a block's threads take turns
/// between their synchronisation points, in the order of
/// [`Schedule::from_env`] ([`launch_scheduled`] names one).
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
    let report = run(dims, cluster, false, &Options::default(), kernel)?;
    if report.findings.is_empty() { Ok(()) } else { Err(EmuError::Checker(report.findings)) }
}

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
    run(dims, 1, true, &Options::default(), kernel)
}

/// [`launch_checked`] in clusters, as [`launch_cluster`].
pub fn launch_cluster_checked<F>(dims: LaunchDims, cluster: u32, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, cluster, true, &Options::default(), kernel)
}

/// [`launch_cluster_checked`] in the order `schedule` gives: another seed
/// runs the blocks, and the threads between their synchronisation points,
/// in another order, and so shows what depends on that order (a race
/// between blocks, say).
pub fn launch_scheduled<F>(dims: LaunchDims, cluster: u32, schedule: Schedule, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, cluster, true, &Options { schedule, ..Options::default() }, kernel)
}

/// [`launch_cluster_checked`] with `options`: the schedule, the buffers
/// that exist, the step limit and the cross-block race shadow
/// ([`Options`]). Counts, and returns the findings in the [`Report`]
/// (`cluster` 1: no clusters).
pub fn launch_with<F>(dims: LaunchDims, cluster: u32, options: &Options, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, cluster, true, options, kernel)
}

/// How many OS threads a launch of `clusters` clusters runs on: one a core
/// ([`std::thread::available_parallelism`]), or the number in the
/// environment variable `COALESCE_EMU_WORKERS`; never more than there are
/// clusters.
pub fn workers(clusters: u64) -> usize {
    static WORKERS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let n = *WORKERS.get_or_init(|| {
        std::env::var("COALESCE_EMU_WORKERS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    });
    n.min(clusters.try_into().unwrap_or(usize::MAX)).max(1)
}

/// The launch's state that its workers share: the order of the clusters,
/// the next one to take, and the first failure.
struct Plan {
    /// Cluster indices in the order they run; empty for the grid's order.
    order: Vec<u64>,
    clusters: u64,
    next: AtomicU64,
    /// The position of the earliest failing cluster (`u64::MAX`: none), and
    /// its error.
    failed: AtomicU64,
    error: Mutex<Option<(u64, EmuError)>>,
}

impl Plan {
    fn cluster_at(&self, position: u64) -> u64 {
        if self.order.is_empty() { position } else { self.order[position as usize] }
    }

    fn fail(&self, position: u64, error: EmuError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|(p, _)| position < *p) {
            *slot = Some((position, error));
            self.failed.store(position, Ordering::SeqCst);
        }
    }
}

fn run<F>(dims: LaunchDims, cluster: u32, counting: bool, options: &Options, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    panics::install_hook();
    let schedule = options.schedule;
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
    let clusters = dims.grid.count() / cluster as u64;
    let order = match schedule {
        Schedule::InOrder => Vec::new(),
        Schedule::Seeded(seed) => {
            let mut order: Vec<u64> = (0..clusters).collect();
            Mix::new(seed).shuffle(&mut order);
            order
        }
    };
    let plan =
        Plan { order, clusters, next: AtomicU64::new(0), failed: AtomicU64::new(u64::MAX), error: Mutex::new(None) };
    let global = GlobalChecks {
        allocations: Allocations::new(&options.allocations),
        races: options.global_races.then(|| Arc::new(GlobalRaces::new(cluster))),
        grid: dims.grid,
    };
    let setup = Setup { dims, cluster, counting, schedule, step_limit: options.step_limit, global };
    let work = || worker(&plan, &setup, &kernel);
    let workers = workers(clusters);
    let parts: Vec<Partial> = if workers == 1 {
        std::vec![work()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, work)
                        .expect("the emulator could not start a worker thread")
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        })
    };
    match plan.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(Partial::merge(parts)),
    }
}

/// What each worker of a launch starts from.
struct Setup {
    dims: LaunchDims,
    cluster: u32,
    counting: bool,
    schedule: Schedule,
    step_limit: u64,
    global: GlobalChecks,
}

/// One worker: takes clusters in the launch's order until none is left
/// (or only ones after a failure), runs each, and returns what its
/// clusters found and counted.
fn worker<F>(plan: &Plan, setup: &Setup, kernel: &F) -> Partial
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    let &Setup { dims, cluster, counting, schedule, step_limit, .. } = setup;
    let shared = Shared::new(dims, cluster, counting, step_limit, setup.global.clone());
    let threads = shared.threads();
    let locals: Vec<ThreadMemory> = (0..threads).map(|_| ThreadMemory::new()).collect();
    let mut stacks = Stacks::new();
    loop {
        let position = plan.next.fetch_add(1, Ordering::Relaxed);
        if position >= plan.clusters || position > plan.failed.load(Ordering::SeqCst) {
            break;
        }
        let c = plan.cluster_at(position);
        // Each cluster's interleaving comes from the seed and the cluster,
        // so that it does not depend on which worker runs it.
        let mut mix = match schedule {
            Schedule::InOrder => None,
            Schedule::Seeded(seed) => Some(Mix::new(seed ^ c.wrapping_mul(0x2545_f491_4f6c_dd1d))),
        };
        shared.memory.set_cluster(c);
        let body = |linear: u32, fiber: &Fiber, limit: usize| {
            locals[linear as usize].stack_limit.set(limit);
            run_thread(&shared, kernel, &locals[linear as usize], c, linear, fiber)
        };
        // The kernel's panics are reported as the launch's error, not
        // printed thread by thread.
        panics::in_fibers(|| fiber::run(&mut stacks, threads, mix.as_mut(), &body));
        if let Some(e) = shared.take_error() {
            plan.fail(position, e);
            break;
        }
        // Every thread is done with this cluster's shared memory: count the
        // cluster's requests, forget its mbarriers, poison the memory.
        for (linear, local) in locals.iter().enumerate() {
            shared.memory.end_block(linear as u32, local);
        }
        shared.memory.tally_block();
        shared.mbarriers.reset();
        // SAFETY: no fiber of this worker is alive.
        unsafe { (*shared.smem.get()).fill(u128::from_ne_bytes([SHARED_POISON; 16])) };
    }
    shared.memory.partial()
}

/// The thread of linear index `linear` in cluster `c`: its block of the
/// cluster, then its part of the kernel, then the block's end, where every
/// thread of the cluster meets (so that one that returned early while
/// others wait at a `sync_threads` is a divergence).
fn run_thread<F: Fn(&EmuCtx<'_>) + Sync>(
    shared: &Shared, kernel: &F, local: &ThreadMemory, c: u64, linear: u32, fiber: &Fiber,
) {
    if shared.abort.load(Ordering::Acquire) {
        return;
    }
    let block_threads = shared.dims.block.count();
    let (rank, thread) =
        ((linear as u64 / block_threads) as u32, unlinear(linear as u64 % block_threads, shared.dims.block));
    let block = unlinear(c * shared.cluster as u64 + rank as u64, shared.dims.grid);
    local.steps.set(0);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        local.clock.start_block();
        kernel(&EmuCtx { shared, local, thread, linear, rank, block, fiber });
        shared.sync(Waypoint::BlockEnd, block, fiber);
    }));
    if let Err(payload) = outcome
        && !payload.is::<Abandoned>()
    {
        let (message, site) = (panics::message(&*payload), panics::take_site());
        shared.fail(EmuError::Panicked { block, thread, message, site });
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
