//! Step 7: double-buffered shared memory, the next tile in flight while this
//! one is computed.
//!
//! **Idea:** step 6 with two `A`/`B` tile buffers in shared memory. Before
//! computing tile `t` from buffer `t % 2`, each thread issues the global
//! loads of tile `t + 1` into registers; after the FMAs it stores them into
//! buffer `(t + 1) % 2`, and one barrier ends the step.
//!
//! **What it fixes:** the global loads' latency (hundreds of cycles from
//! L2 or DRAM) now overlaps a whole tile of FMAs instead of stalling the
//! block at a barrier, and there is one barrier per tile instead of two.
//! One barrier is enough: a thread writes buffer `(t + 1) % 2` only after the
//! barrier that closed step `t - 1`, the last step that read it.
//!
//! **Geometry:** the same code runs any [`WarpTiling`]; [`DB`] is the one
//! that measured fastest on the H100 (docs/gemm.md). With double buffering
//! a block no longer needs a neighbour to hide its loads, so fewer, fatter
//! threads win: 8x16 outputs per thread (128 accumulators) read 6 vectors
//! from shared memory per 128 FMAs (step 6: 4 per 64), and one 256-thread
//! block of 8 warps per SM is enough. At step 6's geometry the same loop
//! gains 16% over step 6; the geometry gives the other 30%.
//!
//! **What it costs:** the staged vectors live in registers across the
//! compute (`a_vectors + b_vectors` of 16 bytes per thread), and the block
//! needs twice the shared memory. With ~245 registers per thread, one block
//! fits per SM, so nothing else hides this block's barrier waits: a single
//! barrier per tile of 8 `k` (2048 FMAs per warp) keeps that cost small.
//! Interior blocks (all of them when `M`, `N`, `K` are multiples of the
//! tile and rows are 16-byte aligned) run a copy of the loop without the
//! checked load paths.

use super::tiles::{TileCtx, a_fast, b_fast, load_a, load_b, stage_a, stage_b};
use super::warptile_kernel::{Acc, WarpTiling, compute_tile, store_acc, thread_origin, tile_ctx};
use super::{F4, Problem};
use crate::ThreadCtx;

/// Step 7's geometry, chosen by measurement on the H100 among 16 candidates
/// (docs/gemm.md, "Choosing step 7's geometry"): a 128x256x8 block tile, 8
/// warps of 64x64, 8x16 outputs per thread (2x4 fragments), lanes 8 x 4.
/// ptxas gives it ~245 registers, so one 256-thread block runs per SM: 8
/// warps, each with 128 independent accumulators, the shape of cuBLAS's
/// own `sm80_xmma_gemm_f32f32_..._tilesize256x128x8_..._warpsize4x2x1_ffma`.
pub const DB: WarpTiling = WarpTiling { bm: 128, bn: 256, bk: 8, wm: 64, wn: 64, mi: 2, ni: 4, a_pad: 4 };
const _: () = assert!(DB.is_valid());

/// Step 7 with the geometry `g` (`MI`, `NI`, `NA`, `NB` must equal `g.mi`,
/// `g.ni`, `g.a_vectors()`, `g.b_vectors()`).
///
/// # Safety
/// As [`super::naive`]; the launch gives `g.threads()` threads and
/// `2 * g.shared_floats()` floats of shared memory.
#[inline(always)]
pub unsafe fn double_buffered_with<C: ThreadCtx, const MI: usize, const NI: usize, const NA: usize, const NB: usize>(
    ctx: &C,
    g: WarpTiling,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    p: Problem,
) {
    debug_assert!(g.is_valid() && g.mi as usize == MI && g.ni as usize == NI);
    debug_assert!(g.a_vectors() as usize == NA && g.b_vectors() as usize == NB);
    let t = tile_ctx(ctx, &g, a, b, c, &p);
    // SAFETY (both): forwarded. Interior blocks (the whole grid when M, N
    // and K are multiples of the tile) run a copy of the loop compiled
    // without the checked paths: fewer branches and registers.
    if t.interior(&g) {
        unsafe { main_loop::<C, MI, NI, NA, NB, true>(ctx, &g, a, b, c, &p, &t) }
    } else {
        unsafe { main_loop::<C, MI, NI, NA, NB, false>(ctx, &g, a, b, c, &p, &t) }
    }
}

/// The tile loop of [`double_buffered_with`]. With `INTERIOR`, every tile
/// is known to be inside the matrices and vector-readable.
///
/// # Safety
/// As [`double_buffered_with`]; `INTERIOR` only if `t.interior(g)`.
#[inline(always)]
unsafe fn main_loop<
    C: ThreadCtx,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const INTERIOR: bool,
