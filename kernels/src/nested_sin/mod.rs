//! Nested sine, `y = sin(sin(sin(sin(x))))`, f32, elementwise: fusion, and
//! what it takes to reach the memory roof once fused.
//!
//! The steps are listed on [`Variant`] and measured in `docs/nested_sin.md`.
//! Step 3 runs libdevice's own algorithm specialised to [-1, 1]
//! ([`math::sin_unit`], then the bare polynomial [`math::sin_quarter`]), so
//! it gives step 2's bits; step 4 trades accuracy (an absolute error that
//! grows with |x|, no relative bound) for the SFU; step 5 keeps `__nv_sinf`
//! for the first sine and computes the other three as one polynomial
//! ([`math::sin3_minimax`]): its own bits, within 4.5 ulp of f64.
//!
//! Every kernel walks the array with 16-byte loads and stores in a
//! grid-stride loop on a grid sized to the array ([`launch_dims`]);
//! starts that are not 16-byte aligned and lengths that are not multiples of
//! 4 take scalar head and tail loops ([`map`]).

use crate::registry::ladder;
use crate::vector::F4;
use crate::{LaunchDims, ThreadCtx};

/// A step's kernel, written `map_kernel!(pub unsafe fn name<C>(ctx, src,
/// dst, len) = map(f));`: the op's `run` parameters, and the step's
/// element function `f` applied to each element by [`map`]. Each step file
/// defines `f` (its idea) and declares its kernel with this. A step that
/// ends `= map(f), blocks_per_sm(B);` asks ptxas for registers that let `B`
/// blocks of [`BLOCK`] threads share an SM ([`ThreadCtx::launch_bounds`])
/// in the modules for Hopper and later: sm_80's ptxas spills the steps
/// that ask for eight to fit them in 32 registers, so the A100's module
/// keeps the registers ptxas chooses.
macro_rules! map_kernel {
    (pub unsafe fn $name:ident<$C:ident>($ctx:ident, $src:ident, $dst:ident, $len:ident) = map($f:ident)) => {
        map_kernel!(pub unsafe fn $name<$C>($ctx, $src, $dst, $len) = map($f), {});
    };
    (pub unsafe fn $name:ident<$C:ident>($ctx:ident, $src:ident, $dst:ident, $len:ident) = map($f:ident), blocks_per_sm($b:literal)) => {
        map_kernel!(pub unsafe fn $name<$C>($ctx, $src, $dst, $len) = map($f), {
            #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90"))]
            $ctx.launch_bounds::<{ super::BLOCK }, $b>();
        });
    };
    (pub unsafe fn $name:ident<$C:ident>($ctx:ident, $src:ident, $dst:ident, $len:ident) = map($f:ident), { $($first:tt)* }) => {
        #[doc = concat!("The kernel: [`", stringify!($f), "`] on each element, by [`map`](super::map).")]
        ///
        /// # Safety
        /// As [`map`](super::map).
        #[inline(always)]
        pub unsafe fn $name<$C: $crate::ThreadCtx>($ctx: &$C, $src: *const f32, $dst: *mut f32, $len: u64) {
            $($first)*
            // SAFETY: forwarded from the caller.
            unsafe { super::map($ctx, $src, $dst, $len, $f) }
        }
    };
}

/// The nested-sine ladder, handed to a generator (`ladder!` here, the
/// launchers in `coalesce-host`). See [`crate::registry`].
#[macro_export]
#[doc(hidden)]
macro_rules! nested_sin_steps {
    ($then:ident $($pass:tt)*) => {
        $then! {
            $($pass)*
            op: "nested_sin";
            /// The ways to compute the nested sine, in teaching order.
            pub enum Variant, geometry Geometry;
            unsafe fn run<C>(ctx, src: *const f32, dst: *mut f32, len: u64);

            /// one `sin` (libdevice `__nv_sinf`) per launch; four launches are the unfused form
            Unfused => unfused: "1" in "01_sin.rs" { entry: "sin_f32", };
            /// all four `__nv_sinf` in one kernel: one read, one write, instruction-bound
            Fused => fused: "2" in "02_fused.rs";
            /// after the first sine every argument is in [-1, 1], where libdevice's algorithm shrinks to a few selects: the same bits
            FusedReduced => fused_reduced: "3" in "03_fused_reduced.rs";
            /// four `sin.approx.f32` (the SFU): an absolute error that grows with |x|
            Fast => fast: "4" in "04_fast.rs";
            /// after the first sine, sin(sin(sin(s))) on [-1, 1] is one odd degree-17 minimax polynomial: 10 instructions instead of 37, its own bits, within 4.5 ulp
            Poly => poly: "5" in "05_poly.rs";
        }
    };
}
nested_sin_steps!(ladder);

pub mod math;

/// Threads per block of every nested-sin kernel.
pub const BLOCK: u32 = 256;
/// Elements per 16-byte vector.
pub const VECTOR: u32 = 4;

