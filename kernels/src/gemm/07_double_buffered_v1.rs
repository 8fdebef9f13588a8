//! Step 7's tile loop as first written and measured (commit eaa5e7d: 51.5
//! TFLOP/s at 4096^3, cuBLAS's speed), kept verbatim to build
//! `gemm_double_buffered_interior`.
//!
//! Here every tile chooses at run time between 16-byte loads and checked
//! ones (`a_fast`/`b_fast`), which is slow at the edges (see
//! `07_double_buffered.rs`), so the host launches this build only on grids
//! whose every block is interior, where only its interior copy of the loop
//! runs. Why keep two loops: ptxas schedules a loop differently depending on
//! what else the kernel holds. In one device call at 4096^3 (median of 10):
//! this build 2.704 ms, the reworked kernel's own interior loop 2.835 ms,
//! the interior loop compiled alone 3.392 ms (at 205 registers ptxas put its
//! loads after the FMAs); docs/measurements/2026-11-22-h100-gemm-shapes/interior-ab/.
//!
//! Keep the names (`legacy_kernel`, `legacy_*`): renaming them renumbered
//! LLVM's virtual registers in the PTX and ptxas then scheduled the interior
//! loop differently. The build measured above is this file's PTX, byte for
//! byte.
use super::tiles::{TileCtx, a_fast, b_fast, load_a, load_b, stage_a, stage_b};
use super::warptile_kernel::{Acc, WarpTiling, compute_tile, store_acc, thread_origin};
use super::{F4, Problem};
use crate::ThreadCtx;

/// The tile loop of [`double_buffered_with`]. With `INTERIOR`, every tile
/// is known to be inside the matrices and vector-readable.
///
/// # Safety
/// As [`double_buffered_with`]; `INTERIOR` only if `t.interior(g)`.
#[inline(always)]
pub(super) unsafe fn legacy_main_loop<
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
        legacy_load_tiles::<NA, NB, INTERIOR>(g, a, b, t, 0, tid, &mut sa, &mut sb);
        legacy_stage_tiles(g, smem, tid, &sa, &sb);
    }
    ctx.sync_threads();
    for tile in 0..tiles {
        let more = tile + 1 < tiles;
        if more {
            // SAFETY: as above.
            unsafe { legacy_load_tiles::<NA, NB, INTERIOR>(g, a, b, t, (tile + 1) * bk, tid, &mut sa, &mut sb) };
        }
        let buf = tile % 2;
        // SAFETY: buffer `buf` holds tile `tile` (staged before the last barrier).
        unsafe {
            let a_tile = smem.add(buf * stage_floats);
            compute_tile(g, a_tile, a_tile.add(a_floats), row, col, &mut acc);
        }
        if more {
            // SAFETY: as above; nobody reads buffer 1 - buf until the barrier.
            unsafe { legacy_stage_tiles(g, smem.add((1 - buf) * stage_floats), tid, &sa, &sb) };
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
unsafe fn legacy_load_tiles<const NA: usize, const NB: usize, const INTERIOR: bool>(
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
unsafe fn legacy_stage_tiles<const NA: usize, const NB: usize>(
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
