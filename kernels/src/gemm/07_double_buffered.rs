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
//! needs twice the shared memory. With ~238 registers per thread, one block
//! fits per SM, so nothing else hides this block's barrier waits: a single
//! barrier per tile of 8 `k` (2048 FMAs per warp) keeps that cost small.
//! Interior blocks (all of them when `M`, `N`, `K` are multiples of the
//! tile and rows are 16-byte aligned) run a copy of the loop without the
//! checked load paths.
//!
//! **Edges:** the other blocks (at the border of `C`, or every block when
//! `K` or `N` is not a multiple of 4) take the `K` residue in their first
//! tile, so that every later tile is whole in `K`, and load those with
//! unconditional scalar loads from addresses clamped inside the matrices
//! (see `tiles::load_a_first`). Checking each load instead, as steps 5 and
//! 6 do, let ptxas schedule the loads after the FMAs: 4095^3 ran at 56% of
//! the speed of 4096^3.

use super::tiles::{
    TileCtx, load_a, load_a_clamped, load_a_first, load_b, load_b_clamped, load_b_first, realign_b, stage_a, stage_b,
};
use super::warptile::{Acc, WarpTiling, compute_tile, store_acc, thread_origin};
use super::{F4, Problem};
use crate::ThreadCtx;
use crate::mem::{Global, GlobalMut, Shared};

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Fp32, (DB.bm, DB.bn), Dim3::xy(DB.threads(), 1), 2 * DB.shared_floats());

/// Step 7's geometry, chosen by measurement on the H100 among 16 candidates
/// (docs/measurements/2026-11-22-h100-gemm-sweep at commit 072ca41, its
/// `tune.log`, and that commit's docs/gemm.md, "Choosing step 7's
/// geometry"): a 128x256x8 block tile, 8 warps of 64x64, 8x16 outputs per
/// thread (2x4 fragments), lanes 8 x 4. ptxas gives it ~238 registers, so one 256-thread block runs per SM: 8
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
    ctx: &C, g: WarpTiling, (a, b, c): (*const f32, *const f32, *mut f32), p: Problem,
) {
    debug_assert!(g.is_valid() && g.mi as usize == MI && g.ni as usize == NI);
    debug_assert!(g.a_vectors() as usize == NA && g.b_vectors() as usize == NB);
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    let t = TileCtx::new(ctx, &p, (g.bm as usize, g.bn as usize), (a, b, c));
    // SAFETY (all three): forwarded. Interior blocks (the whole grid when
    // M, N and K are multiples of the tile) run a copy of the loop compiled
    // without any bounds handling; edge blocks one with clamped loads; the
    // degenerate N < 4, whose rows are narrower than one vector, checks
    // every load.
    if t.interior(&g) {
        unsafe { main_loop::<C, MI, NI, NA, NB, INTERIOR>(ctx, &g, a, b, c, &p, &t) }
    } else if t.n >= 4 {
        unsafe { main_loop::<C, MI, NI, NA, NB, EDGE>(ctx, &g, a, b, c, &p, &t) }
    } else {
        unsafe { main_loop::<C, MI, NI, NA, NB, CHECKED>(ctx, &g, a, b, c, &p, &t) }
    }
}

/// How a block's tiles are loaded (`main_loop`'s `MODE`).
///
/// `INTERIOR`: every tile inside the matrices and vector-readable: 16-byte
/// loads, no checks.
const INTERIOR: u8 = 0;
/// `EDGE`: first tile checked, the rest loaded from addresses clamped inside
/// the matrices (`tiles::load_a_clamped`, `tiles::load_b_clamped`); needs `N >= 4`.
const EDGE: u8 = 1;
/// `CHECKED`: first tile as `EDGE`, the rest checked element by element.
const CHECKED: u8 = 2;

/// The tile loop of [`double_buffered_with`], for blocks of the kind `MODE`.
///
/// # Safety
/// As [`double_buffered_with`]; `INTERIOR` only if `t.interior(g)`, `EDGE`
/// only if `t.n >= 4`.
#[inline(always)]
unsafe fn main_loop<
    C: ThreadCtx,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const MODE: u8,
