//! The [`ThreadCtx`] of one emulated thread: what each of the trait's
//! methods does on the CPU.
//!
//! Indices come from the launch; `sync_threads`, shuffles and `wgmma`s
//! ([`super::wgmma`]) meet at the barriers of [`super::exec`]'s shared
//! state; every load and store through a view, and both sides of a
//! `cp.async`, go through one checked read or write ([`EmuCtx::read`],
//! [`EmuCtx::write`]) that the checker may refuse; mbarrier operations go
//! to [`super::mbarrier`], and a bulk tensor copy reads its map through
//! [`super::tma`]. What has nothing to do on the CPU (fences, waits for
//! copies that landed at issue) does nothing.
//!
//! Each access and each synchronisation is one of the thread's steps
//! ([`super::STEP_LIMIT`]): the one past the launch's limit fails it at
//! the caller's line. The views' safe methods ([`Checked`]) go through the
//! same read and write, refused outside the memory that exists.

use super::barrier::{Abandoned, Waypoint};
use super::block::{Shared, Warp};
use super::checker::FindingKind;
use super::error::EmuError;
use super::fiber::Fiber;
use super::mbarrier::{Caller, Stuck};
use super::memory::{Request, ThreadMemory};
use super::tma::TmaMap;
use super::types::{Access, Site, Via, WARP_SIZE};
use super::wgmma::{Issuer, OperandA, wgmma_s8, wgmma_tf32};
use crate::mem::{Checked, Plain, Space};
use crate::vector::F4;
use crate::{Dim3, ThreadCtx};
use core::panic::Location;
use std::boxed::Box;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// The stack a thread keeps in reserve: with less left at a step, the
/// launch fails ([`EmuError::StackOverflow`]) while unwinding still has
/// room, instead of the fiber's guard page ending the process.
const STACK_MARGIN: usize = 256 << 10;

