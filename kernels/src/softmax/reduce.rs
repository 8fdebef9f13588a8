//! Reductions over a warp (butterfly shuffles, no barrier) and over a block
//! (one barrier, one (max, sum) pair per warp through shared memory).

use super::maths::combine;
use super::{PAIRS_SHARED_BYTES, WARP};
use crate::ThreadCtx;

/// Maximum over the warp; every lane gets it. `f32::max` ignores NaN (PTX
/// `max.f32`), which is fine: a NaN reaches the sum and makes the row NaN.
#[inline(always)]
pub(crate) fn warp_max<C: ThreadCtx>(ctx: &C, mut v: f32) -> f32 {
    let mut mask = WARP / 2;
    while mask > 0 {
        v = v.max(ctx.shfl_xor_f32(v, mask));
        mask /= 2;
    }
    v
}

/// Sum over the warp (butterfly); every lane gets the same bits.
#[inline(always)]
pub(crate) fn warp_sum<C: ThreadCtx>(ctx: &C, mut v: f32) -> f32 {
    let mut mask = WARP / 2;
    while mask > 0 {
        v += ctx.shfl_xor_f32(v, mask);
        mask /= 2;
    }
    v
}

/// [`combine`] over the warp's lanes; every lane gets the same state.
#[inline(always)]
pub(crate) fn warp_combine<C: ThreadCtx>(ctx: &C, mut m: f32, mut s: f32) -> (f32, f32) {
    let mut mask = WARP / 2;
    while mask > 0 {
        let (om, os) = (ctx.shfl_xor_f32(m, mask), ctx.shfl_xor_f32(s, mask));
        (m, s) = combine(m, s, om, os);
        mask /= 2;
    }
    (m, s)
}

/// Combines one state per warp (`m`, `s` the same in every lane of a warp)
/// into the block's state, returned to every thread: lane 0 of each warp
/// writes its pair to shared memory, one barrier, then every warp combines
/// all pairs with shuffles (no second barrier).
///
/// # Safety
/// Called once per launch by every thread of a 1D block of whole warps,
/// with [`PAIRS_SHARED_BYTES`] of dynamic shared memory.
#[inline(always)]
pub(crate) unsafe fn block_combine<C: ThreadCtx>(ctx: &C, m: f32, s: f32) -> (f32, f32) {
    let pairs = ctx.shared::<f32>(PAIRS_SHARED_BYTES as usize / 4);
    let t = ctx.thread_idx().x;
    let (warp, lane) = ((t / WARP) as usize, t % WARP);
    let warps = ctx.block_dim().x / WARP;
    if lane == 0 {
        // SAFETY: warp < 32: inside the 64 floats of pairs.
        unsafe {
            pairs.store(2 * warp, m);
            pairs.store(2 * warp + 1, s);
        }
    }
    ctx.sync_threads();
    let (pm, ps) = if lane < warps {
        let l = lane as usize;
        // SAFETY: written by warp `lane` before the barrier.
        unsafe { (pairs.load(2 * l), pairs.load(2 * l + 1)) }
    } else {
        (f32::NEG_INFINITY, 0.0)
    };
    warp_combine(ctx, pm, ps)
}
