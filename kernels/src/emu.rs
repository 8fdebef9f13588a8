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
//!   ([`memory`] says how, mbarriers and bulk copies included). [`launch`] returns the findings as
//!   [`EmuError::Checker`]; [`launch_checked`] returns them in a [`Report`],
//!   with the memory counters: 32-byte sectors per global request and
//!   wavefronts per shared request (bank conflicts), per source line.
//!
//! What it does not model: timing, caches, raw-pointer accesses (the kernels
//! not yet written with views are neither checked nor counted), or
//! blocks running concurrently (they run one after another), so a kernel that
//! relies on inter-block communication within one launch is not caught; nor
//! asynchrony, beyond what the checker makes of it: bulk copies land at
//! issue, but the checker orders their writes only through their barrier's
//! phase, as the GPU does ([`memory`]); a kernel that overwrites a `wgmma`
//! operand before waiting for it, arrives on a barrier before its `wgmma`s
//! that read a stage completed, or omits a proxy fence, passes here and
//! fails on the GPU.

use crate::mem::Space;
use crate::{Dim3, LaunchDims, ThreadCtx};
use core::panic::Location;
use std::boxed::Box;
use std::cell::UnsafeCell;
use std::string::String;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::vec::Vec;

mod mbarrier;
pub mod memory;
mod tma;
use mbarrier::{Caller, Mbarriers, Stuck};
pub use mbarrier::{MBARRIER_MAX, MBARRIER_TIMEOUT, MbarrierProblem};
pub use memory::{
    Access, Counters, Finding, FindingKind, LaneAccess, Op, Report, Site, SiteCounters, Tally, bank_ways, request_cost,
};
use memory::{Memory, Request, ThreadMemory};
pub use tma::{TmaMap, TmaSwizzle};

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
                write!(f, "the emulator's checker found {} problem(s):\n{}", findings.len(), memory::list(findings))
            }
        }
    }
}

impl std::error::Error for EmuError {}

/// Where a thread is when it waits: inside the kernel or at the block's end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Waypoint {
    Kernel,
    BlockEnd,
}

/// A reusable barrier that notices divergence and aborts instead of hanging.
struct Barrier {
    parties: u32,
    state: Mutex<BarrierState>,
    cv: Condvar,
}

struct BarrierState {
    arrived: u32,
    generation: u64,
    site: Option<Waypoint>,
    diverged: bool,
}

/// Unwinds a waiting thread when the launch is abandoned.
struct Abandoned;

/// Why a barrier did not complete.
enum Unmet {
    /// Its arrivals disagreed on the site (the last arrival is told).
    Diverged,
    /// Every thread of the launch is blocked, so it never will (the thread
    /// whose blocking made it so is told).
    Deadlock,
}

impl Barrier {
    fn new(parties: u32) -> Self {
        Barrier {
            parties,
            state: Mutex::new(BarrierState { arrived: 0, generation: 0, site: None, diverged: false }),
            cv: Condvar::new(),
        }
    }

