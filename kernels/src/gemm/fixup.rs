//! The fix-up after step 13: FP32 semantics for non-finite inputs.
//! Measured in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! Step 13 multiplies TF32 halves of its operands (`x ~ hi + lo`), and a
//! non-finite `x` has no such halves: `inf - tf32(inf)` is NaN, and a NaN
//! whose payload lies only in the low 13 bits reads as inf in TF32. So
//! `gemm_pack` writes zero halves for every non-finite value and marks its
//! row of `A` or column of `B` ([`super::pack::Marks`]); the product then
//! sees only finite values. In FP32 every element of a marked row or column
//! of `C` is non-finite (a term `inf * b` is `±inf` or NaN, a NaN term is
//! NaN, and no FMA turns a non-finite sum finite again), and this kernel
//! recomputes exactly those elements from the source matrices in FP32, one
//! FMA per term: `alpha * dot` is then what an FP32 GEMM gets, sign of inf
//! and NaN alike.
//!
//! What `beta * C0` adds: the product has already overwritten `C` with
//! `alpha * acc + beta * C0`, `acc` finite (the zeroed terms left out), so
//! that value is non-finite exactly where `beta * C0` is (or where the
//! finite sum itself overflows): there the fix-up adds it (`+inf + -inf` is
//! NaN, as in FP32), elsewhere `alpha * dot` stands alone. With `beta == 0`
//! `C` is not read. That needs a finite `alpha`: with `alpha` inf or NaN
//! every product value is non-finite and `beta * C0` cannot be told from
//! it, so the host runs step 7 for such a product instead
//! (`coalesce::gemm`'s plan).
//!
//! The pass costs nothing measurable when no input is marked: every block
//! reads one word (`marks[0]`) and exits, no host synchronisation, so the
//! launch stays in a CUDA graph as a node of its own.

use super::Problem;
use crate::math::fma;
use crate::registry::{Step, params_and_entry, utilities};
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The fix-up in the registry (a utility of step 13).
pub const FIXUP_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// step 13's rows and columns of `C` whose inputs hold a non-finite value, recomputed with FP32 FMAs (exits at once when none)
    fixup => "gemm_fixup" in "gemm/fixup.rs", geometry "fixup_dims(m, n)";
};

/// Threads per block.
pub const FIXUP_THREADS: u32 = 128;
/// The most blocks a launch takes.
pub const FIXUP_MAX_BLOCKS: u32 = 264;

/// Grid and block for an `m x n` output: a block per 128 of the longer
/// side, at most [`FIXUP_MAX_BLOCKS`] (blocks stride over the work).
pub const fn fixup_dims(m: u32, n: u32) -> LaunchDims {
    let side = if m > n { m } else { n };
    let blocks = side.div_ceil(FIXUP_THREADS);
    let blocks = if blocks > FIXUP_MAX_BLOCKS { FIXUP_MAX_BLOCKS } else { blocks };
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(FIXUP_THREADS, 1), shared_bytes: 0 }
}

/// Recomputes the elements of `C` in the rows of `A` and the columns of `B`
/// that `marks` names: `marks[0]` is nonzero if any is, `marks[1 + i]` for
/// row `i` of `A`, `marks[1 + m + j]` for column `j` of `B` (written by the
/// two `gemm_pack` passes).
///
/// # Thread mapping
/// 128 threads (1D), grid [`fixup_dims`]. Rows first: item `r` is row `r /
/// chunks` of `C`, columns `128 (r % chunks) ..+128`, thread `t` the column
/// `+t`; blocks take items `block, block + grid, ..`. Then columns the same
/// way, skipping rows already marked (each element is written once).
///
/// # Safety
/// `a`, `b`, `c` hold the `m x k`, `k x n`, `m x n` matrices, `c` overlaps
/// neither; `marks` holds `1 + m + n` words that nothing writes meanwhile.
#[inline(always)]
pub unsafe fn fixup<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem, marks: *const u32) {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let marks = ctx.global(marks, 1 + m + n);
    // SAFETY: inside `marks` (the caller's contract).
    if unsafe { marks.load(0) } == 0 {
        return;
    }
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    let t = ctx.thread_idx().x as usize;
    let (first, step) = (ctx.block_idx().x as usize, ctx.grid_dim().x as usize);
    const T: usize = FIXUP_THREADS as usize;
    // Element (i, j): i < m, j < n (checked by the callers below).
    let fix = |i: usize, j: usize| {
        let mut dot = 0.0f32;
        for q in 0..k {
            // SAFETY: i < m, j < n, q < k: inside A and B.
            dot = fma(unsafe { a.load(i * k + q) }, unsafe { b.load(q * n + j) }, dot);
        }
        let d = p.alpha * dot;
        let v = if p.beta == 0.0 {
            d
        } else {
            // SAFETY: inside C.
            let old = unsafe { c.load(i * n + j) };
            if old.is_finite() { d } else { d + old }
        };
        // SAFETY: inside C.
        unsafe { c.store(i * n + j, v) };
    };
    // At least 1: a divisor that the compiler sees nonzero (no panic path).
    let chunks = n.div_ceil(T).max(1);
    let mut r = first;
    while r < m * chunks {
        let (i, j) = (r / chunks, r % chunks * T + t);
        // SAFETY: i < m: inside `marks`.
        if j < n && unsafe { marks.load(1 + i) } != 0 {
            fix(i, j);
        }
        r += step;
    }
    let chunks = m.div_ceil(T).max(1);
    let mut r = first;
    while r < n * chunks {
        let (j, i) = (r / chunks, r % chunks * T + t);
        // SAFETY: j < n, i < m: inside `marks`.
        if i < m && unsafe { marks.load(1 + m + j) } != 0 && unsafe { marks.load(1 + i) } == 0 {
            fix(i, j);
        }
        r += step;
    }
}

params_and_entry! {
    /// `gemm_fixup`'s parameters, in order.
    FixupParams => gemm_fixup(
        a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, marks: *const u32,
    ) {
        // SAFETY: the host launcher checked the lengths and the geometry.
        unsafe { fixup(&crate::gpu::Gpu, a, b, c, Problem { m, n, k, alpha, beta }, marks) }
    }
}
