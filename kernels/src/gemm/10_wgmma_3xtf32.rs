//! Step 10 (tensor cores, Hopper, `sm_90a` only): 3xTF32, an FP32-accurate
//! GEMM on the TF32 tensor cores. Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** a TF32 value keeps 11 significant bits of an f32's 24. Split
//! each input `x` in two TF32 values, `hi = tf32(x)` and `lo = tf32(x - hi)`:
//! `hi + lo` holds 22 of them (`|x - hi - lo| <= 2^-22 |x|`). Then
//!
//! ```text
//! a b = a_hi b_hi + a_hi b_lo + a_lo b_hi + a_lo b_lo + (terms below 2^-22 |a b|)
//! ```
//!
//! and `a_lo b_lo` is itself below `2^-22 |a b|`: three TF32 products per
//! term, accumulated in f32, give the product to about `3 * 2^-22` relative
//! before summation, the order of FP32's own rounding. Products of two
//! TF32 values are exact in f32, so what remains is the accumulation's
//! rounding, as in an FP32 GEMM. Three times step 9's tensor-core work,
//! which runs at about eight times the FP32 pipes' rate.
//!
//! **Layout and pipeline:** step 9's: K-major tiles in the 128-byte swizzle,
//! staged by the threads (its loads and epilogue are reused), now four per
//! buffer (`A_hi`, `A_lo`, `B_hi`, `B_lo`: 96 KiB), so two buffers fit, not
//! three. With two, the buffer to refill was read by the previous tile's
//! products: each warpgroup waits for them (`wgmma.wait_group 1`), then a
//! barrier makes sure every warpgroup has, before the threads store over it.
//! Each 8-deep step issues the two small products before the large one, all
//! into one accumulator.
//!
//! **What it costs:** three times the tensor-core work and twice the shared
//! memory traffic of step 9, and one barrier more per tile.
//!
//! **What it does not yet deliver:** on the H100 its error grows in
//! proportion to `K` (10-15 times cuBLAS SGEMM's largest error at 4096^3 and
//! 8192^3, docs/gemm.md), where an FP32 GEMM's grows like `sqrt(K)`: the
//! tensor cores truncate each step's sum into the f32 accumulator, which
//! here runs over all of `K`, so the truncations lean one way and add up.
//! The CPU emulator truncates too and shows the same drift
//! (`tests/gemm/tensor_cores.rs`); step 11 removes it by promoting short partial sums.
//!
//! **Special values:** the split here (and in step 11) is the plain one: an
//! inf or NaN input turns its whole row or column of `C` into NaN (`inf -
//! tf32(inf)`), and `|x|` within half a TF32 ulp of `FLT_MAX` rounds to inf
//! in `hi`. Steps 13, 15 and 16 keep FP32 semantics through their marks
//! of non-finite inputs and `gemm_fixup` (docs/gemm.md); `gemm::sgemm`
//! runs step 16.

use super::warpgroup::{ROW_BYTES, StagedBlock, k_major_128b, store_fragment, store_split, swizzle_base, swizzled};
use super::wgmma::{NA, NB, load_tiles};
use super::{Problem, to_tf32};
use crate::ThreadCtx;

use super::wgmma::{WG_BM, WG_BN, WG_THREADS};
use super::{Dim3, Geometry, Precision, Split};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(
    Precision::Split3xTf32 { split: Split::Rounded, promoted: false },
    (WG_BM, WG_BN),
    Dim3::xy(WG_THREADS, 1),
    X3_SHARED_BYTES / 4,
);

/// Rows, columns and depth of a block's tile, and threads: step 9's.
const BM: usize = super::wgmma::WG_BM as usize;
const BN: usize = super::wgmma::WG_BN as usize;
const BK: usize = super::wgmma::WG_BK as usize;
const THREADS: usize = super::wgmma::WG_THREADS as usize;
/// Shared buffers in the pipeline.
const STAGES: usize = 2;
/// Bytes of one buffer: `A_hi`, `A_lo` (`BM` rows each), `B_hi`, `B_lo`
/// (`BN` rows each), rows of [`ROW_BYTES`].
const STAGE_BYTES: usize = 2 * (BM + BN) * ROW_BYTES;
/// Where each tile starts in a buffer.
const A_HI: usize = 0;
const A_LO: usize = BM * ROW_BYTES;
const B_HI: usize = 2 * BM * ROW_BYTES;
const B_LO: usize = 2 * BM * ROW_BYTES + BN * ROW_BYTES;

/// Bytes of shared memory per block: the buffers, and 1024 bytes to align
/// them to the swizzle pattern's period.
pub const X3_SHARED_BYTES: u32 = (STAGES * STAGE_BYTES) as u32 + 1024;

const _: () = assert!(STAGE_BYTES.is_multiple_of(1024) && A_LO.is_multiple_of(1024) && B_LO.is_multiple_of(1024));

/// `x` as `hi + lo`, both TF32 (see the module doc).
#[inline(always)]
pub fn split_tf32(x: f32) -> (f32, f32) {
    let hi = to_tf32(x);
    (hi, to_tf32(x - hi))
}