/// The [`ThreadCtx`] of one emulated thread.
pub struct EmuCtx<'a> {
    pub(super) shared: &'a Shared,
    pub(super) local: &'a ThreadMemory,
    pub(super) thread: Dim3,
    /// The thread's index among all threads of its cluster (of its block,
    /// without clusters): its agent in the race checks.
    pub(super) linear: u32,
    /// The block's rank in its cluster (0 without clusters).
    pub(super) rank: u32,
    pub(super) block: Dim3,
    /// What this thread suspends when it waits.
    pub(super) fiber: &'a Fiber,
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
    #[track_caller]
    fn sync_threads(&self) {
        self.step(Location::caller());
        self.pass_barrier(|| self.shared.sync_block(self.rank, self.block, self.fiber));
    }
    fn shared_mem<T>(&self) -> *mut T {
        // SAFETY: only the pointer is taken (this block's region, inside the
        // allocation); see `Shared`'s Sync note.
        unsafe { self.cluster_smem().add(self.cta_offset() as usize).cast() }
    }
    #[track_caller]
    unsafe fn mem_load<T, U: Copy + Default>(&self, space: Space, base: *const T, len: usize, i: usize) -> U {
        // SAFETY: forwarded from the caller.
        unsafe { self.read(Location::caller(), space, (base, len, i), Via::Lsu) }
    }
    #[track_caller]
    unsafe fn mem_store<T, U: Copy>(&self, space: Space, base: *mut T, len: usize, i: usize, value: U) {
        // SAFETY: forwarded from the caller.
        unsafe { self.write(Location::caller(), space, (base, len, i), value, Via::Lsu) }
    }
    #[track_caller]
    unsafe fn mem_raise_flag(&self, base: *mut u32, len: usize, i: usize) {
        // A flag is only ever 0 or 1: raising it to 1 is setting it.
        // SAFETY: forwarded from the caller.
        unsafe { self.mem_raise_to(base, len, i, 1) }
    }
    #[track_caller]
    unsafe fn mem_raise_to(&self, base: *mut u32, len: usize, i: usize, value: u32) {
        let (loc, at) = (Location::caller(), (4, len, i));
        self.step(loc);
        if let Some(addr) = self.request().access(loc, Space::Global, true, base.addr(), at, (4, 4), Via::Flag, false) {
            let word = base.with_addr(addr);
            if addr.is_multiple_of(4) {
                // SAFETY: inside the caller's view (checked), aligned: an
                // atomic, since other emulated threads raise the same word
                // at the same time.
                unsafe { AtomicU32::from_ptr(word).fetch_max(value, Ordering::Relaxed) };
            } else {
                // SAFETY: inside the view; misaligned, which the checker has
                // reported (as the GPU would refuse it).
                unsafe { word.write_unaligned(word.read_unaligned().max(value)) }
            }
        }
    }
    #[track_caller]
    unsafe fn mem_copy_async<T, U: Copy + Default>(
        &self, (dst, dst_len, i): (*mut T, usize, usize), (src, src_len, j): (*const T, usize, usize),
    ) {
        let loc = Location::caller();
        // SAFETY: forwarded from the caller.
        unsafe {
            let v: U = self.read(loc, Space::Global, (src, src_len, j), Via::CopyAsync);
            self.write(loc, Space::Shared, (dst, dst_len, i), v, Via::CopyAsync)
        }
    }
    #[track_caller]
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32 {
        self.step(Location::caller());
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
    fn wgmma_wait_rs<const N: u32>(&self, _d: &mut [f32; 128], _a: &[f32; 4]) {}
    #[track_caller]
    unsafe fn wgmma_m64n256k8_tf32(&self, d: &mut [f32; 128], a: u64, b: u64) {
        self.wgmma(Location::caller(), d, OperandA::Shared(a), b, true);
    }
    #[track_caller]
    unsafe fn wgmma_m64n256k8_tf32_rs(&self, d: &mut [f32; 128], a: [f32; 4], b: u64) {
        self.wgmma(Location::caller(), d, OperandA::Registers(a), b, true);
    }
    fn wgmma_wait_s32<const N: u32>(&self, _d: &mut [i32; 128]) {}
    #[track_caller]
    unsafe fn wgmma_m64n256k32_s8(&self, d: &mut [i32; 128], a: u64, b: u64, accumulate: bool) {
        let loc = Location::caller();
        self.step(loc);
        let (shared, linear, rank, block, fiber) = (self.shared, self.linear, self.rank, self.block, self.fiber);
        wgmma_s8(&Issuer { shared, request: self.request(), linear, rank, block, fiber, loc }, d, (a, b), accumulate);
    }
    #[track_caller]
    fn mbarrier_init(&self, bar: u32, count: u32) {
        self.step(Location::caller());
        self.mbarrier_result(self.shared.mbarriers.init(&self.caller(), self.in_cluster(bar), count));
    }
    fn mbarrier_init_fence(&self) {}
    #[track_caller]
    fn mbarrier_arrive(&self, bar: u32) {
        self.step(Location::caller());
        self.mbarrier_result(self.shared.mbarriers.arrive(&self.caller(), self.in_cluster(bar), 0));
    }
    #[track_caller]
    fn mbarrier_arrive_expect_tx(&self, bar: u32, bytes: u32) {
        self.step(Location::caller());
        self.mbarrier_result(self.shared.mbarriers.arrive(&self.caller(), self.in_cluster(bar), bytes));
    }
    #[track_caller]
    fn mbarrier_wait(&self, bar: u32, parity: u32) {
        self.step(Location::caller());
        match self.shared.mbarriers.wait(&self.caller(), self.in_cluster(bar), parity) {
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
    fn wgmma_wait_n128_rs<const N: u32>(&self, _d: &mut [f32; 64], _a: &[f32; 32]) {}
    #[track_caller]
    unsafe fn wgmma_m64n128k8_tf32_rs(&self, d: &mut [f32; 64], a: [f32; 4], b: u64, accumulate: bool) {
        self.wgmma(Location::caller(), d, OperandA::Registers(a), b, accumulate);
    }
    #[track_caller]
    unsafe fn mem_bulk_load(&self, dst: u32, (src, len, j): (*const f32, usize, usize), bytes: u32, bar: u32) {
        let loc = Location::caller();
        assert!(bytes.is_multiple_of(16), "bulk copy: {bytes} bytes, not a multiple of 16");
        // The global side: checked 16 bytes at a time (not counted: see
        // `Via::Bulk`), then landed in shared memory at once.
        let data: std::vec::Vec<F4> =
            // SAFETY: forwarded from the caller (the checker refuses what
            // lies outside `src`).
            (0..bytes as usize / 16).map(|q| unsafe { self.read(loc, Space::Global, (src, len, j + 4 * q), Via::Bulk) }).collect();
        let smem = self.shared_mem::<u8>();
        // SAFETY: `copy_in` fills only a destination inside the shared memory.
        self.copy_in(loc, (self.rank, dst, 16), bytes, bar, || unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), smem.add(dst as usize), bytes as usize)
        });
    }
    #[track_caller]
    unsafe fn mem_bulk_store(&self, (dst, len, j): (*mut f32, usize, usize), src: u32, bytes: u32) {
        let loc = Location::caller();
        assert!(bytes.is_multiple_of(16) && src.is_multiple_of(4), "bulk copy: {bytes} bytes from shared {src}");
        let (smem, floats) = self.shared_floats();
        for q in 0..bytes as usize / 16 {
            // SAFETY: checked reads and writes (the checker refuses what lies
            // outside the shared memory or `dst`).
            unsafe {
                let at = (smem.cast_const(), floats, src as usize / 4 + 4 * q);
                let v: F4 = self.read(loc, Space::Shared, at, Via::Bulk);
                self.write(loc, Space::Global, (dst, len, j + 4 * q), v, Via::Bulk);
            }
        }
    }
    fn bulk_commit(&self) {}
    fn bulk_wait_read<const N: u32>(&self) {}
    fn bulk_wait_all(&self) {}
    #[track_caller]
    unsafe fn wgmma_m64n128k8_tf32(&self, d: &mut [f32; 64], a: u64, b: u64, accumulate: bool) {
        self.wgmma(Location::caller(), d, OperandA::Shared(a), b, accumulate);
    }
    fn cluster_ctarank(&self) -> u32 {
        self.rank
    }
    fn cluster_nctarank(&self) -> u32 {
        self.shared.cluster
    }
    fn launch_bound<const N: u32>(&self) {
        let threads = self.block_dim().x * self.block_dim().y * self.block_dim().z;
        if threads > N {
            // Reported as the launch's error (`EmuError::Panicked`).
            panic!("launch bound: a block of {threads} threads for a kernel bounded to {N}");
        }
    }
    fn launch_bounds<const N: u32, const B: u32>(&self) {
        self.launch_bound::<N>();
    }
    fn setmaxnreg_dec<const N: u32>(&self) {}
    fn setmaxnreg_inc<const N: u32>(&self) {}
    fn trap(&self, why: &'static str) -> ! {
        // Reported as the launch's error, with this thread's indices
        // (`EmuError::Panicked`).
        panic!("trap: {why}")
    }
    fn cluster_arrive_relaxed(&self) {}
    #[track_caller]
    fn cluster_wait(&self) {
        self.step(Location::caller());
        self.pass_barrier(|| self.shared.sync(Waypoint::Kernel, self.block, self.fiber));
    }
    #[track_caller]
    unsafe fn st_async_f32x2(&self, rank: u32, dst: u32, value: [f32; 2], bar: u32) {
        let loc = Location::caller();
        assert!(rank < self.shared.cluster, "st_async_f32x2: rank {rank} outside a cluster of {}", self.shared.cluster);
        let (smem, at) = (self.cluster_smem(), (self.region(rank) + dst) as usize);
        // SAFETY: `copy_in` fills only a destination inside block `rank`'s
        // shared memory (the region at `at - dst`).
        self.copy_in(loc, (rank, dst, 8), 8, bar, || unsafe {
            core::ptr::copy_nonoverlapping(value.as_ptr().cast::<u8>(), smem.add(at), 8)
        });
    }
    #[track_caller]
    fn mbarrier_wait_cluster(&self, bar: u32, parity: u32) {
        self.mbarrier_wait(bar, parity);
    }
}

