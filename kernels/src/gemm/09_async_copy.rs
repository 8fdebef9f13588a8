//! Step 9: asynchronous copies, three tiles in flight.
//!
//! **Idea:** step 7 moves each tile from global to shared memory through
//! registers: a thread loads its share into registers, computes the current
//! tile, then stores the share to shared memory. `cp.async` (sm_80 and
//! later) copies global to shared memory directly: no registers hold the
//! data, nothing waits for it but the barrier before the tile is used, and a
//! copy can zero-fill, which handles every edge of the matrices without a
//! branch. With copies this cheap to keep in flight, the loop keeps *three*
//! tiles in flight (`cp.async.commit_group` per tile,
//! `cp.async.wait_group 1` before using the oldest), one barrier per tile.
//!
//! **What it fixes:** step 7's edge blocks. There, loads through registers
//! had to be checked or clamped per element, and ptxas, short of registers
//! (~240 per thread), scheduled such loads after the FMAs they were meant to
//! overlap (docs/gemm.md, "Shapes that are not multiples of the tile").
//! Here an element outside `A` or `B` is a copy of 0 source bytes: every
//! block runs the same loop, interior or edge, aligned or not.
//!
//! **What it costs:** three stages of shared memory (37 KiB), and `A`'s
//! transposed layout (see step 5) means 4-byte copies for `A`, one per
//! element, where step 7's interior loop moves 16 bytes per load.
//!
//! **Geometry:** step 7's ([`DB`]): a 128x256x8 block tile, 8 warps of 64x64,
//! 8x16 outputs per thread.

use super::tiles::TileCtx;
use super::warptile_kernel::{Acc, WarpTiling, compute_tile, store_acc, thread_origin, tile_ctx};
use super::{DB, F4, Problem};
use crate::ThreadCtx;

/// Step 9's geometry: step 7's.
pub const AC: WarpTiling = DB;
/// Tiles in flight: the one being computed and two being copied.
pub const ASYNC_STAGES: u32 = 3;
/// Shared memory of step 9: [`ASYNC_STAGES`] buffers of step 6's layout.
pub const ASYNC_SHARED_FLOATS: u32 = ASYNC_STAGES * AC.shared_floats();
const _: () = assert!(AC.is_valid() && ASYNC_STAGES >= 2 && AC.shared_floats().is_multiple_of(4));

/// `C = alpha * A * B + beta * C` with tiles moved by asynchronous copies,
/// [`ASYNC_STAGES`] in flight.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: [`ASYNC_SHARED_FLOATS`] floats.
///
/// # Thread mapping
/// As [`super::warptile`], with [`AC`].
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn async_copy<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    const MI: usize = AC.mi as usize;
    const NI: usize = AC.ni as usize;
    let t = tile_ctx(ctx, &AC, a, b, c, &p);
    // SAFETY (both): forwarded. B rows 16-byte aligned: one 16-byte copy
    // per four floats; else four 4-byte ones. Uniform over the grid.
    unsafe {
        if t.bc_vec {
            body::<C, MI, NI, true>(ctx, &AC, a, b, c, &p, &t)
        } else {
            body::<C, MI, NI, false>(ctx, &AC, a, b, c, &p, &t)
        }
    }
}

