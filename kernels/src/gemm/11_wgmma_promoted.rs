//! Step 11 (tensor cores, Hopper, `sm_90a` only): step 10's 3xTF32 with the
//! partial sums promoted: the tensor cores sum 32 of `K` at a time, and the
//! threads add those partial sums up in f32, rounding to nearest. Measured
//! in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Why:** step 10 is FP32-accurate by its split, but on the H100 its
//! error grows in proportion to `K`, where an FP32 GEMM's grows like
//! `sqrt(K)` against `|C|` (docs/gemm.md: 10-15 times cuBLAS SGEMM's
//! largest error at 4096^3-8192^3). The tensor cores add each 8-deep
//! step's products into the f32 accumulator without rounding to nearest:
//! they truncate the aligned sum, so each of the `3 K / 8` steps moves the
//! running sum toward zero by up to an ulp of it. Over all of `K` in one
//! register these errors lean the same way for as long as the sum keeps its
//! sign, and add up instead of cancelling.
//!
//! **Idea:** DeepSeek-V3's FP8 GEMM meets the same limit and bounds it by
//! promotion. Here the `wgmma` accumulators hold one 32-deep tile's partial
//! sum only: the tile's first `wgmma` runs with scale-d 0, which starts a
//! new sum instead of adding to the old one, and once the tile's products
//! are done each thread adds the partial sums into a second set of registers
//! with an ordinary `add.f32`, which rounds to nearest. A tile's 12
//! truncations still lean one way, but toward zero of a 32-deep partial
//! sum (about `sqrt(32)` terms large, not `sqrt(K)`), whose sign is a coin
//! toss from tile to tile: across tiles they cancel as rounding errors do.
//! What remains is `K / 32` roundings to nearest of the promoted sum, where
//! an FP32 GEMM makes `K`.
//!
//! **Tile:** an `m64n256` accumulator is 128 registers a thread, and two
//! sets of it do not fit in 255. Each warpgroup now issues `m64n128k8`
//! (64 registers a set, 128 for both, 160 with the staged loads) and the
//! block's tile is 128x128: two warpgroups of 64 rows by 128 columns, 256
//! threads, one block per SM as before (more would need under 128
//! registers a thread). The tiles keep step 9's layout (K-major rows of
//! 32, the 128-byte swizzle) and step 10's `hi`/`lo` halves.
//!
//! **Pipeline:** two buffers, one barrier per tile. Each tile ends with
//! `wgmma.wait_group 0` (the partial sums are read right after), so by the
//! barrier that closes tile `t` no `wgmma` still reads its buffer: the
//! threads store tile `t + 1` into the other buffer, which tile `t - 1`
//! used, while tile `t`'s products run.
//!
//! **What it costs:** the tensor cores drain at the end of every tile:
//! the next tile's products are issued only after the wait, the 64 adds
//! and the barrier, where step 10 keeps one group queued behind the other.
//! The smaller tile needs 4/3 as many global loads (and splits and shared
//! stores) per product as a 128x256 one, and the tensor cores read `A` from
//! shared memory once per 128 columns, not 256. The adds themselves are
//! few: 64 a thread per tile, against 12 `wgmma`s of 12288 FLOPs a thread.
//!
//! On the CPU emulator the tensor cores' accumulation truncates too (each
//! 8-deep step is rounded into `D` toward zero, see `emu/wgmma.rs`), so
//! `tests/gemm/tensor_cores.rs` shows step 10's drift and this step's fix without a GPU.

use super::warpgroup::{ROW_BYTES, load4, products_3x, promote, store_split, swizzle_base, swizzled};
use super::{Problem, aligned16, store_c_at};
use crate::{Global, GlobalMut, Load, ThreadCtx};

use super::{Dim3, Geometry, Precision, Split};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(
    Precision::Split3xTf32 { split: Split::Rounded, promoted: true },
    (PR_BM, PR_BN),
    Dim3::xy(PR_THREADS, 1),
    PR_SHARED_BYTES / 4,
);

/// Rows of the `C` tile per block: two warpgroups of 64.
pub const PR_BM: u32 = 128;
/// Columns of the `C` tile per block: one `m64n128k8` per warpgroup.
pub const PR_BN: u32 = 128;
/// Threads per block: two warpgroups.
pub const PR_THREADS: u32 = 256;

const BM: usize = PR_BM as usize;
const BN: usize = PR_BN as usize;
/// Depth of a staged tile (one 128-byte swizzled row of TF32 values), and
/// of one partial sum: the accumulators are promoted after every tile.
const BK: usize = super::wgmma::WG_BK as usize;
const THREADS: usize = PR_THREADS as usize;
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
/// 16-byte vectors of the `A` tile per thread.
const NA: usize = BM * BK / 4 / THREADS;
/// 4x4 blocks of the `B` tile per thread.
const NB: usize = BK * BN / 16 / THREADS;
/// Accumulator registers per thread and set: the `m64n128` fragment.
const ACC: usize = 64;

