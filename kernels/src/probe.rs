//! Kernels that measure the machine rather than do useful work. The kernels
//! are listed in [`STEPS`].

use crate::{LaunchDims, ThreadCtx};

use crate::registry::{Step, utilities};

/// This module's entries of the registry.
pub const STEPS: &[Step] = utilities! {
    op: "probe";
    /// launch overhead: one tiny launch, almost no work
    increment => "probe_increment" in "probe.rs", geometry "increment_dims(len)";
    /// the FP32 roof: independent FMA chains, no memory traffic
    fma_peak => "probe_fma_peak" in "probe.rs", geometry "fma_peak_dims(blocks)";
    /// the TF32 tensor-core roof: back-to-back wgmma m64n256k8 from shared memory, no global traffic
    // `wgmma` exists on sm_90a alone: only that module has this entry.
    tf32_peak => "probe_tf32_peak" in "probe.rs", geometry "tf32_peak_dims(blocks)" {
        needs: "sm_90a",
        opt_in_shared: true,
    };
    /// the INT8 tensor-core roof: back-to-back wgmma m64n256k32 of signed bytes from shared memory, s32 sums (the ceiling of an Ozaki-II GEMM's products)
    int8_peak => "probe_int8_peak" in "probe.rs", geometry "tf32_peak_dims(blocks)" {
        needs: "sm_90a",
        opt_in_shared: true,
    };
};

/// Threads per block of both probes.
pub const PROBE_BLOCK: u32 = 256;
/// Independent FMA chains per thread: enough to cover the FMA pipe's
/// latency (4 cycles) with 4 warp schedulers issuing every cycle.
pub const FMA_CHAINS: usize = 8;

/// Warpgroups per block of [`tf32_peak`]: two accumulators of 128
/// registers per thread fill most of the register file (one block per SM),
/// and two warpgroups keep the SM's four tensor cores fed while either
/// waits on its previous group.
pub const TC_WARPGROUPS: u32 = 2;
/// Threads per block of [`tf32_peak`].
pub const TC_BLOCK: u32 = 128 * TC_WARPGROUPS;
/// `N` of each `wgmma`: 256, the largest TF32 `m64nNk8` shape.
pub const TC_N: u32 = 256;
/// Depth of the shared tile: 32 TF32 values, one 128-byte swizzled row, so
/// one round is [`TC_WGMMAS_PER_ITER`] `wgmma`s of `k = 8`.
pub const TC_BK: u32 = 32;
/// `wgmma`s per warpgroup per iteration.
pub const TC_WGMMAS_PER_ITER: u32 = TC_BK / 8;
/// Floating-point operations of one `m64n256k8` (`2 M N K`).
pub const TC_FLOPS_PER_WGMMA: u64 = 2 * 64 * TC_N as u64 * 8;
/// K-major 128-byte rows in shared memory: each warpgroup's 64 rows of `A`,
/// then the 256 rows of `B` that both share.
const TC_ROWS: usize = (64 * TC_WARPGROUPS + TC_N) as usize;
/// Bytes of shared memory of [`tf32_peak`]: the tiles, and 1024 bytes to
/// align them to the swizzle's period.
pub const TC_SHARED_BYTES: u32 = TC_ROWS as u32 * TC_BK * 4 + 1024;

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

/// Launch geometry of [`tf32_peak`]: `blocks` blocks of [`TC_BLOCK`]
/// threads and [`TC_SHARED_BYTES`] of shared memory.
pub const fn tf32_peak_dims(blocks: u32) -> LaunchDims {
    LaunchDims { shared_bytes: TC_SHARED_BYTES, ..LaunchDims::linear(blocks, TC_BLOCK) }
}

/// Floating-point operations one [`tf32_peak`] launch performs: `2 M N K`
/// per `wgmma`, [`TC_WGMMAS_PER_ITER`] per iteration of each warpgroup.
pub const fn tf32_peak_flops(blocks: u32, iters: u32) -> u64 {
    let wgmmas = blocks as u64 * TC_WARPGROUPS as u64 * iters as u64 * TC_WGMMAS_PER_ITER as u64;
    wgmmas * TC_FLOPS_PER_WGMMA
}

