//! The sum after step 13's split K: `C = alpha * (P_0 + .. + P_{s-1}) +
//! beta * C`, where `P_z` is the product of run `z` of `K`'s tiles.
//! Measured in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! Each element adds its runs in `z` order, so the result is the same
//! bits on every launch, whichever block finished first. The partial
//! products were just written by the product, a few MiB at the shapes that
//! split (`m n` floats per run), and are read once from L2.

use super::{Problem, store_c_at};
use crate::registry::{Step, utilities};
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The sum in the registry (a utility of step 13).
pub const REDUCE_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// step 13's split K: `C = alpha` times the sum of the runs' partial products, added in run order, `+ beta C`
    reduce => "gemm_reduce" in "gemm/reduce.rs", geometry "reduce_dims(m * n)";
};

/// Threads per block.
pub const REDUCE_THREADS: u32 = 256;
/// The most blocks a launch takes (blocks stride over the rest).
pub const REDUCE_MAX_BLOCKS: u32 = 1 << 16;

/// Grid and block for `len` elements of `C`: one thread per element, at
/// most [`REDUCE_MAX_BLOCKS`] blocks.
pub const fn reduce_dims(len: u64) -> LaunchDims {
    let blocks = len.div_ceil(REDUCE_THREADS as u64);
    let blocks = if blocks > REDUCE_MAX_BLOCKS as u64 { REDUCE_MAX_BLOCKS } else { blocks as u32 };
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(REDUCE_THREADS, 1), shared_bytes: 0 }
}

/// `c[i] = alpha * sum_z parts[z * m n + i] + beta * c[i]` for every `i <
/// m n`, `z` from 0 to `runs - 1` in order (`beta == 0`: `c` not read).
///
/// # Thread mapping
/// 256 threads (1D), grid [`reduce_dims`]: thread `t` of block `b` takes
/// elements `256 b + t`, then every `256 gridDim.x` after it.
///
/// # Safety
/// `parts` holds `runs * m * n` floats, `c` `m * n`, and they do not overlap.
#[inline(always)]
pub unsafe fn reduce<C: ThreadCtx>(ctx: &C, parts: *const f32, c: *mut f32, p: Problem, runs: u32) {
    let len = p.m as usize * p.n as usize;
    let parts = ctx.global(parts, runs as usize * len);
    let c = ctx.global_mut(c, len);
    let step = ctx.grid_dim().x as usize * REDUCE_THREADS as usize;
    let mut i = ctx.block_idx().x as usize * REDUCE_THREADS as usize + ctx.thread_idx().x as usize;
    while i < len {
        let mut sum = 0.0f32;
        for z in 0..runs as usize {
            // SAFETY: z < runs, i < len: inside `parts`.
            sum += unsafe { parts.load(z * len + i) };
        }
        // SAFETY: i < len: inside `c`.
        unsafe { store_c_at(c, i, sum, p.alpha, p.beta) };
        i += step;
    }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "gpu-kernel" fn gemm_reduce(
    parts: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32, runs: u32,
) {
    // SAFETY: the host launcher checked the lengths and the geometry.
    unsafe { reduce(&crate::gpu::Gpu, parts, c, Problem { m, n, k, alpha, beta }, runs) }
}