/// Bytes of shared memory per block: the buffers, and 1024 bytes to align
/// them to the swizzle pattern's period.
pub const PR_SHARED_BYTES: u32 = (STAGES * STAGE_BYTES) as u32 + 1024;

const _: () = assert!(NA * THREADS * 4 == BM * BK && NB == 1 && NB * THREADS * 16 == BK * BN);
const _: () = assert!(STAGE_BYTES.is_multiple_of(1024) && A_LO.is_multiple_of(1024) && B_LO.is_multiple_of(1024));
const _: () = assert!(ACC * 2 == BN);

/// `C = alpha * A * B + beta * C` to FP32 accuracy on the TF32 tensor cores
/// (three products per term), the tensor cores' sums promoted into f32
/// registers every 32 of `K`.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: [`PR_SHARED_BYTES`] (129 KiB, an
/// opt-in size): two buffers of the `hi` and `lo` halves of a 128x32 `A`
/// tile and a 128x32 `B^T` tile, K-major, 128-byte swizzle.
///
/// # Thread mapping
/// 256 threads (1D), grid `ceil(n/128) x ceil(m/128)`. Warpgroup `g`
/// (threads `128 g ..+128`) owns rows `64 g ..+64` of the block's tile, all
/// 128 columns; its thread `t` holds the `m64n128` D fragment (see
/// [`ThreadCtx::wgmma_m64n128k8_tf32`]) twice: the partial sum, and the
/// promoted sum. Staging: thread `t` moves vectors `t + 256 i` (`i < 4`) of
/// `A` (row `v / 8`, chunk `v % 8`) and the 4x4 block `t` of `B` (rows of
/// `K` `4 (t % 8) ..+4`, columns of `N` `4 (t / 8) ..+4`).
///
/// # Memory pattern
/// As [`super::wgmma`]: `A`: 8 lanes read one 128-byte row segment; `B`: 8
/// lanes read 16 bytes of 8 different rows, 4 such groups side by side (64
/// contiguous bytes per row). Shared stores: 16 bytes a lane, the 8 lanes
/// of a quarter warp on the 8 chunks of one swizzled row: all 32 banks.
///
/// # Safety
/// As [`super::naive`]; the GPU must run `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_promoted<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // SAFETY (both): forwarded.
    if interior(a.as_ptr(), b.as_ptr(), &p, ctx.block_idx()) {
        unsafe { wgmma_promoted_with::<C, true>(ctx, a, b, c, p) }
    } else {
        unsafe { wgmma_promoted_with::<C, false>(ctx, a, b, c, p) }
    }
}

/// Whether every tile of block `blk` is whole and vector-readable: its `C`
/// tile inside `C`, `K` a multiple of the tile depth, rows of `A` and `B`
/// 16-byte aligned. Such a block loads with unconditional 16-byte loads
/// (step 9's `interior` says why that matters).
#[inline(always)]
fn interior(a: *const f32, b: *const f32, p: &Problem, blk: crate::Dim3) -> bool {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    (blk.y as usize + 1) * BM <= m
        && (blk.x as usize + 1) * BN <= n
        && k.is_multiple_of(BK)
        && n.is_multiple_of(4)
        && aligned16(a, b, b)
}

