//! The TMA ring of steps 12-16: `S` stages of shared memory that one
//! producer thread fills with TMA copies while the consumer warpgroups
//! multiply, each stage with two mbarriers. `full` completes a phase when
//! the stage's copies have landed (the producer's one arrival, which sets
//! the bytes to expect, and the copies' bytes); `empty` when every
//! consumer thread has released the stage. The `t`-th fill of the ring
//! is use `t / S` of stage `t % S`: it completes the phase of parity
//! `(t / S) & 1` of each of the stage's barriers.

use crate::{TensorMap, ThreadCtx};

/// A ring of `S` stages, its barriers in shared memory `at` bytes from
/// `base`: the `S` `full` barriers, then the `S` `empty` ones.
#[derive(Clone, Copy)]
pub(super) struct Ring<const S: usize> {
    pub base: u32,
    pub at: usize,
}

impl<const S: usize> Ring<S> {
    pub const fn full(self, s: usize) -> u32 {
        self.base + (self.at + 8 * s) as u32
    }
    pub const fn empty(self, s: usize) -> u32 {
        self.full(S + s)
    }
    /// The stage of the `t`-th fill.
    pub const fn stage(self, t: usize) -> usize {
        t % S
    }
    /// The parity of the phase the `t`-th fill completes.
    pub const fn parity(self, t: usize) -> u32 {
        (t / S) as u32 & 1
    }

    /// Thread 0 sets up every stage's barriers: `full` for the producer's
    /// one arrival, `empty` for `consumers`; then the block synchronises.
    #[inline(always)]
    pub fn init<C: ThreadCtx>(self, ctx: &C, tid: usize, consumers: usize) {
        if tid == 0 {
            for s in 0..S {
                ctx.mbarrier_init(self.full(s), 1);
                ctx.mbarrier_init(self.empty(s), consumers as u32);
            }
            ctx.mbarrier_init_fence();
        }
        ctx.sync_threads();
    }
}

/// The producer thread's first act: the tensor maps it copies through,
/// fenced for the TMA's proxy and prefetched, in order.
///
/// # Safety
/// Each is a tensor map in global memory, written before the launch.
#[inline(always)]
pub(super) unsafe fn acquire<C: ThreadCtx, const N: usize>(ctx: &C, maps: [*const TensorMap; N]) {
    for map in maps {
        // SAFETY: the caller's contract.
        unsafe { ctx.tensormap_acquire(map) };
    }
}

/// The producer's loop over `$tiles` fills of `$ring`: the `t`-th waits
/// for the consumers' release of its stage from fill `t - S` (the first
/// `S` pass at once: parity 1 of a fresh barrier counts as completed),
/// sets the stage's `full` to expect `$bytes`, and runs `$copy` with `$s`
/// the stage and `$t` the fill, which issues the tile's copies onto
/// `full($s)`. A macro, not a method taking a closure: through a closure,
/// LLVM counts the fills with other instructions in steps 13 and 14.
macro_rules! produce {
    ($ctx:expr, $ring:expr, $tiles:expr, $bytes:expr, |$s:ident, $t:ident| $copy:block) => {
        for $t in 0..$tiles {
            let $s = $ring.stage($t);
            $ctx.mbarrier_wait($ring.empty($s), $ring.parity($t) ^ 1);
            $ctx.mbarrier_arrive_expect_tx($ring.full($s), $bytes);
            $copy
        }
    };
}
pub(super) use produce;
