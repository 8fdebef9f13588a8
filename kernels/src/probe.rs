//! Kernels that measure the machine rather than do useful work. The kernels
//! are listed in [`STEPS`].

use crate::{LaunchDims, ThreadCtx};

use crate::registry::Step;

/// This module's entries of the registry.
pub const STEPS: &[Step] = &[
    Step::utility([
        "probe",
        "increment",
        "probe_increment",
        "probe.rs",
        "launch overhead: one tiny launch, almost no work",
        "increment_dims(len)",
    ]),
    Step::utility([
        "probe",
        "fma_peak",
        "probe_fma_peak",
        "probe.rs",
        "the FP32 roof: independent FMA chains, no memory traffic",
        "fma_peak_dims(blocks)",
    ]),
];

/// Threads per block of both probes.
pub const PROBE_BLOCK: u32 = 256;
/// Independent FMA chains per thread: enough to cover the FMA pipe's
/// latency (4 cycles) with 4 warp schedulers issuing every cycle.
pub const FMA_CHAINS: usize = 8;

/// Launch geometry of [`increment`] over `len` elements.
pub const fn increment_dims(len: u32) -> LaunchDims {
    LaunchDims::linear(len.div_ceil(PROBE_BLOCK), PROBE_BLOCK)
}

/// Launch geometry of [`fma_peak`]: `blocks` blocks of [`PROBE_BLOCK`] threads.
pub const fn fma_peak_dims(blocks: u32) -> LaunchDims {
    LaunchDims::linear(blocks, PROBE_BLOCK)
}

/// Floating-point operations one [`fma_peak`] launch performs.
pub const fn fma_peak_flops(blocks: u32, iters: u32) -> u64 {
    2 * FMA_CHAINS as u64 * iters as u64 * blocks as u64 * PROBE_BLOCK as u64
}

/// `x[i] += 1` for `i < len`: the smallest launch that still does something
/// observable, so launch overhead can be measured and checked.
///
/// # Safety
/// `x` valid for `len` floats.
#[inline(always)]
pub unsafe fn increment<C: ThreadCtx>(ctx: &C, x: *mut f32, len: u32) {
    let x = ctx.global_mut(x, len);
    let i = ctx.block_idx().x * ctx.block_dim().x + ctx.thread_idx().x;
    if i < len {
        // SAFETY: i < len.
        unsafe { x.store(i as usize, x.load(i as usize) + 1.0) };
    }
}

/// `iters` rounds of [`FMA_CHAINS`] independent `a = a * b + c` per thread,
/// then one store per thread (so nothing is optimised away).
///
/// # Safety
/// `out` valid for one float per thread of the grid.
#[inline(always)]
pub unsafe fn fma_peak<C: ThreadCtx>(ctx: &C, out: *mut f32, iters: u32, seed: f32) {
    let i = (ctx.block_idx().x * ctx.block_dim().x + ctx.thread_idx().x) as usize;
    let mut acc = [0.0f32; FMA_CHAINS];
    for (k, a) in acc.iter_mut().enumerate() {
        *a = seed + k as f32 + i as f32 * 1e-7;
    }
    // b slightly below 1 and c small keep the chains finite for any iters.
    let (b, c) = (0.999_999f32, 1e-7f32 * seed);
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = crate::math::fma(*a, b, c);
        }
    }
    let sum = acc.iter().fold(0.0, |s, a| s + a);
    let out = ctx.global_mut(out, (ctx.grid_dim().x, ctx.block_dim().x));
    // SAFETY: one element per thread of the grid.
    unsafe { out.store(i, sum) };
}

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(probe_increment(x: *mut f32, len: u32) => increment);

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(probe_fma_peak(out: *mut f32, iters: u32, seed: f32) => fma_peak);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::{self, Op, SyncMutPtr};

    /// Floats aligned as `cuMemAlloc`'s buffers are (256 bytes), so that the
    /// sectors counted are a GPU's, whatever alignment the heap gives.
    #[repr(C, align(256))]
    struct Aligned<const N: usize>([f32; N]);

    /// `increment` reads and writes each float once, a warp's 128 bytes in 4
    /// sectors a request; `fma_peak` writes one float per thread, the same
    /// way. The checker finds nothing (the last block's threads past `len`
    /// access nothing).
    #[test]
    fn the_probes_pass_the_checker_and_move_4_sectors_a_request() {
        let len = 1000u32;
        let mut x = Aligned::<1000>(core::array::from_fn(|i| i as f32));
        let p = SyncMutPtr::new(&mut x.0);
        // SAFETY: `x` holds `len` floats.
        let report = emu::launch_checked(increment_dims(len), |ctx| unsafe { increment(ctx, p.get(), len) }).unwrap();
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        assert!(x.0.iter().enumerate().all(|(i, &v)| v == i as f32 + 1.0));
        for op in [Op::GlobalLoad, Op::GlobalStore] {
            let t = report.counters.total(op);
            // 31 whole warps and one of 8 lanes (1000 = 31 * 32 + 8).
            assert_eq!((t.requests, t.bytes, t.transactions), (32, 4000, 31 * 4 + 1), "increment {}", op.name());
        }

        const BLOCKS: u32 = 3;
        let mut out = Aligned::<{ (BLOCKS * PROBE_BLOCK) as usize }>([0.0; (BLOCKS * PROBE_BLOCK) as usize]);
        let p = SyncMutPtr::new(&mut out.0);
        // SAFETY: one float per thread of the grid.
        let report =
            emu::launch_checked(fma_peak_dims(BLOCKS), |ctx| unsafe { fma_peak(ctx, p.get(), 10, 1.0) }).unwrap();
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        assert!(out.0.iter().all(|v| v.is_finite() && *v > 0.0));
        let t = report.counters.total(Op::GlobalStore);
        assert_eq!((t.requests, t.per_request(), t.efficiency()), (3 * 8, 4.0, 1.0));
    }
}