/// Operand `i` of [`tf32_peak`]'s shared tiles (row `i / 32`, `k = i % 32`
/// of the K-major rows: `A`'s, then `B`'s): a hash of `i` and `seed` as a
/// multiple of 2^-10 in [-1, 1), exact in TF32, so that the products are
/// exact and the bits the tensor cores see toggle as a GEMM's would (a
/// constant operand draws less power and may clock higher).
pub const fn tf32_peak_operand(i: u32, seed: u32) -> f32 {
    let h = (i ^ seed.wrapping_mul(0x9e37_79b9)).wrapping_mul(2_654_435_761) >> 21;
    (h as i32 - 1024) as f32 / 1024.0
}

/// The shared rows that thread `thread` of a tensor-core probe's block
/// multiplies into each of its 128 accumulators (`wgmma`'s D fragment:
/// row `16 w + l / 4 + 8 ((i / 2) % 2)` of its warpgroup's `A`, column
/// `2 (l % 4) + 8 (i / 4) + i % 2` of `B`, for warp `w`, lane `l`), as
/// `(A's row, B's row)` of the tiles ([`TC_ROWS`]).
fn peak_fragment(thread: u32) -> impl Iterator<Item = (u32, u32)> {
    let (group, warp, lane) = (thread / 128, (thread % 128) / 32, thread % 32);
    (0..128u32).map(move |i| {
        let row = 64 * group + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
        (row, 64 * TC_WARPGROUPS + 2 * (lane % 4) + 8 * (i / 4) + i % 2)
    })
}

/// What thread `thread` of a [`tf32_peak`] block stores after `iters`
/// iterations, in f64, and the sum of the magnitudes of every product it
/// adds up (the scale of its rounding error): each of its 128 accumulators
/// ([`peak_fragment`]) adds the 32-deep dot product of its row and column
/// once per iteration.
pub fn tf32_peak_expected(thread: u32, iters: u32, seed: u32) -> (f64, f64) {
    let (mut sum, mut scale) = (0.0f64, 0.0f64);
    for (row, col) in peak_fragment(thread) {
        for k in 0..TC_BK {
            let p = tf32_peak_operand(row * TC_BK + k, seed) as f64 * tf32_peak_operand(col * TC_BK + k, seed) as f64;
            sum += p;
            scale += if p < 0.0 { -p } else { p };
        }
    }
    (iters as f64 * sum, iters as f64 * scale)
}

/// Integer operations of one `m64n256k32` of [`int8_peak`] (`2 M N K`):
/// four times a TF32 `m64n256k8`'s, from the same 32 bytes of each row.
pub const I8_OPS_PER_WGMMA: u64 = 2 * 64 * TC_N as u64 * 32;

/// Integer operations one [`int8_peak`] launch performs (its geometry is
/// [`tf32_peak_dims`]'s: the same tiles, rounds and `wgmma`s per round).
pub const fn int8_peak_ops(blocks: u32, iters: u32) -> u64 {
    tf32_peak_flops(blocks, iters) / TC_FLOPS_PER_WGMMA * I8_OPS_PER_WGMMA
}

/// Byte `i` of [`int8_peak`]'s shared tiles (row `i / 128`, `k = i % 128`):
/// a signed byte hashed from `i` and `seed`, every bit toggling as a
/// GEMM's operands would.
pub const fn int8_peak_operand(i: u32, seed: u32) -> i8 {
    ((i ^ seed.wrapping_mul(0x9e37_79b9)).wrapping_mul(2_654_435_761) >> 24) as u8 as i8
}

