//! Step 4: 2D register blocking, each thread computes an 8x8 block of `C`.
//! (`docs/gemm.md`, "4. blocktile_2d")
//!
//! **Idea:** a block of 256 threads computes a 128x128 tile of `C` in steps
//! of `K` of 8. Per `k`, each thread loads 8 values of `A` (a column of the
//! `A` tile) and 8 of `B` (a row of the `B` tile) into registers and does
//! their outer product: 64 FMAs into 64 accumulators.
//!
//! **What it fixes:** 16 shared values now serve 64 FMAs (step 3: 9 per 8),
//! and the 128x128 tile halves global traffic per FMA against step 3's 64x64.
//! The PTX has 16 scalar `ld.shared.f32` per `k`; with the `k` loop unrolled,
//! ptxas merges each thread's 8 adjacent `A` values (one row of `As`, all
//! `k`) and 8 adjacent `B` values into 16-byte loads, so the SASS already has
//! 4 `LDS.128` per 64 FMAs.
//!
//! **What it costs:** the global loads are scalar, 8 per thread per tile
//! with their address arithmetic, and the kernel needs 168 registers: one
//! block per SM, which then idles at every barrier. The two rows of threads
//! in a warp read `A` rows 64 floats apart (the same banks) and the `B` reads
//! of a warp are 32 bytes apart: ncu counts 2 extra wavefronts per shared
//! load request.

use super::{Problem, load_or_zero, shared_tiles, store_c_at};
use crate::ThreadCtx;
use crate::math::fma;

use super::{Dim3, Geometry, Precision};

/// How this step (and step 5) is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Fp32, (BM as u32, BN as u32), Dim3::xy(THREADS as u32, 1), (BM * BK + BK * BN) as u32);

/// Rows of the `C` tile per block (steps 4 and 5).
pub(super) const BM: usize = 128;
/// Columns of the `C` tile per block (steps 4 and 5).
pub(super) const BN: usize = 128;
/// Depth of the staged tiles (steps 4 and 5).
pub(super) const BK: usize = 8;
/// Rows of `C` per thread.
pub(super) const TM: usize = 8;
/// Columns of `C` per thread.
pub(super) const TN: usize = 8;
/// Threads per block.
pub(super) const THREADS: usize = (BM / TM) * (BN / TN);

const _: () = assert!(BK <= 8 && TM <= 8 && TN <= 8); // the unroll! lists
const _: () = assert!((BM * BK).is_multiple_of(THREADS) && (BK * BN).is_multiple_of(THREADS));

/// `C = alpha * A * B + beta * C` with a 128x128 block tile and an 8x8
/// register tile per thread.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `128*8 + 8*128` floats (8 KiB):
/// `As[128][8]` and `Bs[8][128]`, both row-major as in global memory.
///
/// # Thread mapping
/// Block of 256 threads (1D), grid `ceil(n/128) x ceil(m/128)`. Thread `t`
/// computes rows `8 * (t / 16) ..+8`, columns `8 * (t % 16) ..+8` of the
/// tile. Loads: element `t + 256 * i` (i < 4) of each of the two tiles,
/// row-major, so a warp reads 32 consecutive floats of `B` and four 8-float
/// rows of `A`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn blocktile_2d<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // As[BM][BK], then Bs[BK][BN].
    let (a_tile, b_tile) = shared_tiles::<C, f32>(ctx, BM * BK, BK * BN);
    let (tid, blk) = (ctx.thread_idx().x as usize, ctx.block_idx());
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let (m0, n0) = (blk.y as usize * BM, blk.x as usize * BN);
    let (row, col) = ((tid / (BN / TN)) * TM, (tid % (BN / TN)) * TN);
    let inside_mn = m0 + BM <= m && n0 + BN <= n;

    let mut acc = [[0.0f32; TN]; TM];
    let mut k0 = 0;
    while k0 < k {
        let full = inside_mn && k0 + BK <= k;
        for i in 0..BM * BK / THREADS {
            let e = tid + i * THREADS;
            // SAFETY: in bounds (full tile, or checked); e < BM*BK.
            let x = unsafe { load_or_zero(a, (m, k), (m0 + e / BK, k0 + e % BK), full) };
            // SAFETY: as above.
            unsafe { a_tile.store(e, x) };
        }
        for i in 0..BK * BN / THREADS {
            let e = tid + i * THREADS;
            // SAFETY: in bounds (full tile, or checked); e < BK*BN.
            let y = unsafe { load_or_zero(b, (k, n), (k0 + e / BN, n0 + e % BN), full) };
            // SAFETY: as above.
            unsafe { b_tile.store(e, y) };
        }
        ctx.sync_threads();
        unroll!(kk < BK, [0, 1, 2, 3, 4, 5, 6, 7], {
            let mut av = [0.0f32; TM];
            let mut bv = [0.0f32; TN];
            for (i, v) in av.iter_mut().enumerate() {
                // SAFETY: row + i < BM, kk < BK.
                *v = unsafe { a_tile.load((row + i) * BK + kk) };
            }
            for (j, v) in bv.iter_mut().enumerate() {
                // SAFETY: kk < BK, col + j < BN.
                *v = unsafe { b_tile.load(kk * BN + col + j) };
            }
            for (acc, x) in acc.iter_mut().zip(av.iter()) {
                for (acc, y) in acc.iter_mut().zip(bv.iter()) {
                    *acc = fma(*x, *y, *acc);
                }
            }
        });
        ctx.sync_threads();
        k0 += BK;
    }
    unroll!(i < TM, [0, 1, 2, 3, 4, 5, 6, 7], {
        unroll!(j < TN, [0, 1, 2, 3, 4, 5, 6, 7], {
            let (gr, gc) = (m0 + row + i, n0 + col + j);
            if gr < m && gc < n {
                // SAFETY: gr < m, gc < n.
                unsafe { store_c_at(c, gr * n + gc, acc[i][j], p.alpha, p.beta) }
            }
        });
    });
}
