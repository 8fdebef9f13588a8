//! What a kernel body may ask of the thread running it.

use crate::mem::{Extent, Global, GlobalMut, Shared, Space};

/// A TMA tensor map (`CUtensorMap`): 128 bytes that describe a tensor in
/// global memory (address, sizes, strides) and the box one bulk copy moves
/// into shared memory (its sizes and swizzle). On the GPU its bytes come
/// from the driver (`cuTensorMapEncodeTiled`) and are opaque; on the
/// emulator they hold the emulator's own encoding (`emu::TmaMap`). A kernel
/// reads one from global memory, 64-byte aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap(pub [u64; 16]);

/// A CUDA-style 3D extent or index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }
    pub const fn xy(x: u32, y: u32) -> Self {
        Dim3 { x, y, z: 1 }
    }
    /// Number of points in the extent (as u64: a grid can exceed u32).
    pub const fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

/// `(x, y, z)`: how the emulator's errors and findings name blocks and
/// threads. (Not on the GPU, which formats nothing.)
#[cfg(not(target_arch = "nvptx64"))]
impl core::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    pub grid: Dim3,
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl LaunchDims {
    /// A one-dimensional launch: `blocks` blocks of `threads` threads, no
    /// dynamic shared memory.
    pub const fn linear(blocks: u32, threads: u32) -> LaunchDims {
        LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(threads, 1), shared_bytes: 0 }
    }

    /// A one-dimensional grid sized to the work, as the streaming kernels
    /// launch: blocks of `threads` threads, each thread taking `per_thread`
    /// of the `items`, at least one block and at most `max_blocks` (the
    /// kernel's grid-stride loop covers the rest).
    pub const fn covering(items: u64, per_thread: u64, threads: u32, max_blocks: u32) -> LaunchDims {
        let needed = items.div_ceil(per_thread * threads as u64);
        let blocks = if needed < max_blocks as u64 { needed } else { max_blocks as u64 };
        LaunchDims::linear(if blocks == 0 { 1 } else { blocks as u32 }, threads)
    }
}