/// What thread `thread` of an [`int8_peak`] block stores after `iters`
/// iterations: the sum of its 128 accumulators ([`peak_fragment`]), each the 128-deep dot product of its row and
/// column `iters` times, all in wrapping s32 arithmetic as the tensor
/// cores' accumulators and the thread's sum are.
pub fn int8_peak_expected(thread: u32, iters: u32, seed: u32) -> i32 {
    let byte = |row: u32, k: u32| int8_peak_operand(row * 128 + k, seed) as i32;
    peak_fragment(thread).fold(0i32, |sum, (row, col)| {
        let dot = (0..128).fold(0i32, |d, k| d.wrapping_add(byte(row, k) * byte(col, k)));
        sum.wrapping_add(dot.wrapping_mul(iters as i32))
    })
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

/// Fills the tensor-core probes' shared tiles ([`TC_ROWS`] K-major rows of
/// 128 bytes in the 128-byte swizzle: each warpgroup's 64 rows of `A`,
/// then the 256 rows of `B`), the 4-byte words `at..at + 4` of the rows
/// (`at = 32 row + 4 chunk`) from `chunk(at)`, fences them for the tensor
/// cores and waits for the block; returns the shared addresses of this
/// thread's warpgroup's `A` rows and of `B`'s.
#[inline(always)]
fn peak_tiles<C: ThreadCtx>(ctx: &C, chunk: impl Fn(u32) -> [f32; 4]) -> (u32, u32) {
    use crate::gemm::{swizzle_base, swizzled};
    let tid = ctx.thread_idx().x as usize;
    let (base, base_addr) = swizzle_base(ctx, TC_SHARED_BYTES);
    // SAFETY: TC_ROWS rows of 128 bytes, inside the launch's shared memory
    // after the alignment skew.
    let tile = unsafe { base.at(0, TC_ROWS * 128) };
    let mut v = tid;
    while v < TC_ROWS * 8 {
        let (row, chunk_of_row) = (v / 8, v % 8);
        let at = (row * TC_BK as usize + 4 * chunk_of_row) as u32;
        let vals = chunk(at);
        // SAFETY: row < TC_ROWS, chunk < 8: inside the tile; 16-byte aligned.
        unsafe { tile.store_f32x4(swizzled(row, chunk_of_row), vals) };
        v += TC_BLOCK as usize;
    }
    ctx.fence_proxy_async();
    ctx.sync_threads();
    let group = tid / 128;
    (base_addr + (group * 64 * 128) as u32, base_addr + (64 * TC_WARPGROUPS as usize * 128) as u32)
}

/// The tensor-core probes' rounds: `iters` times, [`TC_WGMMAS_PER_ITER`]
/// `$wgmma`s from the tiles at `$tiles` (`A`'s rows, `B`'s, from
/// [`peak_tiles`]) into `$acc` as one committed group, the warpgroup then
/// waiting (`$wait`) until only that group is in flight; then all.
macro_rules! peak_rounds {
    ($ctx:ident, $acc:ident, $iters:expr, ($a:expr, $b:expr), $wgmma:ident $(($($flag:expr),*))?, $wait:ident) => {{
        use crate::gemm::k_major_128b;
        for _ in 0..$iters {
            $ctx.wgmma_fence();
            unroll!(kk < TC_WGMMAS_PER_ITER as usize, [0, 1, 2, 3], {
                let step = (32 * kk) as u32;
                // SAFETY: the tiles were stored and fenced before the
                // barrier in `peak_tiles` and are never written again.
                unsafe { $ctx.$wgmma(&mut $acc, k_major_128b($a + step), k_major_128b($b + step) $($(, $flag)*)?) };
            });
            $ctx.wgmma_commit();
            $ctx.$wait::<1>(&mut $acc);
        }
        $ctx.$wait::<0>(&mut $acc);
    }};
}

/// The TF32 tensor-core roof: each warpgroup issues `iters` rounds of
/// [`TC_WGMMAS_PER_ITER`] `wgmma.mma_async` `m64n256k8` TF32 products into
/// its 128 accumulators, both operands read from shared memory (filled once
/// with [`tf32_peak_operand`]), then each thread stores the sum of its
/// accumulators (so nothing is optimised away, and the result is checkable:
/// [`tf32_peak_expected`]).
///
/// The loop is step 9's (`gemm/09_wgmma.rs`) without its loads: a round is
/// one committed group, and the warpgroup waits for the group before it
/// (`wgmma_wait::<1>`), so one group is always queued behind the running
/// one. With the two warpgroups of a block (one block per SM: 128
/// accumulator registers per thread), four `wgmma`s of 128 tensor-core
/// cycles each stand in line per SM. The shared operands (10 KiB per `wgmma`)
/// are the same every round: the rate measured is the tensor pipe's with
/// operands from shared memory, the ceiling that a `wgmma` GEMM's mainloop
/// meets, not a bound on its loads.
///
/// # Safety
/// `out` valid for one float per thread of the grid; the launch is
/// [`tf32_peak_dims`]; the GPU runs `sm_90a` code.
#[inline(always)]
pub unsafe fn tf32_peak<C: ThreadCtx>(ctx: &C, out: *mut f32, iters: u32, seed: u32) {
    let tid = ctx.thread_idx().x as usize;
    let (a_addr, b_addr) = peak_tiles(ctx, |at| [0u32, 1, 2, 3].map(|q| tf32_peak_operand(at + q, seed)));
    let mut acc = [0.0f32; 128];
    peak_rounds!(ctx, acc, iters, (a_addr, b_addr), wgmma_m64n256k8_tf32, wgmma_wait);

    let mut sum = 0.0f32;
    unroll!(
        i < 128,
        [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
            29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55,
            56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82,
            83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107,
            108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127
        ],
        {
            sum += acc[i];
        }
    );
    let i = (ctx.block_idx().x * ctx.block_dim().x) as usize + tid;
    let out = ctx.global_mut(out, (ctx.grid_dim().x, ctx.block_dim().x));
    // SAFETY: one element per thread of the grid.
    unsafe { out.store(i, sum) };
}

/// The INT8 tensor-core roof: [`tf32_peak`]'s loop with `wgmma.mma_async`
/// `m64n256k32` of signed bytes into s32 accumulators, the same 128-byte
/// rows holding 128 bytes of `k` where they held 32 TF32 values (filled
/// once with [`int8_peak_operand`]): four times the products a round, the
/// instruction the modular products of an Ozaki-II GEMM run on. Each
/// thread stores the wrapping sum of its accumulators
/// ([`int8_peak_expected`]).
///
/// # Safety
/// `out` valid for one `i32` per thread of the grid; the launch is
/// [`tf32_peak_dims`]; the GPU runs `sm_90a` code.
#[inline(always)]
pub unsafe fn int8_peak<C: ThreadCtx>(ctx: &C, out: *mut i32, iters: u32, seed: u32) {
    let tid = ctx.thread_idx().x as usize;
    let word =
        |w: u32| f32::from_bits(u32::from_le_bytes([0, 1, 2, 3].map(|j| int8_peak_operand(4 * w + j, seed) as u8)));
    let (a_addr, b_addr) = peak_tiles(ctx, |at| [0u32, 1, 2, 3].map(|q| word(at + q)));
    let mut acc = [0i32; 128];
    peak_rounds!(ctx, acc, iters, (a_addr, b_addr), wgmma_m64n256k32_s8(true), wgmma_wait_s32);
    let mut sum = 0i32;
    for x in acc {
        sum = sum.wrapping_add(x);
    }
    let i = (ctx.block_idx().x * ctx.block_dim().x) as usize + tid;
    let out = ctx.global_mut(out, (ctx.grid_dim().x, ctx.block_dim().x));
    // SAFETY: one element per thread of the grid.
    unsafe { out.store(i, sum) };
}

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(probe_increment(x: *mut f32, len: u32) => increment);

#[cfg(target_arch = "nvptx64")]
crate::registry::entry!(probe_fma_peak(out: *mut f32, iters: u32, seed: f32) => fma_peak);

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
crate::registry::entry!(probe_tf32_peak(out: *mut f32, iters: u32, seed: u32) => tf32_peak);

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
crate::registry::entry!(probe_int8_peak(out: *mut i32, iters: u32, seed: u32) => int8_peak);

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

    /// The TF32 probe on the emulator (whose `wgmma` computes at issue from
    /// shared memory through the same descriptors): every thread stores
    /// `iters` times the sum of its accumulators' 32-deep dot products, so
    /// each warpgroup issued exactly `4 iters` full `m64n256k8` products over
    /// the intended rows and columns, the work that [`tf32_peak_flops`] counts.
    #[test]
    fn tf32_peak_adds_iters_rounds_of_its_operands_and_counts_2mnk_per_wgmma() {
        assert_eq!(TC_FLOPS_PER_WGMMA, 2 * 64 * 256 * 8);
        assert_eq!(tf32_peak_flops(132, 1000), 132 * 2 * 1000 * 4 * 262_144);
        assert_eq!(tf32_peak_dims(3).block.count(), 256);
        assert!(TC_SHARED_BYTES > 48 * 1024 && crate::OPT_IN_SHARED.contains(&"probe_tf32_peak"));
        // Exact in TF32 (no bits below the top 11), and not constant.
        for i in 0..4096 {
            let x = tf32_peak_operand(i, 7);
            assert!((-1.0..1.0).contains(&x) && x.to_bits() & 0x1fff == 0, "{i}: {x}");
        }
        assert!((1..64).any(|i| tf32_peak_operand(i, 7) != tf32_peak_operand(0, 7)));

        const BLOCKS: u32 = 2;
        let (iters, seed) = (3, 7);
        let mut out = Aligned::<{ (BLOCKS * TC_BLOCK) as usize }>([f32::NAN; (BLOCKS * TC_BLOCK) as usize]);
        let p = SyncMutPtr::new(&mut out.0);
        // SAFETY: one float per thread of the grid; the probe's own geometry.
        let report =
            emu::launch_checked(tf32_peak_dims(BLOCKS), |ctx| unsafe { tf32_peak(ctx, p.get(), iters, seed) }).unwrap();
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        for (i, &got) in out.0.iter().enumerate() {
            let (want, scale) = tf32_peak_expected(i as u32 % TC_BLOCK, iters, seed);
            assert!((got as f64 - want).abs() <= 1e-5 * scale, "thread {i}: {got} vs {want} (scale {scale})");
        }
        // A different seed, different operands: the check above is not vacuous.
        assert_ne!(tf32_peak_expected(5, iters, seed).0, tf32_peak_expected(5, iters, seed + 1).0);
    }

    /// The INT8 probe on the emulator (its `wgmma` of signed bytes reads
    /// the tiles through the same descriptors as the TF32 one): every
    /// thread stores `iters` times its accumulators' 128-deep dot products,
    /// exactly, so each warpgroup issued `4 iters` full `m64n256k32`s.
    #[test]
    fn int8_peak_adds_iters_rounds_of_its_operands_exactly() {
        assert_eq!(int8_peak_ops(132, 1000), 4 * tf32_peak_flops(132, 1000));
        assert!(crate::OPT_IN_SHARED.contains(&"probe_int8_peak"));
        // Every byte value occurs, and both signs.
        let bytes: std::collections::BTreeSet<i8> = (0..4096).map(|i| int8_peak_operand(i, 7)).collect();
        assert!(bytes.len() > 200 && bytes.contains(&-128) && bytes.contains(&127), "{}", bytes.len());

        const BLOCKS: u32 = 2;
        let (iters, seed) = (3, 7);
        let mut out = [i32::MIN; (BLOCKS * TC_BLOCK) as usize];
        let p = SyncMutPtr::new(&mut out);
        // SAFETY: one i32 per thread of the grid; the probe's own geometry.
        let report =
            emu::launch_checked(tf32_peak_dims(BLOCKS), |ctx| unsafe { int8_peak(ctx, p.get(), iters, seed) }).unwrap();
        assert!(report.findings.is_empty(), "{:#?}", report.findings);
        for (i, &got) in out.iter().enumerate() {
            assert_eq!(got, int8_peak_expected(i as u32 % TC_BLOCK, iters, seed), "thread {i}");
        }
        assert_ne!(int8_peak_expected(5, iters, seed), int8_peak_expected(5, iters, seed + 1));
    }
}
