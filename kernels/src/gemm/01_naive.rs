//! Step 1: naive GEMM, one thread per element of `C`.
//! (`docs/gemm.md`, "1. naive")
//!
//! **Idea:** thread `(row, col)` walks `k = 0..K`, multiplying `A[row][k]` by
//! `B[k][col]` straight from global memory into one register accumulator.
//!
//! **Memory pattern:** the 32 threads of a warp have consecutive `col`, so
//! each `B` load is 128 contiguous bytes (coalesced) and each `A` load is one
//! address broadcast to the warp. Nothing is reused on purpose: every FMA
//! needs two loads, so the kernel runs at the speed of L1/L2, not of the FMA
//! units (a warp does 32 FMAs per 2 load instructions; an SM can issue 4
//! warp-FMAs a cycle but serve only ~1 load instruction). Mapping threads
//! along rows instead (`threadIdx.x -> row`) would make the `B` loads strided
//! too, and is several times slower still.

use super::{Problem, store_c_at};
use crate::math::fma;
use crate::{Dim3, ThreadCtx};

use super::{Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(Precision::Fp32, (NAIVE_BLOCK.y, NAIVE_BLOCK.x), NAIVE_BLOCK, 0);

/// Threads per block: 32 columns by 8 rows of `C`.
pub const NAIVE_BLOCK: Dim3 = Dim3::xy(32, 8);

/// `C = alpha * A * B + beta * C`, one output element per thread.
///
/// # Parameters
/// `a`: `m x k` row-major; `b`: `k x n` row-major; `c`: `m x n` row-major.
///
/// # Thread mapping
/// Block `32 x 8`, grid `ceil(n/32) x ceil(m/8)`; thread `(tx, ty)` of block
/// `(bx, by)` computes `C[by*8 + ty][bx*32 + tx]`.
///
/// # Safety
/// `a`, `b`, `c` valid for `m*k`, `k*n`, `m*n` floats; `c` overlaps neither;
/// the launch uses [`super::Variant::launch_dims`].
#[inline(always)]
pub unsafe fn naive<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    let (t, blk) = (ctx.thread_idx(), ctx.block_idx());
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let col = (blk.x * NAIVE_BLOCK.x + t.x) as usize;
    let row = (blk.y * NAIVE_BLOCK.y + t.y) as usize;
    if row >= m || col >= n {
        return;
    }
    let mut acc = 0.0f32;
    for i in 0..k {
        // SAFETY: row < m, col < n, i < k: inside A and B.
        let (x, y) = unsafe { (a.load(row * k + i), b.load(i * n + col)) };
        acc = fma(x, y, acc);
    }
    // SAFETY: row < m, col < n: inside C.
    unsafe { store_c_at(c, row * n + col, acc, p.alpha, p.beta) }
}
