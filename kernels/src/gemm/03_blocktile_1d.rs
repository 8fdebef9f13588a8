//! Step 3: 1D register blocking, each thread computes 8 outputs of a column.
//! (`docs/gemm.md`, "3. blocktile_1d")
//!
//! **Idea:** a block of 512 threads computes a 64x64 tile of `C` in steps of
//! `K` of 8. Each thread keeps 8 accumulators for 8 consecutive rows of one
//! column: per `k` it loads one `B` value from shared memory into a register
//! and reuses it for 8 FMAs, with 8 `A` values (a broadcast within the warp).
//!
//! **What it fixes:** step 2 needed 2 shared values per FMA; here 9 serve 8
//! FMAs, and the loaded `B` value sits in a register. ptxas merges each
//! thread's 8 `A` values of a row (all 8 `k` of the unrolled loop) into two
//! 16-byte loads: 3 load instructions per 8 FMAs, against 10 in step 2.
//!
//! **What it costs:** the `A` values are still one per FMA (broadcasts, so
//! cheap in bandwidth, but registers and issue slots); step 4 blocks in both
//! dimensions.

use super::{Problem, load_or_zero, shared_tiles, store_c_at};
use crate::ThreadCtx;
use crate::math::fma;

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Fp32, (BT1_BM, BT1_BN), Dim3::xy(BT1_THREADS, 1), BT1_BM * BT1_BK + BT1_BK * BT1_BN);

/// Rows of the `C` tile per block.
pub const BT1_BM: u32 = 64;
/// Columns of the `C` tile per block.
pub const BT1_BN: u32 = 64;
/// Depth of the `A` and `B` tiles staged per step.
pub const BT1_BK: u32 = 8;
/// Outputs per thread (consecutive rows of one column).
pub const BT1_TM: u32 = 8;
/// Threads per block: one per `TM` outputs of the tile.
pub const BT1_THREADS: u32 = BT1_BM * BT1_BN / BT1_TM;

const _: () = assert!(BT1_THREADS == BT1_BM * BT1_BK && BT1_THREADS == BT1_BK * BT1_BN);

/// `C = alpha * A * B + beta * C` with a 64x64 block tile and 8 outputs per
/// thread.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `64*8 + 8*64` floats (4 KiB).
///
/// # Thread mapping
/// Block of 512 threads (1D), grid `ceil(n/64) x ceil(m/64)`. Thread `t`
/// computes column `t % 64` and rows `8 * (t / 64) ..+8` of the tile; it
/// loads `A[t / 8][t % 8]` and `B[t / 64][t % 64]` of each `K` step.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn blocktile_1d<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    const BM: usize = BT1_BM as usize;
    const BN: usize = BT1_BN as usize;
    const BK: usize = BT1_BK as usize;
    const TM: usize = BT1_TM as usize;
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // As[BM][BK], then Bs[BK][BN].
    let (a_tile, b_tile) = shared_tiles::<C, f32>(ctx, BM * BK, BK * BN);
    let (tid, blk) = (ctx.thread_idx().x as usize, ctx.block_idx());
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let (m0, n0) = (blk.y as usize * BM, blk.x as usize * BN);
    let (col, row) = (tid % BN, (tid / BN) * TM); // this thread's outputs, tile-local
    let (a_r, a_c) = (tid / BK, tid % BK); // this thread's loads, tile-local
    let (b_r, b_c) = (tid / BN, tid % BN);
    let inside_mn = m0 + BM <= m && n0 + BN <= n;

    let mut acc = [0.0f32; TM];
    let mut k0 = 0;
    while k0 < k {
        let full = inside_mn && k0 + BK <= k;
        let (ar, ac, br, bc) = (m0 + a_r, k0 + a_c, k0 + b_r, n0 + b_c);
        // SAFETY: each load is in bounds (full tile, or checked); the tile
        // indices are < BM*BK and < BK*BN.
        unsafe {
            let x = load_or_zero(a, (m, k), (ar, ac), full);
            a_tile.store(a_r * BK + a_c, x);
            let y = load_or_zero(b, (k, n), (br, bc), full);
            b_tile.store(b_r * BN + b_c, y);
        }
        ctx.sync_threads();
        for i in 0..BK {
            // SAFETY: inside the tiles.
            let bv = unsafe { b_tile.load(i * BN + col) };
            for (r, acc) in acc.iter_mut().enumerate() {
                // SAFETY: row + r < BM.
                let x = unsafe { a_tile.load((row + r) * BK + i) };
                *acc = fma(x, bv, *acc);
            }
        }
        ctx.sync_threads();
        k0 += BK;
    }
    let gc = n0 + col;
    for (r, acc) in acc.into_iter().enumerate() {
        let gr = m0 + row + r;
        if gr < m && gc < n {
            // SAFETY: gr < m, gc < n.
            unsafe { store_c_at(c, gr * n + gc, acc, p.alpha, p.beta) }
        }
    }
}