/// The tile loop.
///
/// # Safety
/// As [`async_copy`]; `VEC_B` only if `t.bc_vec`.
#[inline(always)]
unsafe fn body<C: ThreadCtx, const MI: usize, const NI: usize, const VEC_B: bool>(
    ctx: &C,
    g: &WarpTiling,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    p: &Problem,
    t: &TileCtx,
) {
    let stages = ASYNC_STAGES as usize;
    let (bk, stage_floats, a_floats) =
        (g.bk as usize, g.shared_floats() as usize, g.bk as usize * g.a_stride() as usize);
    let smem = ctx.shared_mem::<F4>().cast::<f32>();
    let tid = ctx.thread_idx().x as usize;
    let (row, col) = thread_origin(g, tid);
    let tiles = t.k.div_ceil(bk);
    // SAFETY (issue): tile `i` goes to stage i % stages, inside the launch's
    // shared memory; every source element is checked or not read.
    let issue = |i: usize| unsafe {
        copy_tile::<C, VEC_B>(ctx, g, a, b, t, i * bk, smem.add((i % stages) * stage_floats), tid)
    };

    // Prologue: tiles 0 .. stages - 1 in flight, one group each (empty
    // groups past the last tile keep the count uniform).
    for i in 0..stages - 1 {
        if i < tiles {
            issue(i);
        }
        ctx.commit_async_group();
    }
    let mut acc: Acc<MI, NI> = [[[[0.0; 4]; NI]; 4]; MI];
    for tile in 0..tiles {
        // This thread's copies of `tile` have landed (at most the newer
        // stages - 2 groups are pending); the barrier makes everyone's
        // visible, and says that everyone is done with tile - 1, whose
        // stage the next copy overwrites.
        ctx.wait_async_groups::<{ ASYNC_STAGES - 2 }>();
        ctx.sync_threads();
        if tile + stages - 1 < tiles {
            issue(tile + stages - 1);
        }
        ctx.commit_async_group();
        let buf = (tile % stages) * stage_floats;
        // SAFETY: stage `buf` holds tile `tile` (waited for above).
        unsafe {
            let a_tile = smem.add(buf);
            compute_tile(g, a_tile, a_tile.add(a_floats), row, col, &mut acc);
        }
    }
    // SAFETY: c valid for m * n floats; store_acc checks each fragment.
    unsafe { store_acc::<MI, NI, false>(g, c, t, row, col, &acc, p) };
}

/// Starts the copies of this thread's share of the tiles at `k0` into the
/// stage at `buffer` (the `A` tile transposed, then the `B` tile, step 6's
/// layout). Elements outside the matrices are zero-filled copies of no
/// bytes, from the matrix's first element.
///
/// # Safety
/// `a`, `b` valid for the problem in `t`; `buffer` one stage of the launch's
/// shared memory; `VEC_B` only if `t.bc_vec`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn copy_tile<C: ThreadCtx, const VEC_B: bool>(
    ctx: &C,
    g: &WarpTiling,
    a: *const f32,
    b: *const f32,
    t: &TileCtx,
    k0: usize,
    buffer: *mut f32,
    tid: usize,
) {
    let (bk, bn, threads, a_stride) = (g.bk as usize, g.bn as usize, g.threads() as usize, g.a_stride() as usize);
    // A: vector f is row f / (bk/4), columns 4 (f % (bk/4)) ..+4; element q
    // lands at As[column][row].
    for i in 0..g.a_vectors() as usize {
        let f = tid + i * threads;
        let (r, cl) = (f / (bk / 4), 4 * (f % (bk / 4)));
        let (gr, gc) = (t.m0 + r, k0 + cl);
        for q in 0..4 {
            let inside = gr < t.m && gc + q < t.k;
            // SAFETY: read only when inside A; the destination is inside the stage.
            unsafe {
                let src = if inside { a.add(gr * t.k + gc + q) } else { a };
                ctx.copy_async_zfill::<4>(buffer.add((cl + q) * a_stride + r), src, if inside { 4 } else { 0 });
            }
        }
    }
    // B: vector f is row f / (bn/4), columns 4 (f % (bn/4)) ..+4, stored as is.
    // SAFETY: the B tile follows the A tile in the stage.
    let b_tile = unsafe { buffer.add(bk * a_stride) };
    for i in 0..g.b_vectors() as usize {
        let f = tid + i * threads;
        let (r, cl) = (f / (bn / 4), 4 * (f % (bn / 4)));
        let (gr, gc) = (k0 + r, t.n0 + cl);
        // SAFETY: r * bn + cl + 4 <= bk * bn: inside the B tile, 16-byte aligned.
        let dst = unsafe { b_tile.add(r * bn + cl) };
        if VEC_B {
            // N % 4 == 0: a vector is wholly inside N or wholly past it.
            let inside = gr < t.k && gc < t.n;
            // SAFETY: read only when inside B; rows 16-byte aligned (bc_vec).
            unsafe {
                let src = if inside { b.add(gr * t.n + gc) } else { b };
                ctx.copy_async_zfill::<16>(dst, src, if inside { 16 } else { 0 });
            }
        } else {
            for q in 0..4 {
                let inside = gr < t.k && gc + q < t.n;
                // SAFETY: as above, element by element.
                unsafe {
                    let src = if inside { b.add(gr * t.n + gc + q) } else { b };
                    ctx.copy_async_zfill::<4>(dst.add(q), src, if inside { 4 } else { 0 });
                }
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
super::gemm_entry!(gemm_async_copy, async_copy);
