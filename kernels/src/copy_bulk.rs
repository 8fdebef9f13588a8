//! The copy by the bulk copy engine (`cp.async.bulk`, `sm_90a`).
//!
//! [`crate::copy::copy`] keeps 16-byte loads in flight from every thread;
//! the driver's `cuMemcpyDtoD` uses no SM at all (ncu finds no kernel in
//! it: the GPU's copy engines move the bytes). Here one thread of each
//! block hands 16 KiB runs to the SM's bulk copy unit: a load into one of
//! [`BULK_STAGES`] shared buffers, completing on that buffer's mbarrier,
//! then a store back out of it. Loads of the next three chunks are in
//! flight while the thread waits for the first, and no thread touches the
//! bytes. Its registry entry is in [`crate::copy::STEPS`]. Measured
//! (`docs/measurements/2026-11-24-copy-bulk` at commit f58f145): on an H100 2.2 points of
//! `cuMemcpyDtoD` above a grid-stride wave of 16-byte copies (93.7% and
//! 95.8% at 8192^2 and 16384^2), on an H200 level with it; one vector a
//! thread ([`crate::copy::copy`] as it is now) beats both
//! (`docs/measurements/2026-11-28-copy-order` at commit f58f145).

use crate::{Dim3, LaunchDims, ThreadCtx};

/// Floats per chunk: 16 KiB, one bulk copy each way.
pub const BULK_STAGE_FLOATS: u32 = 4096;
/// Shared buffers per block.
pub const BULK_STAGES: u32 = 4;
/// Blocks per SM (64 KiB of buffers each).
pub const BULK_BLOCKS_PER_SM: u32 = 2;
/// Threads per block: one issues the copies; the warp shares the scalar
/// head and tail.
pub const BULK_BLOCK: u32 = 32;
/// Bytes of shared memory per block: the buffers, then one 8-byte mbarrier
/// per buffer.
pub const BULK_SHARED_BYTES: u32 = BULK_STAGES * BULK_STAGE_FLOATS * 4 + 8 * BULK_STAGES;

const CHUNK: u64 = BULK_STAGE_FLOATS as u64;
const STAGES: u64 = BULK_STAGES as u64;

/// Grid and block for `len` floats on `sm_count` SMs: a block per chunk, at
/// most [`BULK_BLOCKS_PER_SM`] per SM (the blocks loop over the rest).
pub const fn copy_bulk_dims(len: u64, sm_count: u32) -> LaunchDims {
    let chunks = len.div_ceil(CHUNK);
    let wave = sm_count as u64 * BULK_BLOCKS_PER_SM as u64;
    let blocks = if chunks < wave { chunks } else { wave };
    let blocks = if blocks == 0 { 1 } else { blocks as u32 };
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(BULK_BLOCK, 1), shared_bytes: BULK_SHARED_BYTES }
}

/// `dst[i] = src[i]` for `i < len`.
///
/// # Memory pattern
/// Block `b` of `G` owns chunks `b, b + G, ..` of the 16-byte-aligned
/// middle of the array; its thread 0 keeps [`BULK_STAGES`] chunks in
/// flight: chunk `j` lives in buffer `j % 4`, its load is phase `j / 4` of
/// that buffer's mbarrier, and the buffer takes chunk `j + 4` once the
/// store of chunk `j` has read it (`cp.async.bulk.wait_group.read`). Before
/// the block ends, the thread waits for its stores: shared memory must
/// outlive the copies that read it. Elements before the first 16-byte
/// boundary and after the last whole vector go scalar; a source and a
/// destination misaligned by different amounts take [`crate::copy::copy`].
///
/// # Safety
/// `src` and `dst` valid for `len` floats, not overlapping;
/// [`BULK_SHARED_BYTES`] of shared memory; an `sm_90` GPU.
#[inline(always)]
pub unsafe fn copy_bulk<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    let offset = src as usize % 16;
    if offset != dst as usize % 16 {
        // SAFETY: forwarded from the caller.
        return unsafe { crate::copy::copy(ctx, src, dst, len) };
    }
    let (t, block, grid) = (ctx.thread_idx().x as u64, ctx.block_idx().x as u64, ctx.grid_dim().x as u64);
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    let head = (((16 - offset) % 16 / 4) as u64).min(len);
    let body = (len - head) / 4 * 4;
    let mut i = block * BULK_BLOCK as u64 + t;
    while i < len - body {
        let e = (if i < head { i } else { i + body }) as usize;
        // SAFETY: e < len.
        unsafe { dst.store(e, src.load(e)) };
        i += grid * BULK_BLOCK as u64;
    }
    if t != 0 {
        return;
    }

    let buffers = ctx.shared::<f32>((STAGES * CHUNK + 2 * STAGES) as usize);
    let base = ctx.shared_addr(buffers.as_ptr());
    let full = |s: u64| base + (STAGES * CHUNK * 4 + 8 * s) as u32;
    let chunks = body.div_ceil(CHUNK);
    let mine = if chunks > block { (chunks - block).div_ceil(grid) } else { 0 };
    // Chunk `j` of this block: where it starts, and its floats (a multiple
    // of 4: only the last chunk is short).
    let chunk = |j: u64| {
        let at = head + (block + j * grid) * CHUNK;
        (at as usize, CHUNK.min(head + body - at) as usize)
    };
    let fill = |j: u64| {
        let s = j % STAGES;
        let (at, count) = chunk(j);
        ctx.mbarrier_arrive_expect_tx(full(s), 4 * count as u32);
        // SAFETY: the run lies in the aligned middle of `src`; buffer `s` is
        // free (its store has read it, or it was never used).
        unsafe { buffers.bulk_load((s * CHUNK) as usize, &src, at, count, full(s)) };
    };
    for s in 0..STAGES {
        ctx.mbarrier_init(full(s), 1);
    }
    ctx.mbarrier_init_fence();
    (0..mine.min(STAGES)).for_each(fill);
    for j in 0..mine {
        let s = j % STAGES;
        ctx.mbarrier_wait(full(s), ((j / STAGES) & 1) as u32);
        let (at, count) = chunk(j);
        // SAFETY: buffer `s` holds chunk `j` (its load completed the phase
        // waited for); the run lies in the aligned middle of `dst`.
        unsafe { buffers.bulk_store((s * CHUNK) as usize, &dst, at, count) };
        ctx.bulk_commit();
        // Buffer (j - 1) % 4 takes chunk j + 3 once chunk j - 1's store has
        // read it: one store in flight behind this one.
        if j >= 1 && j - 1 + STAGES < mine {
            ctx.bulk_wait_read::<1>();
            fill(j - 1 + STAGES);
        }
    }
    ctx.bulk_wait_all();
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
crate::registry::entry!(copy_bulk_f32(src: *const f32, dst: *mut f32, len: u64) => copy_bulk);