/// [`wgmma_promoted`], with unconditional vector loads when `INTERIOR`.
///
/// # Safety
/// As [`wgmma_promoted`]; `INTERIOR` only when [`interior`] says so.
#[inline(always)]
unsafe fn wgmma_promoted_with<C: ThreadCtx, const INTERIOR: bool>(
    ctx: &C, a: Global<'_, C, f32>, b: Global<'_, C, f32>, c: GlobalMut<'_, C, f32>, p: Problem,
) {
    let tid = ctx.thread_idx().x as usize;
    let blk = ctx.block_idx();
    let (n, k) = (p.n as usize, p.k as usize);
    let (m0, n0) = (blk.y as usize * BM, blk.x as usize * BN);
    let (ap, bp) = (a.as_ptr(), b.as_ptr());
    let vec = (k.is_multiple_of(4) && aligned16(ap, ap, ap), n.is_multiple_of(4) && aligned16(bp, bp, bp));

    let (base, base_addr) = swizzle_base(ctx, PR_SHARED_BYTES);
    // SAFETY: buffer `s` < STAGES: inside the launch's shared memory.
    let tiles = |s: usize| unsafe { base.at(s * STAGE_BYTES, STAGE_BYTES) };

    // Tile t's `K` range. An interior block walks `K` in whole tiles. An
    // edge block takes the residue first, `kw = (K - 1) % BK + 1` deep (read
    // with checks, zeros past it), so that every later tile is whole in `K`
    // and needs no check there (see `load_tiles`).
    let kw = (k - 1) % BK + 1;
    let range = |t: usize| match (INTERIOR, t) {
        (true, _) => (t * BK, k),
        (false, 0) => (0, kw),
        (false, _) => (kw + (t - 1) * BK, k),
    };
    let load = |t: usize, sa: &mut [[f32; 4]; NA], sb: &mut [[f32; 4]; 4]| {
        // SAFETY: forwarded from the caller (A and B hold their matrices).
        unsafe { load_tiles::<INTERIOR>(&a, &b, &p, (m0, n0), range(t), vec, tid, sa, sb) }
    };
    let stage = |s: usize, sa: &[[f32; 4]; NA], sb: &[[f32; 4]; 4]| {
        unroll!(i < NA, [0, 1, 2, 3], {
            let v = tid + i * THREADS;
            let at = swizzled(v / 8, v % 8);
            // SAFETY: row v / 8 < BM, chunk < 8: inside the A tiles; 16-byte aligned.
            unsafe { store_split(tiles(s), A_HI + at, A_LO + at, sa[i]) };
        });
        unroll!(j < 4, [0, 1, 2, 3], {
            // Column j of the 4x4 block: 4 consecutive k of row 4 (tid / 8) + j of B^T.
            let col = [sb[0][j], sb[1][j], sb[2][j], sb[3][j]];
            let at = swizzled(4 * (tid / 8) + j, tid % 8);
            // SAFETY: row < BN, chunk < 8: inside the B tiles; 16-byte aligned.
            unsafe { store_split(tiles(s), B_HI + at, B_LO + at, col) };
        });
        ctx.fence_proxy_async();
    };

    let group = tid / 128;
    // The promoted sum, and the tensor cores' partial sum of the current
    // tile (each tile's first product overwrites it: no reset needed).
    let mut acc = [0.0f32; ACC];
    let mut part = [0.0f32; ACC];
    let (mut sa, mut sb) = ([[0.0f32; 4]; NA], [[0.0f32; 4]; 4]);
    let tiles = k.div_ceil(BK);
    load(0, &mut sa, &mut sb);
    stage(0, &sa, &sb);
    ctx.sync_threads();
    for t in 0..tiles {
        let more = t + 1 < tiles;
        if more {
            load(t + 1, &mut sa, &mut sb);
        }
        let at = base_addr + ((t % STAGES) * STAGE_BYTES) as u32;
        let a_rows = (group * 64 * ROW_BYTES) as u32;
        let (a_hi, a_lo) = (at + (A_HI as u32) + a_rows, at + (A_LO as u32) + a_rows);
        let (b_hi, b_lo) = (at + B_HI as u32, at + B_LO as u32);
        ctx.wgmma_fence();
        // SAFETY: buffer t % 2 holds tile t, stored and fenced by every
        // thread before the barrier that ended the previous iteration.
        unsafe { products_3x(ctx, &mut part, ((a_hi, a_lo), (b_hi, b_lo))) };
        ctx.wgmma_commit();
        // Buffer (t + 1) % 2 was tile t - 1's, whose products every
        // warpgroup waited for before the last barrier.
        if more {
            stage((t + 1) % STAGES, &sa, &sb);
        }
        ctx.wgmma_wait_n128::<0>(&mut part);
        promote(&mut acc, &part);
        ctx.sync_threads();
    }
    // SAFETY: forwarded from the caller (C holds its matrix).
    unsafe { store_fragment(&c, &acc, &p, (m0, n0), tid) };
}

// This step keeps its own `interior` and `store_fragment`, the same logic
// as `warpgroup.rs`'s that steps 9, 10, 12 and 13 share: built from those
// and the shared `products_3x` and `promote`, this kernel ran 2.0-3.0%
// slower in a same-run A/B on an H100 (docs/measurements/2026-11-24-h100-registry-ab at commit f58f145),
// over the ±1% a refactor may cost (docs/contributing.md). With the shared
// `products_3x` and `promote` alone it compiles to the instructions of its
// own copies (ptx/ENTRIES.sha256).