    /// Waits for all parties. Returns `Err` to the last arrival if arrivals
    /// disagreed on the site, and to an arrival that finds every thread of
    /// the launch blocked (`running`, the threads that are not, drops to
    /// zero); every other thread then unwinds with [`Abandoned`], as it
    /// does whenever `abort` is raised. The last arrival counts the others
    /// as running again before it wakes them.
    fn wait(&self, site: Waypoint, abort: &AtomicBool, running: &AtomicU32) -> Result<(), Unmet> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if abort.load(Ordering::Acquire) {
            drop(s);
            std::panic::resume_unwind(Box::new(Abandoned));
        }
        if s.site.is_some_and(|first| first != site) {
            s.diverged = true;
        }
        s.site.get_or_insert(site);
        s.arrived += 1;
        if s.arrived == self.parties {
            let diverged = s.diverged;
            s.arrived = 0;
            s.site = None;
            s.diverged = false;
            s.generation += 1;
            running.fetch_add(self.parties - 1, Ordering::SeqCst);
            if diverged {
                abort.store(true, Ordering::Release);
            }
            self.cv.notify_all();
            return if diverged { Err(Unmet::Diverged) } else { Ok(()) };
        }
        if running.fetch_sub(1, Ordering::SeqCst) == 1 {
            return Err(Unmet::Deadlock);
        }
        let generation = s.generation;
        loop {
            if abort.load(Ordering::Acquire) {
                drop(s);
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            if s.generation != generation {
                return Ok(());
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn wake_all(&self) {
        let _guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
}

/// Values in flight during one warp shuffle.
struct Warp {
    lanes: u32,
    slots: Mutex<[u32; WARP_SIZE as usize]>,
    barrier: Barrier,
}

/// The operands each thread of a warpgroup gave its `wgmma`: the two
/// descriptors and the scale-d flag.
struct Warpgroup {
    threads: u32,
    slots: Mutex<Vec<(u64, u64, u64)>>,
    barrier: Barrier,
}

/// The state all threads of one launch share.
struct Shared {
    dims: LaunchDims,
    block_barrier: Barrier,
    warps: Vec<Warp>,
    warpgroups: Vec<Warpgroup>,
    /// This block's dynamic shared memory (u128 words: 16-byte aligned).
    smem: UnsafeCell<Vec<u128>>,
    abort: AtomicBool,
    error: Mutex<Option<EmuError>>,
    memory: Memory,
    mbarriers: Mbarriers,
    /// The threads that are not blocked in a wait or at a barrier: when the
    /// last of them blocks, the launch is deadlocked.
    running: AtomicU32,
}

// SAFETY: `smem` is only written through raw pointers by kernel code (whose
// correctness is what is being tested) and re-poisoned by thread 0 between two
// block barriers, when no other thread touches it.
unsafe impl Sync for Shared {}

impl Shared {
    fn fail(&self, error: EmuError) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(error);
        drop(slot);
        self.abort.store(true, Ordering::Release);
        self.block_barrier.wake_all();
        for w in &self.warps {
            w.barrier.wake_all();
        }
        for w in &self.warpgroups {
            w.barrier.wake_all();
        }
        self.mbarriers.wake_all();
    }

    /// Fails the launch with `error` and unwinds this thread.
    fn abandon(&self, error: EmuError) -> ! {
        self.fail(error);
        std::panic::resume_unwind(Box::new(Abandoned))
    }

    /// Waits at `barrier` (the block's, a warp's or a warpgroup's); when it
    /// can never complete, fails the launch: divergence, or a deadlock,
    /// which names a thread's mbarrier wait if there is one.
    fn meet(&self, barrier: &Barrier, site: Waypoint, block: Dim3) {
        match barrier.wait(site, &self.abort, &self.running) {
            Ok(()) => {}
            Err(Unmet::Diverged) => self.abandon(EmuError::DivergentBarrier { block }),
            Err(Unmet::Deadlock) => self.abandon(
                self.mbarriers.deadlock(block, self.dims.block).unwrap_or(EmuError::DivergentBarrier { block }),
            ),
        }
    }

    fn sync(&self, site: Waypoint, block: Dim3) {
        self.meet(&self.block_barrier, site, block);
    }
}

/// The [`ThreadCtx`] of one emulated thread.
pub struct EmuCtx<'a> {
    shared: &'a Shared,
    local: &'a ThreadMemory,
    thread: Dim3,
    linear: u32,
    block: Dim3,
}

impl ThreadCtx for EmuCtx<'_> {
    fn thread_idx(&self) -> Dim3 {
        self.thread
    }
    fn block_idx(&self) -> Dim3 {
        self.block
    }
    fn block_dim(&self) -> Dim3 {
        self.shared.dims.block
    }
    fn grid_dim(&self) -> Dim3 {
        self.shared.dims.grid
    }
    fn sync_threads(&self) {
        self.shared.memory.before_sync(self.local);
        self.shared.sync(Waypoint::Kernel, self.block);
        self.local.barrier();
        self.shared.memory.after_sync(self.local);
    }
    fn shared_mem<T>(&self) -> *mut T {
        // SAFETY: only the pointer is taken; see `Shared`'s Sync note.
        unsafe { (*self.shared.smem.get()).as_mut_ptr().cast() }
    }
    #[track_caller]
    unsafe fn mem_load<T, U: Copy + Default>(&self, space: Space, base: *const T, len: usize, i: usize) -> U {
        // SAFETY: forwarded from the caller.
        unsafe { self.read(Location::caller(), space, (base, len, i), false) }
    }
    #[track_caller]
    unsafe fn mem_store<T, U: Copy>(&self, space: Space, base: *mut T, len: usize, i: usize, value: U) {
        // SAFETY: forwarded from the caller.
        unsafe { self.write(Location::caller(), space, (base, len, i), value, false) }
    }
    #[track_caller]
    unsafe fn mem_raise_flag(&self, base: *mut u32, len: usize, i: usize) {
        let (loc, at) = (Location::caller(), (4, len, i));
        if let Some(addr) = self.request().access(loc, Space::Global, true, base.addr(), at, (4, 4), false) {
            let word = base.with_addr(addr);
            if addr.is_multiple_of(4) {
                // SAFETY: inside the caller's view (checked), aligned: an
                // atomic, since other emulated threads raise the same word
                // at the same time.
                unsafe { AtomicU32::from_ptr(word).store(1, Ordering::Relaxed) }
            } else {
                // SAFETY: inside the view; misaligned, which the checker has
                // reported (as the GPU would refuse it).
                unsafe { word.write_unaligned(1) }
            }
        }
    }
    #[track_caller]
    unsafe fn mem_copy_async<T, U: Copy + Default>(
        &self,
        (dst, dst_len, i): (*mut T, usize, usize),
        (src, src_len, j): (*const T, usize, usize),
    ) {
        let loc = Location::caller();
        // SAFETY: forwarded from the caller.
        unsafe {
            let v: U = self.read(loc, Space::Global, (src, src_len, j), true);
            self.write(loc, Space::Shared, (dst, dst_len, i), v, true)
        }
    }
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32 {
        let warp = &self.shared.warps[(self.linear / WARP_SIZE) as usize];
        if warp.lanes != WARP_SIZE {
            self.shared.fail(EmuError::PartialWarpShuffle { block: self.block, lanes: warp.lanes });
            std::panic::resume_unwind(Box::new(Abandoned));
        }
        let lane = (self.linear % WARP_SIZE) as usize;
        warp.slots.lock().unwrap_or_else(|e| e.into_inner())[lane] = value.to_bits();
        self.warp_sync(warp);
        let got = warp.slots.lock().unwrap_or_else(|e| e.into_inner())[lane ^ (lane_mask as usize & 31)];
        self.warp_sync(warp); // nobody overwrites a slot before all have read
        f32::from_bits(got)
    }
    unsafe fn copy_async_16(&self, dst: *mut f32, src: *const f32) {
        assert!(dst.addr().is_multiple_of(16) && src.addr().is_multiple_of(16), "copy_async_16: unaligned address");
        // SAFETY: the caller's contract. Copied at once: a correct kernel
        // reads it only after wait_async_copies, which this satisfies.
        unsafe { core::ptr::copy_nonoverlapping(src, dst, 4) }
    }
    fn wait_async_copies(&self) {}
    fn shared_addr<T>(&self, p: *const T) -> u32 {
        let base = self.shared_mem::<u8>().addr();
        let bytes = self.shared.dims.shared_bytes as usize;
        let off = p.addr().wrapping_sub(base);
        assert!(off <= bytes, "shared_addr: pointer outside the block's shared memory");
        off as u32
    }
    fn fence_proxy_async(&self) {}
    fn wgmma_fence(&self) {}
    fn wgmma_commit(&self) {}
    fn wgmma_wait<const N: u32>(&self, _d: &mut [f32; 128]) {}
    #[track_caller]
    unsafe fn wgmma_m64n256k8_tf32(&self, d: &mut [f32; 128], a: u64, b: u64) {
        self.wgmma_tf32(d, a, b, true);
    }
    fn mbarrier_init(&self, bar: u32, count: u32) {
        self.mbarrier_result(self.shared.mbarriers.init(&self.caller(), bar, count));
    }
    fn mbarrier_init_fence(&self) {}
    fn mbarrier_arrive(&self, bar: u32) {
        self.mbarrier_result(self.shared.mbarriers.arrive(&self.caller(), bar, 0));
    }
    fn mbarrier_arrive_expect_tx(&self, bar: u32, bytes: u32) {
        self.mbarrier_result(self.shared.mbarriers.arrive(&self.caller(), bar, bytes));
    }
    fn mbarrier_wait(&self, bar: u32, parity: u32) {
        match self.shared.mbarriers.wait(&self.caller(), bar, parity) {
            Ok(()) => {}
            Err(Stuck::Abandoned) => std::panic::resume_unwind(Box::new(Abandoned)),
            Err(Stuck::Failed(e)) => self.shared.abandon(e),
        }
    }
    unsafe fn tensormap_acquire(&self, _map: *const crate::TensorMap) {}
    #[track_caller]
    unsafe fn tma_load_2d(&self, dst: u32, map: *const crate::TensorMap, xy: (i32, i32), bar: u32) {
        // SAFETY: the caller's contract: a tensor map in global memory.
        let map = match TmaMap::parse(&unsafe { map.read() }) {
            Ok(m) => m,
            Err(problem) => {
                self.shared.abandon(EmuError::InvalidTensorMap { block: self.block, thread: self.thread, problem })
            }
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.tma_copy(Location::caller(), dst, &map, xy, bar) }
    }
    fn wgmma_wait_n128<const N: u32>(&self, _d: &mut [f32; 64]) {}
    #[track_caller]
    unsafe fn wgmma_m64n128k8_tf32(&self, d: &mut [f32; 64], a: u64, b: u64, accumulate: bool) {
        self.wgmma_tf32(d, a, b, accumulate);
    }
}

/// `x` rounded to f32 toward zero: to nearest, then one step back toward
/// zero where that went past `x` (out of range gives `f32::MAX`, as `RZ`).
fn round_toward_zero(x: f64) -> f32 {
    let r = x as f32;
    if (r as f64).abs() > x.abs() { f32::from_bits(r.to_bits() - 1) } else { r }
}

/// The bits of an f32 that a TF32 operand keeps: sign, exponent and 10 of
/// the 23 mantissa bits. The kernels round their operands to TF32 before
/// staging them, so this drops nothing from theirs.
const TF32_MASK: u32 = 0xffff_e000;

/// The shared-memory byte that a `wgmma` matrix descriptor `desc` (PTX ISA,
/// "Matrix Descriptor Format") gives for byte `kbyte` of row `row` of a
/// K-major operand (rows are `M` for `A`, `N` for `B`; `kbyte < 32`):
///
/// - bits 0-13: start address >> 4; 16-29: leading byte offset >> 4 (LBO);
///   32-45: stride byte offset >> 4 (SBO); 49-51: base offset; 62-63:
///   swizzle (0 none, 1 128-byte, 2 64-byte, 3 32-byte);
/// - rows come in groups of 8, SBO bytes apart;
/// - without swizzle, a group is core matrices of 8 rows x 16 bytes (128
///   contiguous bytes), LBO bytes apart along `K`;
/// - with a `W`-byte swizzle, a row of the group is `W` contiguous bytes at
///   `W * (row % 8)`, and the address's 16-byte chunk bits (4 and up) are
///   XORed with its bits 7 and up (`log2(W / 16)` bits of each), as CuTe's
///   `Swizzle<log2(W/16), 4, 3>`: the pattern repeats every `8 W` bytes and
///   is a function of the address, so a tile whose base is aligned to that
///   is read as it was written.
pub fn descriptor_address(desc: u64, row: usize, kbyte: usize) -> usize {
    let field = |shift: u32| (((desc >> shift) & 0x3fff) << 4) as usize;
    let (start, lbo, sbo) = (field(0), field(16), field(32));
    assert!((desc >> 49) & 7 == 0, "wgmma descriptor: a nonzero base offset is not emulated");
    let group = start + (row / 8) * sbo;
    match desc >> 62 {
        0 => group + (kbyte / 16) * lbo + (row % 8) * 16 + kbyte % 16,
        mode => {
            let bits = 4 - mode as usize; // 128 B: 3, 64 B: 2, 32 B: 1
            let addr = group + (row % 8) * (16 << bits) + kbyte;
            addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)
        }
    }
}

