//! Step 2: the classic shared-memory tiled GEMM.
//! (`docs/gemm.md`, "2. smem_tiled")
//!
//! **Idea:** a block of 32x32 threads computes a 32x32 tile of `C`. It walks
//! `K` in steps of 32: the block copies a 32x32 tile of `A` and one of `B`
//! into shared memory (one element per thread, coalesced), synchronises,
//! and each thread then does 32 FMAs reading only shared memory.
//!
//! **What it fixes:** each global element is now loaded once per tile
//! instead of once per thread that needs it: global traffic drops 32x.
//!
//! **What it costs:** every FMA still needs two shared-memory values
//! (`As[ty][i]`, a broadcast within the warp, and `Bs[i][tx]`, 32 consecutive
//! floats: no bank conflict). ptxas merges the unrolled `As` reads of a row
//! into 16-byte loads, which leaves 1.25 shared load instructions per FMA.
//! Shared memory, not DRAM, is now the limit: an SM issues four warp FMAs a
//! cycle but serves about one shared load. Steps 3-4 make each loaded value
//! feed several FMAs.

use super::{Problem, store_c_at};
use crate::ThreadCtx;
use crate::math::fma;

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Fp32, (SMEM_TILE, SMEM_TILE), Dim3::xy(SMEM_TILE, SMEM_TILE), 2 * SMEM_TILE * SMEM_TILE);

/// Side of the square tiles of `A`, `B` and `C`; threads per block are
/// `SMEM_TILE x SMEM_TILE`.
pub const SMEM_TILE: u32 = 32;

/// `C = alpha * A * B + beta * C` through 32x32 shared tiles.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `2 * 32 * 32` floats (8 KiB).
///
/// # Thread mapping
/// Block `32 x 32`, grid `ceil(n/32) x ceil(m/32)`; thread `(tx, ty)`
/// computes `C[by*32 + ty][bx*32 + tx]`, loads `A[by*32 + ty][k0 + tx]` and
/// `B[k0 + ty][bx*32 + tx]` into the tiles (zero outside the matrices).
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn smem_tiled<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    const T: usize = SMEM_TILE as usize;
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    let smem = ctx.shared::<f32>(2 * T * T);
    // SAFETY: the launch gives 2 * T * T floats of shared memory: the A tile, then the B tile.
    let (a_tile, b_tile) = unsafe { (smem.at(0, T * T), smem.at(T * T, T * T)) };
    let (t, blk) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty) = (t.x as usize, t.y as usize);
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let row = blk.y as usize * T + ty;
    let col = blk.x as usize * T + tx;

    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        // Zero fill outside the matrices keeps the inner loop free of checks.
        let (ka, kb) = (k0 + tx, k0 + ty);
        // SAFETY: each load is guarded by its bounds; tile indices < T * T.
        unsafe {
            let x = if row < m && ka < k { a.load(row * k + ka) } else { 0.0 };
            a_tile.store(ty * T + tx, x);
            let y = if kb < k && col < n { b.load(kb * n + col) } else { 0.0 };
            b_tile.store(ty * T + tx, y);
        }
        ctx.sync_threads();
        for i in 0..T {
            // SAFETY: indices inside the tiles.
            let (x, y) = unsafe { (a_tile.load(ty * T + i), b_tile.load(i * T + tx)) };
            acc = fma(x, y, acc);
        }
        ctx.sync_threads();
        k0 += T;
    }
    if row < m && col < n {
        // SAFETY: row < m, col < n.
        unsafe { store_c_at(c, row * n + col, acc, p.alpha, p.beta) }
    }
}