/// How a nested-sin version is launched: every launch is [`map`] on
/// [`launch_dims`]; the versions differ in how many launches
/// one nested sine takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Kernel launches per nested sine.
    pub launches: u32,
}

impl Geometry {
    /// No nested sine uses shared memory.
    pub const fn opt_in_shared(self) -> bool {
        false
    }
}

impl Variant {
    /// The fastest version that gives CUDA's own bits (`sinf` four times);
    /// [`Variant::Poly`] is faster where the instructions bind, with its own
    /// bits and bound.
    pub const BEST: Variant = Variant::FusedReduced;

    /// Kernel launches per nested sine.
    pub const fn launches(self) -> u32 {
        self.geometry().launches
    }
}

/// 16-byte vectors each thread takes: the kernels' grid-stride loop runs
/// this many times.
pub const VECTORS_PER_THREAD: u32 = 4;

/// Launch geometry for `len` elements: [`BLOCK`] threads per block, enough
/// blocks for [`VECTORS_PER_THREAD`] 16-byte vectors a thread, at most
/// `max_blocks` (the device's grid limit; the kernels loop over the rest).
///
/// A grid sized to the array, not one resident wave looping over it: the
/// block scheduler hands out blocks in launch order, so the bytes in flight
/// stay in a few compact windows sweeping memory, where a resident wave's
/// blocks drift apart over the whole array (likely; its copy lost 6-12% of
/// `cuMemcpyDtoD`, `docs/measurements/2026-11-28-copy-order` at commit f58f145). Four
/// vectors a thread, not one, so that the steps whose instructions weigh
/// pay a block's start and drain a quarter as often (`docs/nested_sin.md`
/// measures 2, 4 and 8 on the H200, 1, 2 and 4 on the H100).
pub const fn launch_dims(len: u64, max_blocks: u32) -> LaunchDims {
    LaunchDims::covering(len, (VECTOR * VECTORS_PER_THREAD) as u64, BLOCK, max_blocks)
}

/// `dst[i] = f(src[i])` for `i < len`: the elementwise walk every nested-sin
/// kernel shares.
///
/// # Thread mapping
/// Grid-stride: thread `g = blockIdx.x * blockDim.x + threadIdx.x` takes
/// vectors `g, g + G, ...` with `G` the number of threads in the grid
/// ([`launch_dims`] sizes it for [`VECTORS_PER_THREAD`] a thread).
///
/// # Memory pattern
/// When `src` and `dst` are equally misaligned (both 16-byte aligned, say,
/// or both sub-slices at the same offset), the first `0..=3` elements go
/// scalar until both are 16-byte aligned, then each thread loads and stores
/// 16 bytes per step (`ld.global.v4.f32`: a warp moves 512 contiguous
/// bytes per instruction), and the last `< 4` elements go scalar. Otherwise
/// every element goes scalar (still coalesced, 128 bytes per warp).
///
/// # Safety
/// `src` valid for reading and `dst` for writing `len` floats; they are the
/// same pointer (in place: each element is read before it is written, by the
/// same thread) or do not overlap.
#[inline(always)]
pub unsafe fn map<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64, f: impl Fn(f32) -> f32) {
    let (t, b, bd, gd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim(), ctx.grid_dim());
    let first = b.x as u64 * bd.x as u64 + t.x as u64;
    let stride = gd.x as u64 * bd.x as u64;
    let (s_off, d_off) = (src as usize % 16, dst as usize % 16);
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    // Elements before both pointers reach a 16-byte boundary, and vectors after.
    let (head, vectors) = if s_off == d_off {
        let head = (((16 - s_off) % 16 / 4) as u64).min(len);
        (head, (len - head) / 4)
    } else {
        (len, 0)
    };
    let mut i = first;
    while i < head {
        // SAFETY: i < head <= len.
        let x = unsafe { src.load(i as usize) };
        // SAFETY: as above.
        unsafe { dst.store(i as usize, f(x)) };
        i += stride;
    }
    // SAFETY: head <= len.
    let (vsrc, vdst) = unsafe { (src.at(head as usize, len - head), dst.at(head as usize, len - head)) };
    let (vsrc, vdst) = (vsrc.cast::<F4>(vectors), vdst.cast::<F4>(vectors));
    let mut i = first;
    while i < vectors {
        // SAFETY: head + 4i + 3 < len; both bases are 16-byte aligned here.
        let F4([a, b, c, d]) = unsafe { vsrc.load(i as usize) };
        // SAFETY: as above.
        unsafe { vdst.store(i as usize, F4([f(a), f(b), f(c), f(d)])) };
        i += stride;
    }
    let mut i = head + vectors * 4 + first;
    while i < len {
        // SAFETY: i < len.
        let x = unsafe { src.load(i as usize) };
        // SAFETY: as above.
        unsafe { dst.store(i as usize, f(x)) };
        i += stride;
    }
}
