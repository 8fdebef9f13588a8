//! Step 6: the array staged through shared memory by bulk copies. Step 5
//! computes at the pace of its own loads: a grid-stride loop of 16-byte
//! loads keeps 90-94% of a device-to-device copy's bytes in flight.
//! (`docs/nested_sin.md`, "6. staged")
//!
//! **Idea:** let the copy engine move the bytes. One thread of each block
//! issues a bulk copy (`cp.async.bulk`, one instruction for a 16 KiB run)
//! of each chunk the block owns into one of [`STAGES`] buffers of shared
//! memory; its completion counts on an mbarrier. The block's threads wait
//! on it, apply [`sin4`] in place in shared memory, and after a barrier
//! the same thread copies the buffer back out with one bulk store. The
//! threads issue no global load or store at all, so the loads of the
//! next three chunks are in flight while they compute this one.
//!
//! **Pipeline:** chunk `j` of a block lives in buffer `j % 4`; its fill is
//! the phase `j / 4` of that buffer's mbarrier. The thread refills buffer
//! `(j - 1) % 4` (with chunk `j + 3`) at step `j`, once the bulk store of
//! chunk `j - 1` has read it (`cp.async.bulk.wait_group.read 1`), so one
//! store and three loads are in flight behind the buffer in use. Before the
//! block ends, the thread waits for its stores to complete: shared memory
//! must outlive the copies that read it.
//!
//! **Bits:** step 5's, element for element (the same [`sin4`]).
//! Starts that are not 16-byte aligned the same way take step 5's
//! grid-stride [`map`]; elements before the first 16-byte boundary and
//! after the last whole vector go scalar.

use super::poly::sin4;
use super::{Geometry, map};
use crate::vector::F4;
use crate::{Dim3, LaunchDims, ThreadCtx};

/// Floats per chunk: 16 KiB, one bulk copy each way.
pub const STAGE_FLOATS: u32 = 4096;
/// Shared buffers per block.
pub const STAGES: u32 = 4;
/// Blocks per SM: two blocks of 64 KiB, so that one computes while the
/// other waits.
pub const STAGED_BLOCKS_PER_SM: u32 = 2;
/// Threads per block.
pub const STAGED_BLOCK: u32 = 512;
/// Bytes of shared memory per block: the buffers, then one 8-byte mbarrier
/// per buffer.
pub const STAGED_SHARED_BYTES: u32 = STAGES * STAGE_FLOATS * 4 + 8 * STAGES;

/// How this step is launched: one launch, with shared memory.
pub const GEOMETRY: Geometry = Geometry { launches: 1, shared_bytes: STAGED_SHARED_BYTES };

/// Grid and block for `len` elements on `sm_count` SMs: a block per chunk,
/// at most [`STAGED_BLOCKS_PER_SM`] per SM (the blocks loop over the rest).
pub const fn staged_dims(len: u64, sm_count: u32) -> LaunchDims {
    let chunks = len.div_ceil(STAGE_FLOATS as u64);
    let wave = sm_count as u64 * STAGED_BLOCKS_PER_SM as u64;
    let blocks = if chunks < wave { chunks } else { wave };
    let blocks = if blocks == 0 { 1 } else { blocks as u32 };
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(STAGED_BLOCK, 1), shared_bytes: STAGED_SHARED_BYTES }
}

const CHUNK: u64 = STAGE_FLOATS as u64;
const BUFFERS: u64 = STAGES as u64;