/// The thread's view of the machine: on the GPU each method is one PTX
/// instruction; on the host emulator each is backed by real threads.
///
/// Kernel bodies take `&impl ThreadCtx` and nothing else machine-specific, so
/// the same code is compiled to PTX and run in CPU tests.
pub trait ThreadCtx {
    /// `threadIdx`
    fn thread_idx(&self) -> Dim3;
    /// `blockIdx`
    fn block_idx(&self) -> Dim3;
    /// `blockDim`
    fn block_dim(&self) -> Dim3;
    /// `gridDim`
    fn grid_dim(&self) -> Dim3;
    /// `__syncthreads()`: every thread of the block must reach the same call.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn sync_threads(&self);
    /// Start of this block's dynamic shared memory (`extern __shared__`),
    /// sized by the launch's [`LaunchDims::shared_bytes`] and aligned to at
    /// least `align_of::<T>()` (the emulator gives 16 bytes).
    fn shared_mem<T>(&self) -> *mut T;
    /// `len` elements of global memory at `ptr` (a count, or a matrix's
    /// `(rows, cols)`: [`Extent`]), to read through ([`crate::mem`]).
    #[inline(always)]
    fn global<T>(&self, ptr: *const T, len: impl Extent) -> Global<'_, Self, T>
    where
        Self: Sized,
    {
        Global::new(self, ptr, len)
    }
    /// `len` elements of global memory at `ptr`, to read and write through
    /// ([`crate::mem`]).
    #[inline(always)]
    fn global_mut<T>(&self, ptr: *mut T, len: impl Extent) -> GlobalMut<'_, Self, T>
    where
        Self: Sized,
    {
        GlobalMut::new(self, ptr, len)
    }
    /// The block's dynamic shared memory as `len` elements of `T`, from its
    /// start ([`ThreadCtx::shared_mem`]); the launch gives at least
    /// `len * size_of::<T>()` bytes.
    #[inline(always)]
    fn shared<T>(&self, len: impl Extent) -> Shared<'_, Self, T>
    where
        Self: Sized,
    {
        Shared::new(self, self.shared_mem::<T>(), len)
    }
    /// Reads the `U` that starts at element `i` of the `len` elements of `T`
    /// at `base`, in `space`: the one load behind every view's `load`. On the
    /// GPU, `*base.add(i).cast::<U>()`; on the emulator, also checked and
    /// counted at the caller's source line.
    ///
    /// # Safety
    /// `base` valid for `len` elements, the `U` inside them and aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_load<T, U: Copy + Default>(&self, space: Space, base: *const T, len: usize, i: usize) -> U;
    /// Writes the `U` that starts at element `i`: the one store behind every
    /// view's `store` (see [`ThreadCtx::mem_load`]).
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_load`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_store<T, U: Copy>(&self, space: Space, base: *mut T, len: usize, i: usize, value: U);
    /// Sets the global `u32` at element `i` of the `len` at `base` to 1, where
    /// other threads of the launch may set the same word at the same time
    /// (a flag that many writers raise and none lowers): on the GPU one
    /// `st.global` (every writer stores the same value), on the emulator an
    /// atomic store, checked and counted as a store at the caller's line.
    ///
    /// # Safety
    /// `base` valid for `len` elements of global memory, `i < len`, the word
    /// 4-byte aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_raise_flag(&self, base: *mut u32, len: usize, i: usize);
    /// Raises the global `u32` at element `i` of the `len` at `base` to
    /// `value` where it is less (an unsigned maximum), where other threads of
    /// the launch may raise the same word at the same time: on the GPU one
    /// `red.max.u32`, on the emulator an atomic maximum, checked and counted
    /// as a store at the caller's line.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_raise_flag`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_raise_to(&self, base: *mut u32, len: usize, i: usize, value: u32);
    /// The emulator's side of [`crate::Shared::copy_async_16`]: the `U` at
    /// element `j` of the global `src` (`src_len` elements) copied to
    /// element `i` of the shared `dst` (`dst_len`), as one `cp.async`. By
    /// default a [`ThreadCtx::mem_load`] and a [`ThreadCtx::mem_store`]; the
    /// emulator counts the two sides as `cp.async`, not as a load and a
    /// store. (The GPU issues the instruction itself: not compiled there.)
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_load`] for `src` and [`ThreadCtx::mem_store`] for `dst`.
    #[cfg(not(target_arch = "nvptx64"))]
    #[track_caller]
    unsafe fn mem_copy_async<T, U: Copy + Default>(
        &self, (dst, dst_len, i): (*mut T, usize, usize), (src, src_len, j): (*const T, usize, usize),
    ) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let v = self.mem_load::<T, U>(Space::Global, src, src_len, j);
            self.mem_store::<T, U>(Space::Shared, dst, dst_len, i, v)
        }
    }
    /// `__shfl_xor_sync(0xffffffff, value, lane_mask)`: all 32 lanes of the
    /// warp must take part.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32;
    /// `cp.async.cg.shared.global [dst], [src], 16`: starts copying 16 bytes
    /// from global to shared memory without holding them in registers, so a
    /// thread can have many such copies in flight. This thread may read
    /// `dst` only after [`ThreadCtx::wait_async_copies`] (the emulator copies
    /// at once).
    ///
    /// # Safety
    /// `dst` 16-byte aligned inside this block's shared memory, `src`
    /// 16-byte aligned and valid for 16 bytes of global memory.
    unsafe fn copy_async_16(&self, dst: *mut f32, src: *const f32);
    /// `cp.async.commit_group; cp.async.wait_group 0`: waits until every
    /// copy this thread started has landed (other threads' copies need a
    /// barrier besides).
    fn wait_async_copies(&self);

    /// The address of `p` in the shared-memory window (`cvta.to.shared`),
    /// which matrix descriptors take. On the emulator, the byte offset of
    /// `p` from the start of the block's shared memory.
    fn shared_addr<T>(&self, p: *const T) -> u32;
    /// `fence.proxy.async.shared::cta`: makes this thread's ordinary stores
    /// to shared memory visible to the async proxy (`wgmma` operand reads,
    /// bulk copies). Every thread that stored issues it, then a barrier
    /// orders all of them before the `wgmma` that reads.
    fn fence_proxy_async(&self);
    /// `wgmma.fence.sync.aligned`: orders this warpgroup's earlier register
    /// and shared accesses before the next `wgmma`. Issued before the first
    /// `wgmma` of a batch, by every thread of the warpgroup.
    fn wgmma_fence(&self);
    /// `wgmma.commit_group.sync.aligned`: closes the `wgmma`s issued since
    /// the last commit into one group that [`ThreadCtx::wgmma_wait`] tracks.
    fn wgmma_commit(&self);
    /// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed
    /// groups are still in flight. `d` is the accumulator those groups write:
    /// it is named here so that the compiler reads it only after the wait.
    fn wgmma_wait<const N: u32>(&self, d: &mut [f32; 128]);
    /// `wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32`, scale-d 1:
    /// `D += A * B^T` for the 64x8 `A` and the 256x8 `B` that the matrix
    /// descriptors `a` and `b` describe in shared memory (both K-major: 8
    /// consecutive `k` of a row are 32 contiguous bytes before swizzling).
    /// `d` is this thread's fragment of the 64x256 f32 accumulator: thread
    /// `t` of the warpgroup (warp `w = t / 32`, lane `l`) holds, in `d[i]`,
    /// row `16 w + l / 4 + 8 ((i / 2) % 2)`, column `8 (i / 4) + 2 (l % 4) + i % 2`.
    ///
    /// Asynchronous: `d` is not to be read or written before
    /// [`ThreadCtx::wgmma_wait`] says its group completed, nor the shared
    /// operands overwritten. All 128 threads of the warpgroup (4 consecutive
    /// warps starting at a multiple of 4) issue it together, with the same
    /// descriptors.
    ///
    /// # Safety
    /// The descriptors describe memory inside this block's shared memory,
    /// written (and fenced, [`ThreadCtx::fence_proxy_async`]) before the call.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wgmma_m64n256k8_tf32(&self, d: &mut [f32; 128], a: u64, b: u64);
    /// [`ThreadCtx::wgmma_wait`] for a group of `wgmma`s that read `A` from
    /// registers ([`ThreadCtx::wgmma_m64n256k8_tf32_rs`]): `a`, the
    /// fragment of the group this wait retires, is named too, so that the
    /// compiler keeps their registers, unwritten, until the wait (it would
    /// otherwise reuse them once the `wgmma` that reads them is issued, and
    /// `ptxas` would serialise every `wgmma`).
    fn wgmma_wait_rs<const N: u32>(&self, d: &mut [f32; 128], a: &[f32; 4]);
    /// [`ThreadCtx::wgmma_m64n256k8_tf32`] with `A` in registers
    /// (`wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 d, {a0..a3},
    /// b-desc`): each warp `w` of the warpgroup holds rows `16 w ..+16` of
    /// the 64x8 `A`, thread `l` of it row `l / 4` in `a[0]` (column `l % 4`)
    /// and `a[2]` (column `l % 4 + 4`), and row `l / 4 + 8` in `a[1]` and
    /// `a[3]` (the same columns). The tensor cores read the registers' TF32
    /// bits; `B` as before, from shared memory.
    ///
    /// Asynchronous, as the shared-memory form: neither `d` nor the
    /// registers that held `a` are to be written before
    /// [`ThreadCtx::wgmma_wait`] says the group completed (`ptxas`
    /// serialises the `wgmma`s of a program that does, and says so).
    ///
    /// # Safety
    /// As [`ThreadCtx::wgmma_m64n256k8_tf32`], for `b`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wgmma_m64n256k8_tf32_rs(&self, d: &mut [f32; 128], a: [f32; 4], b: u64);
    /// [`ThreadCtx::wgmma_wait`] for the s32 accumulators of
    /// [`ThreadCtx::wgmma_m64n256k32_s8`].
    fn wgmma_wait_s32<const N: u32>(&self, d: &mut [i32; 128]);
    /// `wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8` with the
    /// scale-d flag: `D = A * B^T + (accumulate ? D : 0)` for the 64x32 `A` and the 256x32 `B` of signed bytes
    /// that the descriptors `a` and `b` describe (both K-major: a row's 32
    /// `k` are 32 contiguous bytes before swizzling, as a TF32 row's 8), in
    /// exact integer arithmetic, wrapping past `i32`; `d` is this thread's
    /// fragment of the 64x256 s32 accumulator, in
    /// [`ThreadCtx::wgmma_m64n256k8_tf32`]'s layout.
    ///
    /// # Safety
    /// As [`ThreadCtx::wgmma_m64n256k8_tf32`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wgmma_m64n256k32_s8(&self, d: &mut [i32; 128], a: u64, b: u64, accumulate: bool);
    /// `mbarrier.init.shared::cta.b64 [bar], count`: makes the 8 shared
    /// bytes at shared address `bar` (8-byte aligned) a barrier whose phase
    /// completes when `count` arrivals have been made and every byte a
    /// transaction announced ([`ThreadCtx::mbarrier_arrive_expect_tx`]) has
    /// landed. One thread initialises; [`ThreadCtx::mbarrier_init_fence`]
    /// and a block barrier then publish it before anyone uses it.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn mbarrier_init(&self, bar: u32, count: u32);
    /// `fence.mbarrier_init.release.cluster`: orders this thread's
    /// `mbarrier.init`s before its later operations, as seen by the async
    /// proxy (TMA) and by other threads after a barrier.
    fn mbarrier_init_fence(&self);
    /// `mbarrier.arrive.shared::cta.b64 _, [bar]`: one arrival on the
    /// current phase, releasing this thread's earlier memory accesses to
    /// whoever waits for the phase.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn mbarrier_arrive(&self, bar: u32);
    /// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes`: one
    /// arrival, and `bytes` more that bulk copies must deliver before the
    /// current phase completes.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn mbarrier_arrive_expect_tx(&self, bar: u32, bytes: u32);
    /// Waits (`mbarrier.try_wait.parity` in a loop) until the phase of
    /// parity `parity` of the barrier at `bar` has completed: phases
    /// alternate 0, 1, 0, .. from the init, so a waiter tracks which one it
    /// expects. Acquires what the arrivals released and the copies wrote.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn mbarrier_wait(&self, bar: u32, parity: u32);
    /// `fence.proxy.tensormap::generic.acquire.gpu [map], 128` and
    /// `prefetch.tensormap [map]`: the tensor map at `map` was written by
    /// ordinary stores (an earlier kernel, a copy); this orders them before
    /// the bulk copies that read it through the tensor-map proxy.
    ///
    /// # Safety
    /// `map` points to a [`TensorMap`] in global memory.
    unsafe fn tensormap_acquire(&self, map: *const TensorMap);
    /// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`:
    /// copies the box of the tensor `map` describes whose first element is
    /// at column `x` (innermost dimension) and row `y` into shared memory
    /// at shared address `dst`, laid out and swizzled as the map says;
    /// elements outside the tensor are filled with zeros. The copy runs
    /// asynchronously and counts its bytes (the whole box, zeros included)
    /// against the barrier at `bar`. Issued by one thread.
    ///
    /// # Safety
    /// `map` a valid [`TensorMap`] in global memory whose tensor is
    /// readable; the box fits in this block's shared memory at `dst`,
    /// aligned as its swizzle needs (1024 bytes for the 128-byte one); no
    /// one reads or writes those bytes until the barrier's phase completes.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn tma_load_2d(&self, dst: u32, map: *const TensorMap, xy: (i32, i32), bar: u32);
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`:
    /// copies the `bytes` at element `j` of the global `src` (`len` floats)
    /// to shared address `dst`, one contiguous run, and counts them against
    /// the barrier at `bar` (whose phase a [`ThreadCtx::mbarrier_arrive_expect_tx`]
    /// announced them in). The bulk copy engine moves them: the thread
    /// issues one instruction and goes on. Issued by one thread.
    ///
    /// # Safety
    /// `bytes` a multiple of 16, both addresses 16-byte aligned, the run
    /// inside `src` and inside this block's shared memory; no one reads or
    /// writes the shared bytes until the barrier's phase completes.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_bulk_load(&self, dst: u32, src: (*const f32, usize, usize), bytes: u32, bar: u32);
    /// `cp.async.bulk.global.shared::cta.bulk_group`: copies the `bytes` at
    /// shared address `src` to element `j` of the global `dst` (`len`
    /// floats), asynchronously, in the bulk group that the next
    /// [`ThreadCtx::bulk_commit`] closes. The shared bytes must have been
    /// written before it and made visible to the async proxy
    /// ([`ThreadCtx::fence_proxy_async`] by each writer, then a barrier);
    /// they may be overwritten only after [`ThreadCtx::bulk_wait_read`]
    /// says the group has read them. The emulator copies at once.
    ///
    /// # Safety
    /// As [`ThreadCtx::mem_bulk_load`], the run inside `dst`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mem_bulk_store(&self, dst: (*mut f32, usize, usize), src: u32, bytes: u32);
    /// `cp.async.bulk.commit_group`: closes this thread's bulk stores since
    /// the last commit into one group.
    fn bulk_commit(&self);
    /// `cp.async.bulk.wait_group.read N`: waits until at most `N` of this
    /// thread's committed groups have not yet read their shared memory.
    fn bulk_wait_read<const N: u32>(&self);
    /// `cp.async.bulk.wait_group 0`: waits until every group this thread
    /// committed has completed, its writes to global memory included.
    fn bulk_wait_all(&self);
    /// [`ThreadCtx::wgmma_wait`] for the 64 registers of an `m64n128`
    /// accumulator ([`ThreadCtx::wgmma_m64n128k8_tf32`]).
    fn wgmma_wait_n128<const N: u32>(&self, d: &mut [f32; 64]);
    /// `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32` with the
    /// scale-d flag: `D = A * B^T + (accumulate ? D : 0)` for the 64x8 `A`
    /// and the 128x8 `B` that the descriptors describe, as
    /// [`ThreadCtx::wgmma_m64n256k8_tf32`] (same fragment layout, columns
    /// `0..128`: `d[i]` is row `16 w + l / 4 + 8 ((i / 2) % 2)`, column
    /// `8 (i / 4) + 2 (l % 4) + i % 2`). With `accumulate` false the old `D`
    /// is not read: the product starts a new sum. `accumulate` must be the
    /// same in every thread of the warpgroup.
    ///
    /// # Safety
    /// As [`ThreadCtx::wgmma_m64n256k8_tf32`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wgmma_m64n128k8_tf32(&self, d: &mut [f32; 64], a: u64, b: u64, accumulate: bool);
    /// [`ThreadCtx::wgmma_wait_n128`] for a group of `wgmma`s that read `A`
    /// from registers ([`ThreadCtx::wgmma_m64n128k8_tf32_rs`]): `a`, the
    /// fragments of the groups this wait retires (eight, as 32 registers),
    /// are named too, as in [`ThreadCtx::wgmma_wait_rs`].
    fn wgmma_wait_n128_rs<const N: u32>(&self, d: &mut [f32; 64], a: &[f32; 32]);
    /// [`ThreadCtx::wgmma_m64n128k8_tf32`] with `A` in registers, laid out
    /// as [`ThreadCtx::wgmma_m64n256k8_tf32_rs`] says, and its rules: the
    /// registers that held `a` are not written before the group completes.
    ///
    /// # Safety
    /// As [`ThreadCtx::wgmma_m64n256k8_tf32`], for `b`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wgmma_m64n128k8_tf32_rs(&self, d: &mut [f32; 64], a: [f32; 4], b: u64, accumulate: bool);
    /// `%cluster_ctarank`: this block's rank in its thread-block cluster
    /// (`0..` the cluster's size; 0 in a launch without clusters).
    fn cluster_ctarank(&self) -> u32;
    /// `%cluster_nctarank`: the blocks of this block's cluster (1 in a launch
    /// without clusters).
    fn cluster_nctarank(&self) -> u32;
    /// `trap`: ends the launch with an error (on the host, the stream's next
    /// synchronisation fails); the emulator fails the launch with `why`. For
    /// a launch that cannot go on, where going on would hang or write wrong
    /// values.
    fn trap(&self, why: &'static str) -> !;
    /// Declares the kernel's launch bound: it is never launched with more
    /// than `N` threads a block. On the GPU it marks the kernel's PTX, and
    /// the build writes `.maxntid N, 1, 1` into the entry's header (see
    /// `build/ptx.rs`), so that ptxas allocates registers for `N` threads:
    /// without it, a kernel near 255 registers may get more than `65536 /
    /// N` from the driver's compiler and fail to launch. The emulator fails
    /// a launch of a bigger block with this reason. Call it once, first.
    fn launch_bound<const N: u32>(&self);
    /// [`ThreadCtx::launch_bound`] `N`, and asks ptxas to fit `B` such
    /// blocks on each SM at once: the build also writes `.minnctapersm B`,
    /// so that registers stay within `65536 / (N * B)` a thread (CUDA C's
    /// `__launch_bounds__(N, B)`). For a kernel whose speed is the warps it
    /// keeps resident to cover memory latency. The emulator checks `N` as
    /// `launch_bound` does. Call it once, first.
    fn launch_bounds<const N: u32, const B: u32>(&self);
    /// `setmaxnreg.dec.sync.aligned.u32 N` (`sm_90a`): this warpgroup's
    /// threads give up registers down to `N` each, into the block's pool,
    /// for another warpgroup's [`ThreadCtx::setmaxnreg_inc`]. Every thread
    /// of the warpgroup calls it; the emulator has no registers to move.
    fn setmaxnreg_dec<const N: u32>(&self);
    /// `setmaxnreg.inc.sync.aligned.u32 N` (`sm_90a`): this warpgroup's
    /// threads take registers from the block's pool, up to `N` each,
    /// waiting until another warpgroup has released enough. Every thread of
    /// the warpgroup calls it.
    fn setmaxnreg_inc<const N: u32>(&self);
    /// `barrier.cluster.arrive.relaxed.aligned`: this thread arrives at the
    /// cluster's barrier without ordering its memory accesses (a
    /// [`ThreadCtx::mbarrier_init_fence`] before it publishes mbarrier
    /// inits). Every thread of every block of the cluster arrives once, then
    /// waits ([`ThreadCtx::cluster_wait`]); work in between overlaps the wait.
    fn cluster_arrive_relaxed(&self);
    /// `barrier.cluster.wait.aligned`: waits until every thread of the
    /// cluster has arrived, acquiring what the arrivals released. The
    /// emulator orders everything before the wait before everything after,
    /// across the cluster, as a barrier of all its threads.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn cluster_wait(&self);
    /// `st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32`: writes
    /// the two floats to shared address `dst` *of block `rank` of this
    /// cluster* (`mapa` turns this block's addresses `dst` and `bar` into
    /// that block's) and counts their 8 bytes on that block's mbarrier at
    /// `bar`, whose waiters then see them ([`ThreadCtx::mbarrier_wait_cluster`]).
    ///
    /// # Safety
    /// `dst` (8-byte aligned) and `bar` lie in the shared memory of every
    /// block of the cluster, `bar` an initialised mbarrier there whose phase
    /// expects these bytes, which nobody else writes; block `rank` exists and
    /// has not exited.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn st_async_f32x2(&self, rank: u32, dst: u32, value: [f32; 2], bar: u32);
    /// [`ThreadCtx::mbarrier_wait`] with cluster scope
    /// (`mbarrier.try_wait.parity.acquire.cluster`): also acquires what other
    /// blocks of the cluster wrote towards the phase ([`ThreadCtx::st_async_f32x2`]).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn mbarrier_wait_cluster(&self, bar: u32, parity: u32);
}
