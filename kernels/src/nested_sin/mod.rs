//! Nested sine, `y = sin(sin(sin(sin(x))))`, f32, elementwise: fusion, and
//! what it takes to reach the memory roof once fused.
//!
//! | step | kernel | idea | what it costs |
//! | --- | --- | --- | --- |
//! | 1 | [`sin`] | one `sin` (libdevice `__nv_sinf`) per launch; four launches are the unfused form | 4 reads + 4 writes of the array |
//! | 2 | [`fused`] | all four `__nv_sinf` in one kernel: one read, one write | instruction-bound: the general `sinf` (range reduction, quadrant logic, a slow-path test) four times |
//! | 3 | [`fused_reduced`] | the first sine is `__nv_sinf`; after it every argument is in [-1, 1], where libdevice's own algorithm shrinks to a few selects ([`math::sin_unit`]), and after three to its bare polynomial ([`math::sin_quarter`]) | nothing: the same operations as step 2 on those arguments, so the same bits |
//! | 4 | [`fast`] | four `sin.approx.f32` (the SFU) | accuracy: an absolute error that grows with \|x\| (3.7e-5 for \|x\| <= 100 pi), no relative bound |
//!
//! Every kernel walks the array with 16-byte loads and stores in a
//! grid-stride loop sized from the multiprocessor count ([`launch_dims`]);
//! starts that are not 16-byte aligned and lengths that are not multiples of
//! 4 take scalar head and tail loops ([`map`]).

#[path = "04_fast.rs"]
mod fast_kernel;
#[path = "02_fused.rs"]
mod fused_kernel;
#[path = "03_fused_reduced.rs"]
mod fused_reduced_kernel;
pub mod math;
#[path = "01_sin.rs"]
mod sin_kernel;

pub use fast_kernel::fast;
pub use fused_kernel::fused;
pub use fused_reduced_kernel::fused_reduced;
pub use sin_kernel::sin;

use crate::vector::F4;
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The `.entry` kernels of this module, one per [`Variant`].
pub const ENTRIES: &[&str] = &crate::entries_of_variants!(Variant);

/// Threads per block of every nested-sin kernel.
pub const BLOCK: u32 = 256;
/// Elements per 16-byte vector.
pub const VECTOR: u32 = 4;

/// The ways to compute the nested sine, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Step 1: the `sin` kernel launched four times (in place after the first).
    Unfused,
    /// Step 2: four `__nv_sinf` in one kernel.
    Fused,
    /// Step 3: `__nv_sinf`, then libdevice's algorithm specialised to [-1, 1].
    FusedReduced,
    /// Step 4: four `sin.approx.f32`.
    Fast,
}

impl Variant {
    /// Every version, in teaching order.
    pub const ALL: [Variant; 4] = [Variant::Unfused, Variant::Fused, Variant::FusedReduced, Variant::Fast];

    /// The fastest version that keeps CUDA's accuracy.
    pub const BEST: Variant = Variant::FusedReduced;

    /// Short name used by benches, reports and the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Unfused => "unfused",
            Variant::Fused => "fused",
            Variant::FusedReduced => "fused_reduced",
            Variant::Fast => "fast",
        }
    }

    /// Name of the `.entry` kernel in the PTX module.
    pub const fn entry_point(self) -> &'static str {
        match self {
            Variant::Unfused => "sin_f32",
            Variant::Fused => "nested_sin_fused",
            Variant::FusedReduced => "nested_sin_fused_reduced",
            Variant::Fast => "nested_sin_fast",
        }
    }

    /// Kernel launches per nested sine.
    pub const fn launches(self) -> u32 {
        match self {
            Variant::Unfused => 4,
            _ => 1,
        }
    }

    /// The function one launch applies to each element.
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Variant::Unfused => sin_kernel::sin1(x),
            Variant::Fused => fused_kernel::sin4(x),
            Variant::FusedReduced => fused_reduced_kernel::sin4(x),
            Variant::Fast => fast_kernel::sin4(x),
        }
    }

    /// Runs one launch's body for the calling thread.
    ///
    /// # Safety
    /// As [`map`].
    #[inline(always)]
    pub unsafe fn run<C: ThreadCtx>(self, ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Variant::Unfused => sin(ctx, src, dst, len),
                Variant::Fused => fused(ctx, src, dst, len),
                Variant::FusedReduced => fused_reduced(ctx, src, dst, len),
                Variant::Fast => fast(ctx, src, dst, len),
            }
        }
    }
}

/// Launch geometry for `len` elements: [`BLOCK`] threads per block, enough
/// blocks for one 16-byte vector per thread, at most `sm_count *
/// blocks_per_sm` (one full wave; the kernels loop over the rest).
///
/// `blocks_per_sm` should be what the kernel's occupancy allows, so that the
/// wave is exactly resident and no SM gets a second, partial wave.
pub const fn launch_dims(len: u64, sm_count: u32, blocks_per_sm: u32) -> LaunchDims {
    let needed = len.div_ceil((VECTOR * BLOCK) as u64);
    let wave = sm_count as u64 * blocks_per_sm as u64;
    let blocks = if needed < wave { needed } else { wave };
    let blocks = if blocks == 0 { 1 } else { blocks as u32 };
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(BLOCK, 1), shared_bytes: 0 }
}

/// `dst[i] = f(src[i])` for `i < len`: the elementwise walk every nested-sin
/// kernel shares.
///
/// # Thread mapping
/// Grid-stride: thread `g = blockIdx.x * blockDim.x + threadIdx.x` takes
/// vectors `g, g + G, g + 2G, ...` with `G` the number of threads in the grid.
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
        unsafe { *dst.add(i as usize) = f(*src.add(i as usize)) };
        i += stride;
    }
    // SAFETY (pointer arithmetic): head <= len.
    let (vsrc, vdst) = unsafe { (src.add(head as usize).cast::<F4>(), dst.add(head as usize).cast::<F4>()) };
    let mut i = first;
    while i < vectors {
        // SAFETY: head + 4i + 3 < len; both bases are 16-byte aligned here.
        let F4([a, b, c, d]) = unsafe { *vsrc.add(i as usize) };
        // SAFETY: as above.
        unsafe { *vdst.add(i as usize) = F4([f(a), f(b), f(c), f(d)]) };
        i += stride;
    }
    let mut i = head + vectors * 4 + first;
    while i < len {
        // SAFETY: i < len.
        unsafe { *dst.add(i as usize) = f(*src.add(i as usize)) };
        i += stride;
    }
}