>(
    ctx: &C,
    g: &WarpTiling,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    p: &Problem,
    t: &TileCtx,
) {
    let bk = g.bk as usize;
    let a_floats = bk * g.a_stride() as usize;
    let stage_floats = g.shared_floats() as usize; // one buffer: A tile then B tile
    let smem = ctx.shared_mem::<F4>().cast::<f32>();
    let tid = ctx.thread_idx().x as usize;
    let (row, col) = thread_origin(g, tid);
    let tiles = t.k.div_ceil(bk);

    let mut sa = [F4::ZERO; NA];
    let mut sb = [F4::ZERO; NB];
    let mut acc: Acc<MI, NI> = [[[[0.0; 4]; NI]; 4]; MI];
    // SAFETY (all blocks below): tiles are loaded inside A and B or with
    // checks; buffer `buf` of two lies inside the launch's shared memory.
    unsafe {
        load_tiles::<NA, NB, INTERIOR>(g, a, b, t, 0, tid, &mut sa, &mut sb);
        stage_tiles(g, smem, tid, &sa, &sb);
    }
    ctx.sync_threads();
    for tile in 0..tiles {
        let more = tile + 1 < tiles;
        if more {
            // SAFETY: as above.
            unsafe { load_tiles::<NA, NB, INTERIOR>(g, a, b, t, (tile + 1) * bk, tid, &mut sa, &mut sb) };
        }
        let buf = tile % 2;
        // SAFETY: buffer `buf` holds tile `tile` (staged before the last barrier).
        unsafe {
            let a_tile = smem.add(buf * stage_floats);
            compute_tile(g, a_tile, a_tile.add(a_floats), row, col, &mut acc);
        }
        if more {
            // SAFETY: as above; nobody reads buffer 1 - buf until the barrier.
            unsafe { stage_tiles(g, smem.add((1 - buf) * stage_floats), tid, &sa, &sb) };
        }
        ctx.sync_threads();
    }
    // SAFETY: forwarded.
    unsafe { store_acc::<MI, NI, INTERIOR>(g, c, t, row, col, &acc, p) };
}

/// Global loads of the tiles at `k0` into the thread's staging registers.
///
/// # Safety
/// `a`, `b` valid for the problem in `t`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_tiles<const NA: usize, const NB: usize, const INTERIOR: bool>(
    g: &WarpTiling,
    a: *const f32,
    b: *const f32,
    t: &TileCtx,
    k0: usize,
    tid: usize,
    sa: &mut [F4; NA],
    sb: &mut [F4; NB],
) {
    let (bm, bn, bk, threads) = (g.bm as usize, g.bn as usize, g.bk as usize, g.threads() as usize);
    let (fa, fb) = (INTERIOR || a_fast(t, bm, k0, bk), INTERIOR || b_fast(t, bn, k0, bk));
    unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bm*bk/4; loads checked or inside A.
        sa[i] = unsafe { load_a(a, t, k0, bk, tid + i * threads, fa) };
    });
    unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bk*bn/4; loads checked or inside B.
        sb[i] = unsafe { load_b(b, t, k0, bn, tid + i * threads, fb) };
    });
}

/// Shared stores of the staged tiles into the buffer at `buffer`.
///
/// # Safety
/// `buffer` is 16-byte aligned and holds `g.shared_floats()` floats.
#[inline(always)]
unsafe fn stage_tiles<const NA: usize, const NB: usize>(
    g: &WarpTiling,
    buffer: *mut f32,
    tid: usize,
    sa: &[F4; NA],
    sb: &[F4; NB],
) {
    let (bk, threads, a_stride) = (g.bk as usize, g.threads() as usize, g.a_stride() as usize);
    // SAFETY: the B tile follows the A tile in the buffer.
    let b_tile = unsafe { buffer.add(bk * a_stride) };
    unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bm*bk/4.
        unsafe { stage_a(buffer, a_stride, bk, tid + i * threads, sa[i]) };
    });
    unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bk*bn/4.
        unsafe { stage_b(b_tile, g.bn as usize, g.bn as usize, tid + i * threads, sb[i]) };
    });
}
/// `C = alpha * A * B + beta * C`, warp-tiled and double-buffered with the
/// geometry [`DB`].
///
/// # Parameters
/// As [`super::naive`]. Shared memory: two buffers of step 6's layout.
///
/// # Thread mapping
/// As [`super::warptile`], with [`DB`].
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn double_buffered<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    // SAFETY: forwarded; the launch uses DB.
    unsafe {
        double_buffered_with::<
            C,
            { DB.mi as usize },
            { DB.ni as usize },
            { DB.a_vectors() as usize },
            { DB.b_vectors() as usize },
        >(ctx, DB, a, b, c, p)
    }
}

#[cfg(target_arch = "nvptx64")]
super::gemm_entry!(gemm_double_buffered, double_buffered);
