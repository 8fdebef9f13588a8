//! # Exercise 7: a register tile for GEMM
//!
//! `C = A * B` with `A` `m x k` and `B` `k x n`. A block computes a 64x64
//! tile of `C`: it stages an 8-wide slice of `A` (64x8) and of `B` (8x64) in
//! shared memory, and each of its 512 threads computes a column of 8
//! outputs, `acc[r] += A[row + r][i] * B[i][col]` (the ladder's step 3).
//!
//! Shared memory is fast, but each load is still an instruction and a
//! request. The point of giving a thread several outputs is that operands
//! repeat: `B[i][col]` is the same for all 8 of a thread's outputs. As
//! written, the inner loop loads it again for every one of them: 16 shared
//! loads for 8 FMAs.
//!
//! **Goal:** at most 9 shared loads per 8 FMAs, plus the slices' own
//! global loads (2 a thread per slice of 64 FMAs): 74 loads per 64 FMAs,
//! 1.156 per FMA, with A and B read from global memory only into the
//! slices. (Step 4 goes further: an
//! 8x8 outer product per thread, 16 loads for 64 FMAs.)
//!
//! `cargo learn 7` grades it; `cargo learn 7 --solution` runs the ladder's
//! step 3, `kernels/src/gemm/03_blocktile_1d.rs`.

#![forbid(unsafe_code)]

use coalesce::kernels::gemm::{BT1_BK, BT1_BM, BT1_BN, BT1_TM, Problem};
use coalesce::kernels::math::fma;
use coalesce::kernels::mem::Checked;

/// `a`, `b` and `c` hold `m * k`, `k * n` and `m * n` floats, `c` apart
/// from the others; the block is `BT1_THREADS` threads with
/// `BT1_BM * BT1_BK + BT1_BK * BT1_BN` floats of shared memory.
pub fn gemm<C: Checked>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    const BM: usize = BT1_BM as usize;
    const BN: usize = BT1_BN as usize;
    const BK: usize = BT1_BK as usize;
    const TM: usize = BT1_TM as usize;
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    let smem = ctx.shared::<f32>(BM * BK + BK * BN);
    // The launch gives BM*BK + BK*BN floats: A's slice, then B's.
    let (a_tile, b_tile) = (smem.part(0, BM * BK), smem.part(BM * BK, BK * BN));
    let tid = ctx.thread_idx().x as usize;
    let blk = ctx.block_idx();
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let (m0, n0) = (blk.y as usize * BM, blk.x as usize * BN);
    let (col, row) = (tid % BN, (tid / BN) * TM); // this thread's outputs, tile-local
    let (a_r, a_c, b_r, b_c) = (tid / BK, tid % BK, tid / BN, tid % BN); // its loads

    let mut acc = [0.0f32; TM];
    let mut k0 = 0;
    while k0 < k {
        let (ar, ac, br, bc) = (m0 + a_r, k0 + a_c, k0 + b_r, n0 + b_c);
        // Outside the matrices, the slices hold zeros.
        a_tile.set(a_r * BK + a_c, if ar < m && ac < k { a.get(ar * k + ac) } else { 0.0 });
        b_tile.set(b_r * BN + b_c, if br < k && bc < n { b.get(br * n + bc) } else { 0.0 });
        ctx.sync_threads();
        // ---- your code: start ----
        for i in 0..BK {
            for (r, acc) in acc.iter_mut().enumerate() {
                let (x, y) = (a_tile.get((row + r) * BK + i), b_tile.get(i * BN + col));
                *acc = fma(x, y, *acc);
            }
        }
        // ---- your code: end ----
        ctx.sync_threads();
        k0 += BK;
    }
    for (r, acc) in acc.into_iter().enumerate() {
        let (gr, gc) = (m0 + row + r, n0 + col);
        if gr < m && gc < n {
            c.set(gr * n + gc, acc);
        }
    }
}