// SAFETY: both methods access memory only through `EmuCtx::checked`,
// whose pointer `Request::access` found, for a safe access, inside the view
// and then inside the cluster's shared memory (a shared access) or inside
// a buffer the launch registered (a global one; none when the launch
// registered none), which the launch's `Options::allocations` vouches for;
// a refused access touches nothing. `U: Plain` makes any bytes there a
// valid `U`, and a `U` all initialised bytes.
unsafe impl Checked for EmuCtx<'_> {
    #[track_caller]
    fn checked_load<T, U: Plain>(&self, space: Space, base: *const T, len: usize, i: usize) -> U {
        let at = (size_of::<T>(), len, i);
        match self.checked(Location::caller(), space, false, base.addr(), at, size_of::<U>(), align_of::<U>()) {
            // SAFETY: memory that exists (see the impl's note).
            Some(p) => unsafe { load_plain(space, p) },
            None => U::default(),
        }
    }
    #[track_caller]
    fn checked_store<T, U: Plain>(&self, space: Space, base: *mut T, len: usize, i: usize, value: U) {
        let at = (size_of::<T>(), len, i);
        if let Some(p) = self.checked(Location::caller(), space, true, base.addr(), at, size_of::<U>(), align_of::<U>())
        {
            // SAFETY: as above.
            unsafe { store_plain(space, p, value) }
        }
    }
}