/// `C = alpha * A * B + beta * C` to about FP32 accuracy, on the TF32
/// tensor cores with `wgmma` (three products per term).
///
/// # Parameters
/// As [`super::naive`]. Shared memory: [`X3_SHARED_BYTES`] (193 KiB, an
/// opt-in size): two buffers of the `hi` and `lo` halves of a 128x32 `A`
/// tile and a 256x32 `B^T` tile, K-major, 128-byte swizzle.
///
/// # Thread mapping
/// As [`super::wgmma`]: 256 threads, two warpgroups of 64 rows by 256
/// columns, grid `ceil(n/256) x ceil(m/128)`; the same loads.
///
/// # Memory pattern
/// As [`super::wgmma`], with two shared stores per loaded vector.
///
/// # Safety
/// As [`super::naive`]; the GPU must run `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_3xtf32<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let blk = StagedBlock::new(ctx, (a, b, c), p, (BM, BN, BK));
    // SAFETY (both): forwarded.
    if blk.interior {
        unsafe { wgmma_3xtf32_with::<C, true>(ctx, blk) }
    } else {
        unsafe { wgmma_3xtf32_with::<C, false>(ctx, blk) }
    }
}

/// [`wgmma_3xtf32`]'s split staging, three products per step and
/// epilogue; unconditional vector loads when `INTERIOR`.
///
/// # Safety
/// As [`wgmma_3xtf32`]; `INTERIOR` only when `blk.interior`.
#[inline(always)]
unsafe fn wgmma_3xtf32_with<C: ThreadCtx, const INTERIOR: bool>(ctx: &C, blk: StagedBlock<'_, C>) {
    let StagedBlock { a, b, c, p, tid, m0, n0, vec, .. } = blk;
    let k = p.k as usize;

    let (base, base_addr) = swizzle_base(ctx, X3_SHARED_BYTES);
    // SAFETY: buffer `s` < STAGES: inside the launch's shared memory.
    let tiles = |s: usize| unsafe { base.at(s * STAGE_BYTES, STAGE_BYTES) };

    let load = |k0: usize, sa: &mut [[f32; 4]; NA], sb: &mut [[[f32; 4]; 4]; NB]| {
        // SAFETY: forwarded from the caller (A and B hold their matrices).
        unsafe { load_tiles::<INTERIOR>(&a, &b, &p, (m0, n0, k0), vec, tid, sa, sb) }
    };
    let stage = |s: usize, sa: &[[f32; 4]; NA], sb: &[[[f32; 4]; 4]; NB]| {
        unroll!(i < NA, [0, 1, 2, 3], {
            let v = tid + i * THREADS;
            let at = swizzled(v / 8, v % 8);
            // SAFETY: row v / 8 < BM, chunk < 8: inside the A tiles; 16-byte aligned.
            unsafe { store_split(tiles(s), A_HI + at, A_LO + at, sa[i]) };
        });
        unroll!(i < NB, [0, 1, 2, 3], {
            let v = tid + i * THREADS;
            unroll!(j < 4, [0, 1, 2, 3], {
                // Column j of the 4x4 block: 4 consecutive k of row 4 (v / 8) + j of B^T.
                let col = [sb[i][0][j], sb[i][1][j], sb[i][2][j], sb[i][3][j]];
                let at = swizzled(4 * (v / 8) + j, v % 8);
                // SAFETY: row < BN, chunk < 8: inside the B tiles; 16-byte aligned.
                unsafe { store_split(tiles(s), B_HI + at, B_LO + at, col) };
            });
        });
        ctx.fence_proxy_async();
    };

    let group = tid / 128;
    let mut acc = [0.0f32; 128];
    let (mut sa, mut sb) = ([[0.0f32; 4]; NA], [[[0.0f32; 4]; 4]; NB]);
    let tiles = k.div_ceil(BK);
    load(0, &mut sa, &mut sb);
    stage(0, &sa, &sb);
    ctx.sync_threads();
    for t in 0..tiles {
        let more = t + 1 < tiles;
        if more {
            load((t + 1) * BK, &mut sa, &mut sb);
        }
        let at = base_addr + ((t % STAGES) * STAGE_BYTES) as u32;
        let a_rows = (group * 64 * ROW_BYTES) as u32;
        let (a_hi, a_lo) = (at + (A_HI as u32) + a_rows, at + (A_LO as u32) + a_rows);
        let (b_hi, b_lo) = (at + B_HI as u32, at + B_LO as u32);
        ctx.wgmma_fence();
        unroll!(kk < BK / 8, [0, 1, 2, 3], {
            let step = (32 * kk) as u32;
            let d = |addr: u32| k_major_128b(addr + step);
            // SAFETY: buffer t % 2 holds tile t, stored and fenced by every
            // thread before the barrier that ended the previous iteration.
            unsafe {
                ctx.wgmma_m64n256k8_tf32(&mut acc, d(a_lo), d(b_hi));
                ctx.wgmma_m64n256k8_tf32(&mut acc, d(a_hi), d(b_lo));
                ctx.wgmma_m64n256k8_tf32(&mut acc, d(a_hi), d(b_hi));
            }
        });
        ctx.wgmma_commit();
        // This warpgroup's products of tile t - 1 are done; after the
        // barrier, every warpgroup's are, and their buffer is free.
        ctx.wgmma_wait::<1>(&mut acc);
        if more {
            ctx.sync_threads();
            stage((t + 1) % STAGES, &sa, &sb);
        }
        ctx.sync_threads();
    }
    ctx.wgmma_wait::<0>(&mut acc);
    // SAFETY: forwarded from the caller (C holds its matrix).
    unsafe { store_fragment(&c, &acc, &p, (m0, n0), tid) };
}