>(
    ctx: &C, g: &WarpTiling, a: Global<'_, C, f32>, b: Global<'_, C, f32>, c: GlobalMut<'_, C, f32>, p: &Problem,
    t: &TileCtx,
) {
    let bk = g.bk as usize;
    let a_floats = bk * g.a_stride() as usize;
    let stage_floats = g.shared_floats() as usize; // one buffer: A tile then B tile
    // Two buffers, as F4 for the 16-byte alignment of the vector accesses.
    let smem = ctx.shared::<F4>(2 * stage_floats / 4).cast::<f32>(2 * stage_floats);
    let tid = ctx.thread_idx().x as usize;
    let (row, col) = thread_origin(g, tid);
    // Tile 0 holds the K residue, `kw` values of k (all `bk` when K is a
    // multiple of it, as interior blocks require); every later tile is whole.
    let kw = if MODE == INTERIOR { bk } else { (t.k - 1) % bk + 1 };
    let tiles = 1 + (t.k - kw) / bk;

    let mut sa = [F4::ZERO; NA];
    let mut sb = [F4::ZERO; NB];
    let mut acc: Acc<MI, NI> = [[[[0.0; 4]; NI]; 4]; MI];
    // SAFETY (all blocks below): tiles are loaded inside A and B, clamped
    // inside them, or checked; buffer `buf` of two lies inside the launch's
    // shared memory.
    unsafe {
        if MODE == INTERIOR {
            load_tiles::<C, NA, NB, INTERIOR>(g, (a, b), t, 0, tid, (&mut sa, &mut sb));
        } else {
            load_first_tiles(g, a, b, t, kw, tid, &mut sa, &mut sb);
        }
        stage_tiles(g, smem.at(0, stage_floats), t, tid, &sa, &sb, false);
    }
    ctx.sync_threads();
    for tile in 0..tiles {
        let more = tile + 1 < tiles;
        if more {
            // SAFETY: as above; tile + 1 starts at kw + tile * bk and is whole.
            let k0 = kw + tile * bk;
            unsafe { load_tiles::<C, NA, NB, MODE>(g, (a, b), t, k0, tid, (&mut sa, &mut sb)) };
        }
        let buf = tile % 2;
        // SAFETY: buffer `buf` holds tile `tile` (staged before the last barrier).
        unsafe {
            let buffer = smem.at(buf * stage_floats, stage_floats);
            compute_tile(g, buffer.at(0, a_floats), buffer.at(a_floats, stage_floats - a_floats), row, col, &mut acc);
        }
        if more {
            // SAFETY: as above; nobody reads buffer 1 - buf until the barrier.
            let buffer = unsafe { smem.at((1 - buf) * stage_floats, stage_floats) };
            // SAFETY: as above.
            unsafe { stage_tiles(g, buffer, t, tid, &sa, &sb, MODE == EDGE) };
        }
        ctx.sync_threads();
    }
    // SAFETY: forwarded.
    unsafe {
        if MODE == INTERIOR {
            store_acc::<C, MI, NI, true>(g, c, t, row, col, &acc, p)
        } else {
            store_acc::<C, MI, NI, false>(g, c, t, row, col, &acc, p)
        }
    };
}

/// Global loads of the tiles at `k0`, whole in `K`, into the thread's
/// staging registers: 16-byte vectors in interior blocks, clamped scalars
/// at the edges, checked scalars when `N < 4`.
///
/// # Safety
/// `a`, `b` view the matrices of the problem in `t`; `k0 + bk <= k`;
/// `MODE` as for `main_loop`.
#[inline(always)]
unsafe fn load_tiles<C: ThreadCtx, const NA: usize, const NB: usize, const MODE: u8>(
    g: &WarpTiling, (a, b): (Global<'_, C, f32>, Global<'_, C, f32>), t: &TileCtx, k0: usize, tid: usize,
    (sa, sb): (&mut [F4; NA], &mut [F4; NB]),
) {
    let (bn, bk, threads) = (g.bn as usize, g.bk as usize, g.threads() as usize);
    // Interior and checked tiles differ in load_a's and load_b's `fast` alone.
    let fast = MODE == INTERIOR;
    unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        let f = tid + i * threads;
        // SAFETY: f < bm*bk/4; inside A (interior), clamped inside it (edge) or checked.
        sa[i] = unsafe { if MODE == EDGE { load_a_clamped(a, t, k0, bk, f) } else { load_a(a, t, k0, bk, f, fast) } };
    });
    unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        let f = tid + i * threads;
        // SAFETY: f < bk*bn/4; inside B (interior), clamped inside it (edge, n >= 4) or checked.
        sb[i] = unsafe { if MODE == EDGE { load_b_clamped(b, t, k0, bn, f) } else { load_b(b, t, k0, bn, f, fast) } };
    });
}

/// An edge block's first tile, `k` in `0..kw`, checked element by element
/// (zero past `kw`, `M`, `N`).
///
/// # Safety
/// `a`, `b` view the matrices of the problem in `t`; `kw <= min(bk, k)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_first_tiles<C: ThreadCtx, const NA: usize, const NB: usize>(
    g: &WarpTiling, a: Global<'_, C, f32>, b: Global<'_, C, f32>, t: &TileCtx, kw: usize, tid: usize,
    sa: &mut [F4; NA], sb: &mut [F4; NB],
) {
    let (bn, bk, threads) = (g.bn as usize, g.bk as usize, g.threads() as usize);
    unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bm*bk/4; every load checked.
        sa[i] = unsafe { load_a_first(a, t, kw, bk, tid + i * threads) };
    });
    unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bk*bn/4; every load checked.
        sb[i] = unsafe { load_b_first(b, t, kw, bn, tid + i * threads) };
    });
}

/// Shared stores of the staged tiles into `buffer`; with `realign`, the
/// `B` vector that `load_b_clamped` read shifted is moved back into place
/// first.
///
/// # Safety
/// `buffer` is 16-byte aligned and holds `g.shared_floats()` floats.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn stage_tiles<C: ThreadCtx, const NA: usize, const NB: usize>(
    g: &WarpTiling, buffer: Shared<'_, C, f32>, t: &TileCtx, tid: usize, sa: &[F4; NA], sb: &[F4; NB], realign: bool,
) {
    let (bk, bn, threads, a_stride) = (g.bk as usize, g.bn as usize, g.threads() as usize, g.a_stride() as usize);
    // SAFETY: the B tile follows the A tile in the buffer.
    let (a_tile, b_tile) = unsafe { (buffer.at(0, bk * a_stride), buffer.at(bk * a_stride, bk * bn)) };
    unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        // SAFETY: f < bm*bk/4.
        unsafe { stage_a(a_tile, a_stride, bk, tid + i * threads, sa[i]) };
    });
    unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
        let f = tid + i * threads;
        let v = if realign { realign_b(t, bn, f, sb[i]) } else { sb[i] };
        // SAFETY: f < bk*bn/4.
        unsafe { stage_b(b_tile, bn, bn, f, v) };
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
        >(ctx, DB, (a, b, c), p)
    }
}