/// The `U` at `p`. Global memory is read a byte at a time, each byte a
/// relaxed atomic load: the blocks of a launch run on several OS threads,
/// and safe accesses that race (a bug the kernel may have) must not be a
/// data race of the emulator's. A block's shared memory is its worker's
/// alone.
///
/// # Safety
/// `p` is valid for reads of a `U` (and, in global memory, only accessed
/// atomically or in an order with this access); `U` is [`Plain`].
unsafe fn load_plain<U: Plain>(space: Space, p: *mut u8) -> U {
    match space {
        // SAFETY: forwarded from the caller.
        Space::Shared => unsafe { p.cast::<U>().read_unaligned() },
        Space::Global => {
            let mut value = core::mem::MaybeUninit::<U>::uninit();
            let bytes = value.as_mut_ptr().cast::<u8>();
            for k in 0..size_of::<U>() {
                // SAFETY: forwarded from the caller; a byte is always
                // aligned for `AtomicU8`.
                unsafe { bytes.add(k).write(AtomicU8::from_ptr(p.add(k)).load(Ordering::Relaxed)) };
            }
            // SAFETY: every byte is written, and any bytes are a `U` (`Plain`).
            unsafe { value.assume_init() }
        }
    }
}

/// Writes `value` at `p`, as [`load_plain`] reads.
///
/// # Safety
/// `p` is valid for writes of a `U`, as in [`load_plain`].
unsafe fn store_plain<U: Plain>(space: Space, p: *mut u8, value: U) {
    match space {
        // SAFETY: forwarded from the caller.
        Space::Shared => unsafe { p.cast::<U>().write_unaligned(value) },
        Space::Global => {
            let bytes = (&raw const value).cast::<u8>();
            for k in 0..size_of::<U>() {
                // SAFETY: forwarded from the caller; `value`'s bytes are
                // all initialised (`Plain`: no padding).
                unsafe { AtomicU8::from_ptr(p.add(k)).store(bytes.add(k).read(), Ordering::Relaxed) };
            }
        }
    }
}