/// The kernel: [`sin4`] on each element, the bytes moved by bulk copies
/// through [`STAGES`] shared buffers.
///
/// # Thread mapping
/// [`staged_dims`]: block `b` of `G` owns chunks `b, b + G, ..` of the
/// 16-byte-aligned middle of the array; thread 0 issues its copies, all
/// [`STAGED_BLOCK`] threads compute, four floats each per 1024. The scalar
/// head and tail are grid-stride over every thread.
///
/// # Safety
/// As [`map`]; [`STAGED_SHARED_BYTES`] of shared memory.
#[inline(always)]
pub unsafe fn staged<C: ThreadCtx>(ctx: &C, src: *const f32, dst: *mut f32, len: u64) {
    let (s_off, d_off) = (src as usize % 16, dst as usize % 16);
    if s_off != d_off {
        // SAFETY: forwarded from the caller.
        return unsafe { map(ctx, src, dst, len, sin4) };
    }
    let (tid, block, grid) = (ctx.thread_idx().x as u64, ctx.block_idx().x as u64, ctx.grid_dim().x as u64);
    let (src, dst) = (ctx.global(src, len), ctx.global_mut(dst, len));
    // Elements before both pointers reach a 16-byte boundary, and the whole
    // vectors after.
    let head = (((16 - s_off) % 16 / 4) as u64).min(len);
    let body = (len - head) / 4 * 4;
    let scalar = len - body;
    let mut i = block * STAGED_BLOCK as u64 + tid;
    while i < scalar {
        let e = (if i < head { i } else { i + body }) as usize;
        // SAFETY: e < len.
        unsafe { dst.store(e, sin4(src.load(e))) };
        i += grid * STAGED_BLOCK as u64;
    }

    let buffers = ctx.shared::<f32>((STAGES * STAGE_FLOATS + 2 * STAGES) as usize);
    let base = ctx.shared_addr(buffers.as_ptr());
    let full = |s: u64| base + (BUFFERS * CHUNK * 4 + 8 * s) as u32;
    let chunks = body.div_ceil(CHUNK);
    let mine = if chunks > block { (chunks - block).div_ceil(grid) } else { 0 };
    // Chunk `j` of this block: where it starts in the array, and its floats
    // (a multiple of 4: the last chunk is short).
    let chunk = |j: u64| {
        let at = head + (block + j * grid) * CHUNK;
        (at as usize, CHUNK.min(head + body - at) as usize)
    };
    let fill = |j: u64| {
        let s = j % BUFFERS;
        let (at, count) = chunk(j);
        ctx.mbarrier_arrive_expect_tx(full(s), 4 * count as u32);
        // SAFETY: the run lies in the aligned middle of `src`; buffer `s` is
        // free (its last store has read it, or it was never used).
        unsafe { buffers.bulk_load((s * CHUNK) as usize, &src, at, count, full(s)) };
    };

    let leader = tid == 0;
    if leader {
        for s in 0..BUFFERS {
            ctx.mbarrier_init(full(s), 1);
        }
        ctx.mbarrier_init_fence();
    }
    ctx.sync_threads();
    if leader {
        (0..mine.min(BUFFERS)).for_each(fill);
    }
    for j in 0..mine {
        let s = j % BUFFERS;
        ctx.mbarrier_wait(full(s), ((j / BUFFERS) & 1) as u32);
        let (at, count) = chunk(j);
        let first = (s * CHUNK) as usize;
        let mut v = 4 * tid as usize;
        while v < count {
            // SAFETY: inside buffer `s`, 16-byte aligned; its fill completed.
            unsafe {
                let F4([a, b, c, d]) = buffers.load_as::<F4>(first + v);
                buffers.store_f32x4(first + v, [sin4(a), sin4(b), sin4(c), sin4(d)]);
            }
            v += 4 * STAGED_BLOCK as usize;
        }
        // Every thread's results, visible to the bulk store.
        ctx.fence_proxy_async();
        ctx.sync_threads();
        if leader {
            // SAFETY: buffer `s` holds chunk `j`'s results; the run lies in
            // the aligned middle of `dst`.
            unsafe { buffers.bulk_store(first, &dst, at, count) };
            ctx.bulk_commit();
            if j >= 1 && j - 1 + BUFFERS < mine {
                ctx.bulk_wait_read::<1>();
                fill(j - 1 + BUFFERS);
            }
        }
    }
    if leader {
        ctx.bulk_wait_all();
    }
}
