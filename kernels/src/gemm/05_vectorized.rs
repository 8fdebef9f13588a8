//! Step 5: 16-byte loads everywhere, with the `A` tile transposed in shared
//! memory.
//! (`docs/gemm.md`, "5. vectorized")
//!
//! **Idea:** step 4's geometry (128x128 block tile, 8x8 per thread, `K` steps
//! of 8), with every memory instruction moving 16 bytes. Global: each thread
//! reads one `float4` of `A` and one of `B` per `K` step (`ld.global.v4`).
//! Shared: the `A` tile is stored transposed, `As[k][m]`, so the 8 `A`
//! values a thread needs for one `k` are adjacent: two `ld.shared.v4`, as
//! are its 8 `B` values.
//!
//! **What it fixes:** global loads take a quarter of the instructions
//! (`ld.global.v4`, one address per vector), and the 16-byte shared loads
//! are written in the source instead of left to ptxas (which had already
//! merged step 4's scalar ones, see there). The measured effect is on
//! registers: 122 instead of 168, so two blocks share an SM and one computes
//! while the other waits at a barrier.
//!
//! **What it costs:** storing `A` transposed is 4 scalar shared stores per
//! vector. And the 16 threads along a warp's row read `B` vectors 32 bytes
//! apart (each thread's 8 columns are contiguous), so the warp's 16-byte
//! reads spread over 512 bytes: ncu counts 2 extra wavefronts per shared load
//! request, which step 6 removes by interleaving the threads' columns.
//! The vector paths need `K % 4 == 0`, `N % 4 == 0` and aligned buffers;
//! otherwise, and on edge tiles, loads are scalar with bounds checks.

use super::blocktile_2d::{BK, BM, BN, THREADS, TM, TN};
use super::tiles::{TileCtx, a_fast, b_fast, load_a, load_b, stage_a, stage_b};
use super::{F4, Problem, aligned16, store_c_at, store_c4_at};
use crate::ThreadCtx;
use crate::math::fma;

use super::Geometry;

/// How this step is launched: step 4's tiles and threads.
pub const GEOMETRY: Geometry = super::blocktile_2d::GEOMETRY;

/// `C = alpha * A * B + beta * C` with step 4's tiles and 16-byte accesses.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `As[8][128]` (transposed) then
/// `Bs[8][128]`, 8 KiB.
///
/// # Thread mapping
/// As [`super::blocktile_2d`] for the outputs. Loads: thread `t` reads the
/// `float4` at row `t / 2`, columns `4 * (t % 2)` of the `A` tile and at row
/// `t / 32`, columns `4 * (t % 32)` of the `B` tile.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn vectorized<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // As F4, for the 16-byte alignment of the vector accesses.
    let smem = ctx.shared::<F4>((BK * BM + BK * BN) / 4).cast::<f32>(BK * BM + BK * BN);
    // SAFETY: the launch gives BK*BM + BK*BN floats: As[BK][BM] (transposed),
    // then Bs[BK][BN]; BK*BM is a multiple of 4.
    let (a_tile, b_tile) = unsafe { (smem.at(0, BK * BM), smem.at(BK * BM, BK * BN)) };
    let tid = ctx.thread_idx().x as usize;
    let blk = ctx.block_idx();
    // A literal, not `TileCtx::new`: built through it, this step measured
    // 3.2-3.4% slower (docs/measurements/2026-11-24-h100-dedup-ab at commit f58f145).
    let t = TileCtx {
        m: p.m as usize,
        n: p.n as usize,
        k: p.k as usize,
        m0: blk.y as usize * BM,
        n0: blk.x as usize * BN,
        a_vec: p.k.is_multiple_of(4) && aligned16(a.as_ptr(), a.as_ptr(), a.as_ptr()),
        bc_vec: p.n.is_multiple_of(4) && aligned16(b.as_ptr(), b.as_ptr(), c.as_ptr()),
    };
    let (row, col) = ((tid / (BN / TN)) * TM, (tid % (BN / TN)) * TN);

    let mut acc = [[0.0f32; TN]; TM];
    let mut k0 = 0;
    while k0 < t.k {
        let (fa, fb) = (a_fast(&t, BM, k0, BK), b_fast(&t, BN, k0, BK));
        for i in 0..BM * BK / 4 / THREADS {
            let f = tid + i * THREADS;
            // SAFETY: f < BM*BK/4; loads checked or inside A.
            unsafe { stage_a(a_tile, BM, BK, f, load_a(a, &t, k0, BK, f, fa)) };
        }
        for i in 0..BK * BN / 4 / THREADS {
            let f = tid + i * THREADS;
            // SAFETY: f < BK*BN/4; loads checked or inside B.
            unsafe { stage_b(b_tile, BN, BN, f, load_b(b, &t, k0, BN, f, fb)) };
        }
        ctx.sync_threads();
        unroll!(kk < BK, [0, 1, 2, 3, 4, 5, 6, 7], {
            // SAFETY: row, col multiples of 4 below BM, BN: aligned, inside.
            let (av, bv) = unsafe {
                let ap = a_tile.at(kk * BM + row, TM).cast::<F4>(TM / 4);
                let bp = b_tile.at(kk * BN + col, TN).cast::<F4>(TN / 4);
                ([ap.load(0), ap.load(1)], [bp.load(0), bp.load(1)])
            };
            for (i, acc) in acc.iter_mut().enumerate() {
                let x = av[i / 4].0[i % 4];
                for (j, acc) in acc.iter_mut().enumerate() {
                    *acc = fma(x, bv[j / 4].0[j % 4], *acc);
                }
            }
        });
        ctx.sync_threads();
        k0 += BK;
    }
    let fast = t.bc_vec && t.m0 + BM <= t.m && t.n0 + BN <= t.n;
    unroll!(i < TM, [0, 1, 2, 3, 4, 5, 6, 7], {
        let gr = t.m0 + row + i;
        unroll!(h < TN / 4, [0, 1], {
            let gc = t.n0 + col + 4 * h;
            let v = [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]];
            if fast {
                // SAFETY: interior tile, n % 4 == 0, aligned c: 16-byte aligned, inside C.
                unsafe { store_c4_at(c, gr * t.n + gc, v, p.alpha, p.beta) };
            } else {
                unroll!(q < 4, [0, 1, 2, 3], {
                    if gr < t.m && gc + q < t.n {
                        // SAFETY: checked just above.
                        unsafe { store_c_at(c, gr * t.n + gc + q, v[q], p.alpha, p.beta) };
                    }
                });
            }
        });
    });
}
