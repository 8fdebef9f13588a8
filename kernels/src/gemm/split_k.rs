//! Split K: where a GEMM's `C` has too few tiles to fill the GPU (1024^2
//! is 64 tiles of 128 x 128 on 132 SMs), each tile's `K` is cut into
//! `S` runs and a block computes one run: `S` times the blocks, each a
//! `1/S` of the depth. Steps 15 and 16 read the block's run from
//! `blockIdx.z` and write its partial product to slice `z` of a
//! workspace; this kernel then sums the slices in order and writes
//! `alpha * sum + beta * C`, the epilogue of an unsplit step. `alpha` is
//! applied once, to the whole sum, as an FP32 GEMM applies it: scaled
//! slices can overflow where their sum does not (`alpha = 3e36`, slices of
//! `320` and `-280`: `+inf + -inf` is NaN, where `alpha * 40` is finite).
//! The
//! host chooses `S` per shape (`coalesce::gemm`'s plan). Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! The sum runs in a fixed order, so a result does not depend on which
//! block finished first (atomics would make it depend on that); it reads
//! `S` slices and writes `C` once, all of it in L2 at the shapes that split.

use super::Problem;
use crate::registry::{Step, params_and_entry, utilities};
use crate::vector::F4;
use crate::{LaunchDims, ThreadCtx};

/// The sum in the registry (a utility of steps 15 and 16).
pub const SPLIT_K_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// the partial products of a split-K launch of step 15 or 16, summed in order into `C` as `alpha * sum + beta * C`
    sum_splits => "gemm_sum_splits" in "gemm/split_k.rs", geometry "sum_splits_dims(m, n)";
};

/// Threads per block of the sum.
pub const SUM_THREADS: u32 = 256;
/// The most runs a tile's `K` is cut into.
pub const MAX_SPLITS: u32 = 8;
/// The fewest 32-deep tiles of `K` a run takes: shallower runs pay their
/// pipeline's start more than the blocks they add gain.
pub const MIN_TILES_PER_SPLIT: u32 = 8;

/// Runs of `K` for a grid of `tiles` blocks on `sm_count` SMs with
/// `k_tiles` tiles of depth: the most that keeps one block per SM (a
/// second wave would cost what the split gains), at most [`MAX_SPLITS`],
/// each run at least [`MIN_TILES_PER_SPLIT`] deep; 1 where `C`'s tiles
/// alone reach half the SMs.
pub const fn splits_for(tiles: u32, k_tiles: u32, sm_count: u32) -> u32 {
    if tiles == 0 || 2 * tiles > sm_count {
        return 1;
    }
    let by_sms = sm_count / tiles;
    let by_depth = k_tiles / MIN_TILES_PER_SPLIT;
    let s = if by_sms < by_depth { by_sms } else { by_depth };
    let s = if s < MAX_SPLITS { s } else { MAX_SPLITS };
    if s == 0 { 1 } else { s }
}

/// The 32-deep tiles of `K` run `z` of `splits` takes: `(first, count)`;
/// `count` is 0 only for a run past the end, which [`splits_for`] never
/// makes.
#[inline(always)]
pub const fn run_of(k_tiles: u32, z: u32, splits: u32) -> (u32, u32) {
    let splits = if splits == 0 { 1 } else { splits };
    let per = k_tiles.div_ceil(splits);
    let first = if z * per < k_tiles { z * per } else { k_tiles };
    let left = k_tiles - first;
    (first, if per < left { per } else { left })
}

/// Grid and block of the sum for an `m x n` `C`: a thread per 16-byte
/// vector of `C` (the blocks stream through memory in launch order).
pub const fn sum_splits_dims(m: u32, n: u32) -> LaunchDims {
    LaunchDims::covering(m as u64 * n as u64, 4, SUM_THREADS, i32::MAX as u32)
}

/// `C = alpha * (parts[0] + parts[1] + .. + parts[splits - 1]) + beta * C`,
/// summed in that order, elementwise over the `m * n` elements; `C` is not
/// read where `beta == 0` (BLAS). `parts` holds `splits` slices of `m * n`
/// floats, the unscaled partial products.
///
/// # Thread mapping
/// Thread `g` of the grid takes 16-byte vector `g` of `C` (and `g + G`, ..
/// past the grid); where `parts` and `c` are not both 16-byte aligned, or
/// past the last whole vector, elements go one at a time.
///
/// # Safety
/// `parts` holds `splits * m * n` floats, `c` holds `m * n`, and they do
/// not overlap.
#[inline(always)]
pub unsafe fn sum_splits<C: ThreadCtx>(ctx: &C, parts: *const f32, c: *mut f32, p: Problem, splits: u32) {
    let len = p.m as usize * p.n as usize;
    let s = splits as usize;
    let (parts, c) = (ctx.global(parts, s * len), ctx.global_mut(c, len));
    let first = ctx.block_idx().x as usize * ctx.block_dim().x as usize + ctx.thread_idx().x as usize;
    let stride = ctx.grid_dim().x as usize * ctx.block_dim().x as usize;
    let aligned = (parts.as_ptr().addr() | c.as_ptr().addr()).is_multiple_of(16) && len.is_multiple_of(4);
    let vectors = if aligned { len / 4 } else { 0 };
    let (parts4, c4) = (parts.cast::<F4>(s * vectors), c.cast::<F4>(vectors));
    let mut i = first;
    while i < vectors {
        let mut sum = [0.0f32; 4];
        for z in 0..s {
            // SAFETY: slice z's vector i: (z * len) / 4 + i < s * vectors
            // (len is a multiple of 4 here).
            let F4(v) = unsafe { parts4.load(z * vectors + i) };
            sum = core::array::from_fn(|q| if z == 0 { v[q] } else { sum[q] + v[q] });
        }
        sum = sum.map(|x| p.alpha * x);
        if p.beta != 0.0 {
            // SAFETY: i < vectors.
            let F4(old) = unsafe { c4.load(i) };
            sum = core::array::from_fn(|q| sum[q] + p.beta * old[q]);
        }
        // SAFETY: as above.
        unsafe { c4.store(i, F4(sum)) };
        i += stride;
    }
    let mut i = 4 * vectors + first;
    while i < len {
        let mut sum = 0.0f32;
        for z in 0..s {
            // SAFETY: z < s, i < len.
            let v = unsafe { parts.load(z * len + i) };
            sum = if z == 0 { v } else { sum + v };
        }
        sum *= p.alpha;
        if p.beta != 0.0 {
            // SAFETY: i < len.
            sum += p.beta * unsafe { c.load(i) };
        }
        // SAFETY: as above.
        unsafe { c.store(i, sum) };
        i += stride;
    }
}

params_and_entry! {
    /// `gemm_sum_splits`'s parameters, in order.
    SumSplitsParams => gemm_sum_splits(
        parts: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, splits: u32,
    ) {
        // SAFETY: the host launcher sized the workspace and checked C.
        unsafe { sum_splits(&crate::gpu::Gpu, parts, c, Problem { m, n, k, alpha, beta }, splits) }
    }
}
