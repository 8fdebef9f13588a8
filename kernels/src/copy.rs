//! Copies: the bandwidth roof, and what one launch per strided column costs.
//! The kernels are listed in [`STEPS`].

use crate::mem::Strided;
use crate::vector::F4;
use crate::{LaunchDims, ThreadCtx};

use crate::registry::{Step, utilities};

/// This module's entries of the registry.
pub const STEPS: &[Step] = utilities! {
    op: "copy";
    /// our own device-to-device copy: one 16-byte vector a thread, blocks streaming through memory in launch order; the roof a transpose is measured against, beside `cuMemcpyDtoD`
    copy => "copy_f32" in "copy.rs", geometry "copy_dims(len, max_blocks)";
    /// one strided vector (a column) into another: one launch per column is how not to transpose
    copy_strided => "copy_strided_f32" in "copy.rs", geometry "copy_strided_dims(len)";
    /// our copy by the bulk copy engine: one thread a block issues 16 KiB `cp.async.bulk` loads and stores through four shared buffers (`sm_90a`: PTX ISA 8.0)
    copy_bulk => "copy_bulk_f32" in "copy_bulk.rs", geometry "copy_bulk_dims(len, sm_count)" {
        needs: "sm_90a",
        opt_in_shared: true,
    };
};

/// Threads per block of both copy kernels.
pub const COPY_BLOCK: u32 = 256;

/// Launch geometry of [`copy`]: a block of [`COPY_BLOCK`] threads per 4096
/// bytes, one 16-byte vector a thread, at most `max_blocks` blocks (the
/// device's grid limit; the kernel loops past it).
///
/// One vector a thread, not a wave of resident blocks looping over the
/// array: the block scheduler hands out blocks in launch order, so the
/// bytes in flight stay one compact window sweeping memory. A grid-stride
/// wave (8 blocks of 256 a SM) measured 88-94% of `cuMemcpyDtoD` on an
/// H100 and an H200 where this grid measured 97-101%
/// (`docs/measurements/2026-11-28-copy-order` at commit f58f145); that the wave's blocks
/// drift apart over the array is the likely reason, not profiled.
pub const fn copy_dims(len: u64, max_blocks: u32) -> LaunchDims {
    LaunchDims::covering(len, 4, COPY_BLOCK, max_blocks)
}

/// Launch geometry of [`copy_strided`] for `len` elements (one thread each).
pub const fn copy_strided_dims(len: u32) -> LaunchDims {
    LaunchDims::linear(len.div_ceil(COPY_BLOCK), COPY_BLOCK)
}

/// `dst[i] = src[i]` for `i < len`.
///
/// # Memory pattern
/// Thread `g` of the grid copies 16-byte vector `g` (and `g + G`, ... past
/// a capped grid of `G` threads): a warp reads and writes 512 contiguous
/// bytes per instruction. Buffers not 16-byte aligned take a
/// scalar loop (still coalesced); the last `len % 4` elements go scalar.
///
/// # Safety
/// `src` and `dst` valid for `len` floats, not overlapping.
#[inline(always)]
pub unsafe fn copy<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    let (t, b, bd, gd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim(), ctx.grid_dim());
    let first = b.x as u64 * bd.x as u64 + t.x as u64;
    let stride = gd.x as u64 * bd.x as u64;
    let vectors = if (src as usize | dst as usize).is_multiple_of(16) { len / 4 } else { 0 };
    let (src4, dst4) = (ctx.global(src.cast::<F4>(), len / 4), ctx.global_mut(dst.cast::<F4>(), len / 4));
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    let mut i = first;
    while i < vectors {
        // SAFETY: 4*i + 3 < len; both bases 16-byte aligned.
        let F4([a, b, c, d]) = unsafe { src4.load(i as usize) };
        // Rebuilt from its lanes so LLVM emits one v4 store, not a 16-byte
        // memcpy (which it lowers to two 8-byte accesses).
        // SAFETY: as above.
        unsafe { dst4.store(i as usize, F4([a, b, c, d])) };
        i += stride;
    }
    let mut i = vectors * 4 + first;
    while i < len {
        // SAFETY: i < len.
        unsafe { dst.store(i as usize, src.load(i as usize)) };
        i += stride;
    }
}

/// `dst[i * dst_stride] = src[i * src_stride]` for `i < len`: one column of a
/// matrix into one row of another, one element per thread.
///
/// # Safety
/// Both strided ranges valid, not overlapping.
#[inline(always)]
pub unsafe fn copy_strided<C: ThreadCtx>(
    ctx: &C, src: *const f32, src_stride: u64, dst: *mut f32, dst_stride: u64, len: u32,
) {
    let src = ctx.global(src, Strided { count: len, stride: src_stride });
    let dst = ctx.global_mut(dst, Strided { count: len, stride: dst_stride });
    let i = ctx.block_idx().x as u64 * ctx.block_dim().x as u64 + ctx.thread_idx().x as u64;
    if i < len as u64 {
        // SAFETY: i < len: inside both strided ranges.
        unsafe { dst.store((i * dst_stride) as usize, src.load((i * src_stride) as usize)) };
    }
}

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(copy_f32(src: *const f32, dst: *mut f32, len: u64) => copy);

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(
    copy_strided_f32(src: *const f32, src_stride: u64, dst: *mut f32, dst_stride: u64, len: u32) => copy_strided
);