impl EmuCtx<'_> {
    /// One TF32 `wgmma` of shape `m64nNk8`, `N = 2 R`, for this thread's `R`
    /// accumulators: the warpgroup meets, checks that every thread names
    /// the same operands (descriptors and scale-d), and each thread
    /// computes its fragment (layout
    /// in [`ThreadCtx::wgmma_m64n256k8_tf32`]) from shared memory.
    ///
    /// Each output is `RZ(D + sum of the 8 products)`: the products of TF32
    /// values are exact in f64, and so is their sum with `D` unless their
    /// magnitudes lie more than about `2^29` apart; the result is rounded
    /// to f32 toward zero. The tensor cores do not round their f32 sum to
    /// nearest, they truncate it, so the error of each step leans toward
    /// zero, by up to an ulp of the running sum, and a sum over all of `K`
    /// in one accumulator drifts in proportion to `K`. This models that
    /// bias (not the hardware's exact bits): a kernel that leaves the drift
    /// in shows it here, as on the GPU.
    #[track_caller]
    fn wgmma_tf32<const R: usize>(&self, d: &mut [f32; R], a: u64, b: u64, accumulate: bool) {
        let index = self.linear / WARPGROUP_SIZE;
        let group = &self.shared.warpgroups[index as usize];
        if group.threads != WARPGROUP_SIZE {
            self.shared.fail(EmuError::PartialWarpgroup { block: self.block, threads: group.threads });
            std::panic::resume_unwind(Box::new(Abandoned));
        }
        let t = (self.linear % WARPGROUP_SIZE) as usize;
        let operands = (a, b, accumulate as u64);
        group.slots.lock().unwrap_or_else(|e| e.into_inner())[t] = operands;
        self.group_sync(group);
        let same = group.slots.lock().unwrap_or_else(|e| e.into_inner()).iter().all(|&s| s == operands);
        self.group_sync(group); // nobody overwrites a slot before all have compared
        if !same {
            self.shared.fail(EmuError::DivergentWgmma { block: self.block, warpgroup: index });
            std::panic::resume_unwind(Box::new(Abandoned));
        }
        let (warp, lane) = (t / 32, t % 32);
        // SAFETY: the block's shared memory, alive for the whole launch.
        let smem = unsafe { &*self.shared.smem.get() };
        let bytes = smem.len() * 16;
        let smem = smem.as_ptr().cast::<u8>();
        let (loc, request) = (Location::caller(), self.request());
        // The 8 TF32 values of `k` that row `row` of an operand holds, each
        // word read through the checker (races with the staging stores,
        // unwritten words) at the `wgmma`'s line, not counted: the operands
        // bypass the load/store unit.
        let operand = |desc: u64, row: usize| -> [f64; 8] {
            core::array::from_fn(|k| {
                let at = descriptor_address(desc, row, 4 * k);
                assert!(at + 4 <= bytes, "wgmma: operand at shared byte {at}, past the {bytes} bytes of the block");
                request.operand_read(loc, at, 4);
                // SAFETY: inside the shared memory (checked); any bits are an f32.
                let bits = unsafe { smem.add(at).cast::<u32>().read_unaligned() };
                f32::from_bits(bits & TF32_MASK) as f64
            })
        };
        // This thread's rows of A (two) and columns of B (R / 2), read once each.
        let rows: [[f64; 8]; 2] = core::array::from_fn(|h| operand(a, 16 * warp + lane / 4 + 8 * h));
        let cols: Vec<[f64; 8]> = (0..R / 2).map(|j| operand(b, 8 * (j / 2) + 2 * (lane % 4) + j % 2)).collect();
        for (i, acc) in d.iter_mut().enumerate() {
            let (x, y) = (&rows[(i / 2) % 2], &cols[2 * (i / 4) + i % 2]);
            let start = if accumulate { *acc as f64 } else { 0.0 };
            *acc = round_toward_zero((0..8).fold(start, |s, k| s + x[k] * y[k]));
        }
    }

    /// The checked read behind every load (`copy_async`: the global side
    /// of a `cp.async`, counted as such): the `U` at element `i` of the `len`
    /// elements of `T` at `base`, or `U::default()` where the checker
    /// refuses it (out of bounds).
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_load`].
    unsafe fn read<T, U: Copy + Default>(
        &self,
        loc: &'static Location<'static>,
        space: Space,
        (base, len, i): (*const T, usize, usize),
        copy_async: bool,
    ) -> U {
        let at = (size_of::<T>(), len, i);
        match self.request().access(loc, space, false, base.addr(), at, (size_of::<U>(), align_of::<U>()), copy_async) {
            // SAFETY: inside the view (checked), which the caller vouches
            // for; unaligned only where the checker has reported it.
            Some(addr) => unsafe { base.with_addr(addr).cast::<U>().read_unaligned() },
            None => U::default(),
        }
    }

    /// The checked write behind every store ([`EmuCtx::read`]'s twin): dropped
    /// where the checker refuses it.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_store`].
    unsafe fn write<T, U: Copy>(
        &self,
        loc: &'static Location<'static>,
        space: Space,
        (base, len, i): (*mut T, usize, usize),
        value: U,
        copy_async: bool,
    ) {
        let at = (size_of::<T>(), len, i);
        if let Some(addr) =
            self.request().access(loc, space, true, base.addr(), at, (size_of::<U>(), align_of::<U>()), copy_async)
        {
            // SAFETY: as in `read`.
            unsafe { base.with_addr(addr).cast::<U>().write_unaligned(value) }
        }
    }

    /// The bulk tensor copy of `tma_load_2d`: `map`'s box at `xy`, copied at
    /// once to the shared address `dst`, its bytes then counted on the
    /// mbarrier at `bar`. The shared writes are checked as the copy's
    /// ([`memory`]): ordered after what this thread knows now, and before
    /// what acquires the barrier's phase that they count in. A copy the
    /// hardware refuses (a destination misaligned, or past the shared
    /// memory) writes nothing: the finding says why, and its bytes still
    /// count, so that the kernel goes on to show what else is wrong.
    ///
    /// # Safety
    /// As [`ThreadCtx::tma_load_2d`].
    unsafe fn tma_copy(&self, loc: &'static Location<'static>, dst: u32, map: &TmaMap, xy: (i32, i32), bar: u32) {
        let (bytes, align) = (map.box_bytes(), map.dst_align());
        let shared_bytes = self.shared.dims.shared_bytes;
        let caller = self.caller();
        let request = &caller.request;
        let (access, space) = (Access::Copy, Space::Shared);
        let refused = if !dst.is_multiple_of(align) {
            Some(FindingKind::Misaligned { space, access, address: dst as usize, align: align as usize })
        } else if dst as u64 + bytes as u64 > shared_bytes as u64 {
            Some(FindingKind::PastSharedMemory { access, byte: dst as usize, bytes: bytes as usize, shared_bytes })
        } else {
            None
        };
        let fits = refused.is_none();
        if let Some(kind) = refused {
            request.find(kind, loc);
        }
        let smem = self.shared_mem::<u8>();
        let done = self.shared.mbarriers.copy(&caller, bar, bytes, |agent, phase| {
            if fits {
                request.copy_write(loc, dst as usize, bytes as usize, agent, phase);
                // SAFETY: the tensor is readable (the caller's contract),
                // and the box lies inside the shared memory (checked).
                unsafe { map.copy_box(xy, smem, dst) };
            }
        });
        self.mbarrier_result(done);
    }

    fn request(&self) -> Request<'_> {
        Request {
            memory: &self.shared.memory,
            local: self.local,
            block: self.block,
            thread: self.thread,
            linear: self.linear,
            shared_base: self.shared_mem::<u8>().addr(),
        }
    }

    fn group_sync(&self, group: &Warpgroup) {
        self.shared.meet(&group.barrier, Waypoint::Kernel, self.block);
    }

    fn warp_sync(&self, warp: &Warp) {
        self.shared.meet(&warp.barrier, Waypoint::Kernel, self.block);
    }

    /// What an mbarrier operation needs.
    fn caller(&self) -> Caller<'_> {
        Caller {
            request: self.request(),
            block: self.block,
            shared_bytes: self.shared.dims.shared_bytes,
            running: &self.shared.running,
            abort: &self.shared.abort,
        }
    }

    /// The launch's end when an mbarrier operation fails.
    fn mbarrier_result(&self, r: Result<(), EmuError>) {
        if let Err(e) = r {
            self.shared.abandon(e);
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

fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let (x, y) = (d.x as u64, d.y as u64);
    Dim3::new((i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32)
}

/// Runs `kernel` for every thread of the launch `dims`, on the CPU, under
/// the checker ([`memory`]): its findings, if any, are
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
    let report = run(dims, false, kernel)?;
    if report.findings.is_empty() { Ok(()) } else { Err(EmuError::Checker(report.findings)) }
}

/// [`launch`], counting as well ([`memory`]): returns the memory counters
/// of every line that accesses memory through a view, and the checker's
/// findings, as values. Errors are those of [`launch`] but
/// [`EmuError::Checker`].
///
/// The sectors are counted at the buffers' real addresses: a caller that
/// wants the GPU's figures gives buffers aligned as `cuMemAlloc`'s (256
/// bytes), as the host's `*_checked` launchers do.
pub fn launch_checked<F>(dims: LaunchDims, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    run(dims, true, kernel)
}

fn run<F>(dims: LaunchDims, counting: bool, kernel: F) -> Result<Report, EmuError>
where
    F: Fn(&EmuCtx<'_>) + Sync,
{
    let threads = dims.block.count();
    if threads == 0 || threads > MAX_THREADS_PER_BLOCK {
        return Err(EmuError::InvalidBlock(dims.block));
    }
    if dims.grid.count() == 0 {
        return Err(EmuError::EmptyGrid(dims.grid));
    }
    let threads = threads as u32;
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
                barrier: Barrier::new(threads),
            }
        })
        .collect();
    let words = (dims.shared_bytes as usize).div_ceil(16);
    let shared = Shared {
        dims,
        block_barrier: Barrier::new(threads),
        warps,
        warpgroups,
        smem: UnsafeCell::new(std::vec![u128::from_ne_bytes([SHARED_POISON; 16]); words]),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        memory: Memory::new(counting, dims.block, threads, dims.shared_bytes),
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
    let thread = unlinear(linear as u64, shared.dims.block);
    let local = ThreadMemory::default();
    let mut current = Dim3::new(0, 0, 0);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for b in 0..shared.dims.grid.count() {
            let block = unlinear(b, shared.dims.grid);
            current = block;
            local.start_block();
            kernel(&EmuCtx { shared, local: &local, thread, linear, block });
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