impl EmuCtx<'_> {
    /// The checked read behind every load, made `via` the load/store unit,
    /// a `cp.async` or a bulk copy (counted as each is): the `U` at element `i` of the `len`
    /// elements of `T` at `base`, or `U::default()` where the checker
    /// refuses it (out of bounds, outside the launch's buffers). One step
    /// of the thread's.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_load`].
    unsafe fn read<T, U: Copy + Default>(
        &self, loc: &'static Location<'static>, space: Space, (base, len, i): (*const T, usize, usize), via: Via,
    ) -> U {
        self.step(loc);
        let at = (size_of::<T>(), len, i);
        let how = (size_of::<U>(), align_of::<U>());
        match self.request().access(loc, space, false, base.addr(), at, how, via, false) {
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
        &self, loc: &'static Location<'static>, space: Space, (base, len, i): (*mut T, usize, usize), value: U,
        via: Via,
    ) {
        self.step(loc);
        let at = (size_of::<T>(), len, i);
        let how = (size_of::<U>(), align_of::<U>());
        if let Some(addr) = self.request().access(loc, space, true, base.addr(), at, how, via, false) {
            // SAFETY: as in `read`.
            unsafe { base.with_addr(addr).cast::<U>().write_unaligned(value) }
        }
    }

    /// A safe access ([`Checked`]) of `bytes` bytes aligned to `align` at
    /// element `i` of the `len` elements of `elem` bytes at `base`
    /// (`at = (elem, len, i)`), at `loc`: one step, then the checks of a
    /// safe access ([`Request::access`]). Returns the pointer to access,
    /// with the provenance of the memory it lies in (the cluster's shared
    /// memory, or a registered buffer, whose registration exposed it), or
    /// `None` where the checks refuse it.
    #[allow(clippy::too_many_arguments)]
    fn checked(
        &self, loc: &'static Location<'static>, space: Space, store: bool, base: usize, at: (usize, usize, usize),
        bytes: usize, align: usize,
    ) -> Option<*mut u8> {
        self.step(loc);
        let addr = self.request().access(loc, space, store, base, at, (bytes, align), Via::Lsu, true)?;
        Some(match space {
            Space::Shared => self.cluster_smem().with_addr(addr),
            Space::Global => core::ptr::with_exposed_provenance_mut(addr),
        })
    }

    /// One step of this thread's, at `loc`: past the launch's limit, the
    /// launch fails there ([`EmuError::StepLimit`]); and with less than
    /// [`STACK_MARGIN`] of its fiber's stack left (a kernel that calls
    /// itself without end, say), it fails there before the stack runs out
    /// ([`EmuError::StackOverflow`]).
    #[inline]
    fn step(&self, loc: &'static Location<'static>) {
        let steps = self.local.steps.get() + 1;
        self.local.steps.set(steps);
        if steps > self.shared.step_limit {
            self.step_limit(loc, steps);
        }
        // A local's address: where this thread's stack is now.
        let here = core::ptr::addr_of!(steps).addr();
        if here < self.local.stack_limit.get().saturating_add(STACK_MARGIN) {
            let (block, thread, site) = (self.block, self.thread, Site::of(loc));
            self.shared.abandon(EmuError::StackOverflow { block, thread, site })
        }
    }

    #[cold]
    fn step_limit(&self, loc: &'static Location<'static>, steps: u64) -> ! {
        let (block, thread, site) = (self.block, self.thread, Site::of(loc));
        self.shared.abandon(EmuError::StepLimit { block, thread, site, steps })
    }

    /// The bulk tensor copy of `tma_load_2d`: `map`'s box at `xy`, copied
    /// through [`EmuCtx::copy_in`].
    ///
    /// # Safety
    /// As [`ThreadCtx::tma_load_2d`].
    unsafe fn tma_copy(&self, loc: &'static Location<'static>, dst: u32, map: &TmaMap, xy: (i32, i32), bar: u32) {
        let smem = self.shared_mem::<u8>();
        // SAFETY: the tensor is readable (the caller's contract), and
        // `copy_in` calls this only where the box lies inside the shared
        // memory.
        self.copy_in(loc, (self.rank, dst, map.dst_align()), map.box_bytes(), bar, || unsafe {
            map.copy_box(xy, smem, dst)
        });
    }

    /// An asynchronous copy into shared memory (a bulk tensor copy, a bulk
    /// copy, an `st.async`): `fill` writes the `bytes` at the shared address
    /// `dst` of the block of rank `rank` in the cluster (this block, but for
    /// `st.async`) at once, then they count on that block's mbarrier at `bar`. The shared writes are
    /// checked as the copy's ([`super::races`]): ordered after what this
    /// thread knows now, and before what acquires the barrier's phase that
    /// they count in. A copy the hardware refuses (a destination misaligned
    /// for `align`, or past the shared memory) writes nothing: the finding
    /// says why, and its bytes still count, so that the kernel goes on to
    /// show what else is wrong.
    fn copy_in(
        &self, loc: &'static Location<'static>, (rank, dst, align): (u32, u32, u32), bytes: u32, bar: u32,
        fill: impl FnOnce(),
    ) {
        self.step(loc);
        let shared_bytes = self.shared.dims.shared_bytes;
        let region = self.region(rank);
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
        let done = self.shared.mbarriers.copy(&caller, region + bar, bytes, |agent, phase| {
            if fits {
                request.copy_write(loc, (region + dst) as usize, bytes as usize, agent, phase);
                fill();
            }
        });
        self.mbarrier_result(done);
    }

    /// The shared memory as floats: base and length, for checked accesses.
    fn shared_floats(&self) -> (*mut f32, usize) {
        (self.shared_mem::<f32>(), self.shared.dims.shared_bytes as usize / 4)
    }

    pub(super) fn request(&self) -> Request<'_> {
        Request {
            memory: &self.shared.memory,
            local: self.local,
            block: self.block,
            thread: self.thread,
            linear: self.linear,
            shared_base: self.cluster_smem().addr(),
        }
    }

    /// The shared memory of the whole cluster ([`Shared::cluster_smem`]).
    pub(super) fn cluster_smem(&self) -> *mut u8 {
        self.shared.cluster_smem()
    }

    /// Where block `rank`'s region starts in the cluster's shared memory.
    fn region(&self, rank: u32) -> u32 {
        self.shared.region(rank)
    }

    /// Where this block's region starts in the cluster's shared memory.
    pub(super) fn cta_offset(&self) -> u32 {
        self.region(self.rank)
    }

    /// Passes a barrier, `meet` waiting at it (the block's, or the
    /// cluster's): the epochs and mbarrier knowledge of the race checks
    /// around it.
    fn pass_barrier(&self, meet: impl FnOnce()) {
        let (races, clock) = (&self.shared.memory.races, &self.local.clock);
        races.before_sync(clock);
        meet();
        clock.barrier();
        races.after_sync(clock);
    }

    /// This block's shared address `addr` as the cluster's (the emulator's
    /// mbarriers and checks key on it).
    fn in_cluster(&self, addr: u32) -> u32 {
        self.cta_offset() + addr
    }

    /// A `wgmma` of this thread's at `loc` ([`wgmma_tf32`]).
    fn wgmma<const R: usize>(
        &self, loc: &'static Location<'static>, d: &mut [f32; R], a: OperandA, b: u64, accumulate: bool,
    ) {
        self.step(loc);
        let (shared, linear, rank, block, fiber) = (self.shared, self.linear, self.rank, self.block, self.fiber);
        wgmma_tf32(&Issuer { shared, request: self.request(), linear, rank, block, fiber, loc }, d, a, b, accumulate);
    }

    fn warp_sync(&self, warp: &Warp) {
        self.shared.meet(&warp.barrier, Waypoint::Kernel, self.block, self.fiber);
    }

    /// What an mbarrier operation needs.
    fn caller(&self) -> Caller<'_> {
        Caller {
            request: self.request(),
            block: self.block,
            // The bound of the cluster's addresses: the last block's region ends here.
            shared_bytes: self.shared.memory.shared_bytes,
            running: &self.shared.running,
            abort: &self.shared.abort,
            fiber: self.fiber,
        }
    }

    /// The launch's end when an mbarrier operation fails.
    fn mbarrier_result(&self, r: Result<(), EmuError>) {
        if let Err(e) = r {
            self.shared.abandon(e);
        }
    }
}