/// Loads the tiles at `k0` of `A` (this thread's [`NA`] vectors) and `B`
/// (its 4x4 block) into registers, mapped as the kernel's doc says: 16-byte
/// loads where the tile is whole and rows are vector-aligned (`vec`: `(A,
/// B)`), checked loads with zeros elsewhere; only 16-byte loads, without a
/// branch, when `INTERIOR` ([`interior`]).
///
/// Every load is unconditional, so that a tile's loads fly together
/// instead of each waiting behind its own bounds branch: 16-byte loads
/// where the tile is inside and rows are vector-aligned; else four 4-byte
/// loads from addresses clamped into the matrix. A row of `A` past `M`
/// reads row 0 and a column of `B` past `N` reads column `N - 1`: they feed
/// only elements of `C` that are never stored. `K` must be exact: the `K`
/// range `k0..kend` of a tile is whole (`BK` deep) but for the residue an
/// edge block takes first, whose elements past `kend` are replaced by zeros
/// after their (clamped) loads. (Taking the residue first made 4000^3, whose
/// every block is an edge block, 8% faster than checking each load of the
/// last tile: 59.2 against 54.9 TFLOP/s on the H100.) Rows that are not
/// 16-byte aligned (`K` or `N` not a multiple of 4) take the 4-byte loads
/// on every tile, four requests for each 16 bytes: 27 TFLOP/s at 4095^3,
/// where step 7 reaches 41 (step 13's operand pass pads such rows
/// instead).
///
/// # Safety
/// `a` and `b` hold the `m * k` and `k * n` floats; `kend <= k`; `INTERIOR`
/// only when [`interior`] holds for this block.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn load_tiles<const INTERIOR: bool>(
    a: &impl Load<f32>, b: &impl Load<f32>, p: &Problem, (m0, n0): (usize, usize), (k0, kend): (usize, usize),
    vec: (bool, bool), tid: usize, sa: &mut [[f32; 4]; NA], sb: &mut [[f32; 4]; 4],
) {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let whole_k = INTERIOR || k0 + BK <= kend;
    let (fa, fb) = (INTERIOR || (m0 + BM <= m && whole_k && vec.0), INTERIOR || (n0 + BN <= n && whole_k && vec.1));
    use core::hint::select_unpredictable as select;
    unroll!(i < NA, [0, 1, 2, 3], {
        let v = tid + i * THREADS;
        let (r, c) = (m0 + v / 8, k0 + 4 * (v % 8));
        sa[i] = if fa {
            // SAFETY: the tile is inside A, rows vector-aligned.
            unsafe { load4(a, (m, k), k, r, c, true) }
        } else {
            // Clamped into A; columns past kend (the residue tile only) read
            // as zeros, chosen after the load, not branched around it.
            let row = select(r < m, r, 0);
            let mut x = [0.0f32; 4];
            unroll!(q < 4, [0, 1, 2, 3], {
                let col = select(c + q < kend, c + q, kend - 1);
                // SAFETY: row < m and col < kend <= k: inside A.
                let y = unsafe { a.load(row * k + col) };
                x[q] = select(whole_k || c + q < kend, y, 0.0);
            });
            x
        };
    });
    unroll!(j < 4, [0, 1, 2, 3], {
        let (r, c) = (k0 + 4 * (tid % 8) + j, n0 + 4 * (tid / 8));
        sb[j] = if fb {
            // SAFETY: as above, for B.
            unsafe { load4(b, (k, n), n, r, c, true) }
        } else {
            // Rows past kend (the residue tile only) read as zeros.
            let (row, inside) = (select(r < kend, r, kend - 1), whole_k || r < kend);
            let mut x = [0.0f32; 4];
            unroll!(q < 4, [0, 1, 2, 3], {
                let col = select(c + q < n, c + q, n - 1);
                // SAFETY: row < kend <= k and col < n: inside B.
                let y = unsafe { b.load(row * n + col) };
                x[q] = select(inside, y, 0.0);
            });
            x
        };
    });
}

/// Stores thread `tid`'s promoted sums (two warpgroups of 64 rows, the
/// `m64n128` D layout) into the block's tile of `C` at `(m0, n0)`.
///
/// # Safety
/// `c` holds the `m * n` floats.
#[inline(always)]
unsafe fn store_fragment<C: ThreadCtx>(
    c: &GlobalMut<'_, C, f32>, acc: &[f32; ACC], p: &Problem, (m0, n0): (usize, usize), tid: usize,
) {
    let (m, n) = (p.m as usize, p.n as usize);
    let (group, warp, lane) = (tid / 128, (tid % 128) / 32, tid % 32);
    let row0 = m0 + 64 * group + 16 * warp + lane / 4;
    let col0 = n0 + 2 * (lane % 4);
    let fast = m0 + BM <= m && n0 + BN <= n;
    unroll!(
        i < ACC,
        [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
            29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55,
            56, 57, 58, 59, 60, 61, 62, 63
        ],
        {
            let (r, cc) = (row0 + 8 * ((i / 2) % 2), col0 + 8 * (i / 4) + i % 2);
            if fast || (r < m && cc < n) {
                // SAFETY: inside C (interior block, or checked).
                unsafe { store_c_at(*c, r * n + cc, acc[i], p.alpha, p.beta) };
            }
        }
    );
}
