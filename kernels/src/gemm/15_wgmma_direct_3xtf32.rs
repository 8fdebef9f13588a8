//! Step 15 (tensor cores, Hopper, `sm_90a` only): step 13's FP32-accurate
//! 3xTF32 with promoted partial sums, on `A` and `B` as they are, as step
//! 14 reads them: no operand pass. Measured in
//! [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! **Idea:** step 13 splits each operand into TF32 halves in a pass before
//! the product (`gemm_pack`), which writes four halves, and its blocks then
//! read all four through L2: twice the bytes of the operands, every tile
//! row and column over. Here the TMA copies `A` and `B` as f32, once, and
//! the block splits them in shared memory and in registers:
//!
//! - **The tensor cores truncate:** they read an f32's top 19 bits, so an
//!   f32 operand is already its high half, `hi = trunc(x)` (as CUTLASS
//!   splits its big half: no rounding past `FLT_MAX`), and the block only
//!   makes the low half, `lo = tf32(x - hi)` (`x - hi` exact, under `2^-10
//!   |x|`, rounded to nearest by two integer operations). Each split is
//!   then exact to `2^-21 |x|` where step 13's is to `2^-22`, and the
//!   dropped `lo * lo` is under `2^-20 |a b|`
//!   ([`super::Variant::error_bound`]).
//! - **`B` in registers**, as step 14: the block computes `C^T = B^T A^T`,
//!   and each consumer thread loads its fragment of `B` from the N-major
//!   tile: the loaded values are `B^T_hi`'s fragment, and their low halves
//!   `B^T_lo`'s.
//! - **`A` in shared memory:** `wgmma` reads the K-major `A` tile through a
//!   descriptor: the f32 tile the TMA copied is `A_hi`, and a **splitter
//!   warpgroup** writes `A_lo` beside it in the stage, tiles ahead of the
//!   consumers.
//!
//! So the operands cross L2 as f32 once per block, half of step 13's
//! bytes, and per 8 of `K` the consumers issue `B_hi A_lo`, `B_lo A_hi`
//! and `B_hi A_hi` (step 13's order, the small products first) into a
//! partial sum that each 32-deep tile promotes into f32 registers (step
//! 11's promotion: the tensor cores' truncation stays inside one tile).
//!
//! **What it costs:** the splitter reads and writes 32 KiB of shared memory
//! a stage, in the banks the TMA writes and the tensor cores read: the
//! product alone is slower than step 13's, and the step wins only where
//! a pass weighs most (small `C`, shallow `K`). Step 16 takes `A_lo` out of
//! the block. `docs/gemm.md` measures what each part of the split costs.
//!
//! **Non-finite inputs** have no halves: the splitter writes zeros over a
//! non-finite `a` (both halves) and the consumers use zero halves for a
//! non-finite `b`, and each raises the mark of its row of `A` or column of
//! `B` (the marks follow the tensor maps in the workspace, zeroed before
//! the launch): `gemm_fixup` recomputes those rows and columns of `C` in
//! FP32 after the product, as after step 13.
//!
//! **The block:** 384 threads. Warpgroups 0 and 1 consume: warpgroup `g`
//! owns columns `64 g ..+64` of the 128x128 tile of `C` (`wgmma`'s `M`, rows
//! of `C^T`), all 128 rows (`N`), `m64n128k8` with `A` in registers, 64
//! registers a set, two sets (partial and promoted), and a tile's
//! fragments twice (32 registers): the next tile's are loaded and split
//! while this tile's 12 products run. Warpgroup 2 splits, and its first
//! thread issues the copies: four stages of 48 KiB (`A`'s tile, its
//! `A_lo`, `B`'s tile), each tile's copies queued two tiles before its
//! split, so the splitter runs up to two tiles ahead of the consumers.
//!
//! The barriers, one of each a stage: `full` (the copies landed), `ready`
//! (the splitter's 128 threads wrote `A_lo`, fenced for the tensor cores'
//! proxy) and `empty` (the consumers' 256 threads are done with the tile).
//!
//! **Walking tiles:** where `C` has more tiles than the GPU has SMs and a
//! tile few passes over `K` (8192x8192x256: 4096 tiles of 8), the host
//! launches one block an SM, and each block computes tiles `i, i + G, ..`
//! with its passes as one sequence: the stages' phases run on from tile to
//! tile, so the copies and the split of a tile's first stages overlap the
//! last tile's products and its store. The copying thread and the
//! splitters count their tile and pass rather than dividing the pass
//! index, and a block of one tile runs a second copy of the code with no
//! walk in it: code in the splitters' loop costs the step where it is
//! bound (docs/gemm.md, "Blocks that walk tiles").

use super::scale::{exponent, pow2, unscale};
use super::split_k::run_of;
use super::warpgroup::{
    ACC_N128, TMA_GROUP_ROWS, grouped_tile_at, k_major_128b, promote, store_transposed, swizzle_base, swizzled,
};
use super::wgmma_direct::{DIRECT_B_BOX, pair_of};
use super::{Dim3, F4, Feed, Geometry, Operand, Precision, Problem, Split};
use crate::mem::{GlobalMut, Shared};
use crate::vector::F2;
use crate::{TensorMap, ThreadCtx};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(
    Precision::Split3xTf32 { split: Split::TopBits, promoted: true },
    (DX3_BM, DX3_BN),
    Dim3::xy(DX3_THREADS, 1),
    DX3_SHARED_BYTES / 4,
)
.fed_by(Feed { a: Operand::AsItIs, b: Operand::AsItIs, scaled: false })
.splitting_k()
.walking_tiles(DX3_WALK_PASSES);

/// The most passes over `K` a tile may take for blocks to walk tiles: a
/// walk hides each tile's pipeline fill and its store behind the next
/// tile's copies, which weigh most where a tile has few passes (measured
/// on an H200: 3.5% faster at 8192x8192x256, 8 passes; 0.6% and 1.6% slower
/// at 4096^3 and 2048x2048x8192, 128 and 256 passes; docs/gemm.md). No
/// shape between 8 and 128 passes was timed walking: 16 is a choice.
pub const DX3_WALK_PASSES: u32 = 16;

/// Rows of the `C` tile per block: `wgmma`'s `N`, the rows of `A` a stage holds.
pub const DX3_BM: u32 = 128;
/// Columns of the `C` tile per block: two consumer warpgroups of 64 (`wgmma`'s `M`).
pub const DX3_BN: u32 = 128;
/// Depth of a stage: 32 of `K`, one 128-byte swizzled row of `A`'s tile.
pub const DX3_BK: u32 = 32;
/// Threads per block: two consumer warpgroups and the splitter warpgroup.
pub const DX3_THREADS: u32 = 3 * 128;
/// Registers per thread: 168 at launch (65536 for 384 threads, 3 warps on
/// each SM sub-partition's 16384); then the splitter warpgroup gives all
/// but 56 back and each consumer takes 224 (`setmaxnreg`), for its two
/// sets of 64 accumulators and two fragment pairs.
pub const DX3_REGS: (u32, u32) = (56, 224);
/// Stages of the pipeline.
pub const DX3_STAGES: u32 = 4;
/// How many tiles ahead of its split the splitter queues a tile's copies:
/// it is then at most `DX3_STAGES - DX3_FILL_AHEAD` tiles ahead of the
/// consumers.
pub const DX3_FILL_AHEAD: u32 = 2;
/// Bytes one stage holds: `A`'s 128 x 32 tile, its `A_lo`, and `B`'s 32 x 128.
pub const DX3_STAGE_BYTES: u32 = (2 * DX3_BM + DX3_BN) * DX3_BK * 4;
/// Bytes of shared memory per block: the stages, three 8-byte barriers a
/// stage (`full`, `ready`, `empty`), and 1024 bytes to align the tiles to
/// the swizzle's period.
pub const DX3_SHARED_BYTES: u32 = DX3_STAGES * DX3_STAGE_BYTES + 3 * 8 * DX3_STAGES + 1024;
/// Byte offset of the marks from `A`'s tensor map (after `A`'s and `B`'s maps).
pub const DX3_MARKS_OFFSET: usize = 2 * size_of::<TensorMap>();

const BM: usize = DX3_BM as usize;
const BN: usize = DX3_BN as usize;
const BK: usize = DX3_BK as usize;
const STAGES: usize = DX3_STAGES as usize;
const AHEAD: usize = DX3_FILL_AHEAD as usize;
const STAGE_BYTES: usize = DX3_STAGE_BYTES as usize;
/// Bytes of `A`'s tile (and of its `A_lo`).
pub(super) const A_BYTES: usize = BM * BK * 4;
/// Bytes of one `B` box: 32 rows (`k`) of 128 bytes.
const BOX_BYTES: usize = (DIRECT_B_BOX * DX3_BK * 4) as usize;
/// Threads that consume (both warpgroups), and that split.
pub(super) const CONSUMERS: usize = 256;
const SPLITTERS: usize = 128;
/// 16-byte chunks of `A`'s tile each splitter thread takes.
const CHUNKS: usize = A_BYTES / 16 / SPLITTERS;

const _: () = assert!(BK * 4 == 128 && A_BYTES.is_multiple_of(1024) && BOX_BYTES.is_multiple_of(1024));
const _: () = assert!(CHUNKS * 16 * SPLITTERS == A_BYTES && BN == 4 * DIRECT_B_BOX as usize);
const _: () = assert!(0 < AHEAD && AHEAD < STAGES);

/// Byte offset from the aligned base of stage `s`'s tile of `A`.
pub(super) const fn a_tile(s: usize) -> usize {
    s * STAGE_BYTES
}

/// Byte offset of stage `s`'s `A_lo`.
pub(super) const fn lo_tile(s: usize) -> usize {
    s * STAGE_BYTES + A_BYTES
}

/// Byte offset of stage `s`'s box `j` of `B`.
pub(super) const fn b_box(s: usize, j: usize) -> usize {
    s * STAGE_BYTES + 2 * A_BYTES + j * BOX_BYTES
}

/// The shared address of barrier `i`, after the stages.
const fn bar(base: u32, i: usize) -> u32 {
    base + (STAGES * STAGE_BYTES + 8 * i) as u32
}

/// Stage `s`'s barriers: `full` (its copies landed), `ready` (its `A_lo`
/// written), `empty` (the consumers are done with it).
pub(super) const fn full(base: u32, s: usize) -> u32 {
    bar(base, s)
}
const fn ready(base: u32, s: usize) -> u32 {
    bar(base, STAGES + s)
}
pub(super) const fn empty(base: u32, s: usize) -> u32 {
    bar(base, 2 * STAGES + s)
}

/// The phase parity of pass `g`'s use of its stage (its `g / 4`-th).
pub(super) const fn parity(g: usize) -> u32 {
    (g / STAGES) as u32 & 1
}

/// The consumers, threads `0..256`: for each of the block's `units` tiles
/// (`origin(j)`, `tiles` passes each, flat pass `j * tiles + t`), the
/// fragments of `B` loaded from each stage and split in registers, 12
/// products a stage into the partial sum, promoted into `acc`, and the
/// tile stored to `C`. With `SPLITTER`, a pass waits for its stage's
/// `ready` (the splitter's `A_lo`) as well as its `full`. With `SCALED`
/// (step 16, [`super::scale`]), `A` arrives scaled by rows and the
/// consumers scale their columns of `B` by `2^-s_j` before the split, and
/// multiply each element of `C` back by `2^(r_i + s_j)` before the store.
///
/// # Safety
/// Stage `g % STAGES` holds pass `g`'s tiles of `A`, `A_lo` and `B` once
/// its barriers complete phase `parity(g)`; `marks` as
/// [`wgmma_direct_3xtf32`]'s, followed when `SCALED` by the `m` rows' and
/// the `n` columns' peaks (`gemm_maxima`); `c` holds the `m * n` floats.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn consume<C: ThreadCtx, const SPLITTER: bool, const SCALED: bool>(
    ctx: &C, (smem, base): (Shared<'_, C, u8>, u32), marks: GlobalMut<'_, C, u32>, c: GlobalMut<'_, C, f32>,
    p: Problem, (units, tiles): (usize, usize), origin: impl Fn(usize) -> (usize, usize), tid: usize,
) {
    let (m, n) = (p.m as usize, p.n as usize);
    // The scale exponent of row `i` of `A` and of column `j` of `B`.
    let row_exp = |i: usize| {
        // SAFETY: i < m: inside the rows' peaks, after the marks.
        if i < m { exponent(unsafe { marks.load(1 + m + n + i) }) } else { 0 }
    };
    let col_exp = |j: usize| {
        // SAFETY: j < n: inside the columns' peaks, after the rows'.
        if j < n { exponent(unsafe { marks.load(1 + 2 * m + n + j) }) } else { 0 }
    };
    let wait = |g: usize| {
        if SPLITTER {
            ctx.mbarrier_wait(ready(base, g % STAGES), parity(g));
        }
        ctx.mbarrier_wait(full(base, g % STAGES), parity(g));
    };
    let empty = |s: usize| empty(base, s);
    let (group, warp, lane) = (tid / 128, (tid % 128) / 32, tid % 32);
    let q = lane % 4;
    let (box_j, col) = (2 * group + warp / 2, pair_of(warp, lane / 4));
    // The column of B (and of C) this thread's fragments hold first, in
    // the tile at column `n0`.
    let n_col = |n0: usize| n0 + 64 * group + 32 * (warp / 2) + col;
    // The 8-byte word of B's box at row `k`, columns `col, col + 1`.
    let word = |s: usize, k: usize| (b_box(s, box_j) + swizzled(k, col / 4) + 4 * (col % 4)) / 8;
    let words = smem.cast::<F2>(STAGES * STAGE_BYTES / 8);
    // The fragments of stage `s`'s tile: per 8-deep slice `kk`, `B^T_hi`'s
    // rows (r, r + 8) at columns `q` and `q + 4` in `[4 kk..4 kk + 4]`,
    // `B^T_lo`'s in `[16 + 4 kk..]`. The high half is `b` itself: the
    // tensor cores read its top 19 bits.
    let load = |s: usize, n_col: usize, scale: [f32; 2]| -> [f32; 32] {
        let mut v = [0.0f32; 16];
        unroll!(kk < 4, [0, 1, 2, 3], {
            // SAFETY: inside the stage's B tile, delivered by the copies
            // whose phase the caller waited for.
            let (F2([x0, x1]), F2([y0, y1])) =
                unsafe { (words.load(word(s, 8 * kk + q)), words.load(word(s, 8 * kk + q + 4))) };
            [v[4 * kk], v[4 * kk + 1], v[4 * kk + 2], v[4 * kk + 3]] = [x0, x1, y0, y1];
        });
        if !all_finite(v) {
            // Columns col (even entries) and col + 1 (odd) of B.
            let bad = |h: usize| (0..8).any(|i| !v[2 * i + h].is_finite());
            // SAFETY: a non-finite value lies inside B (the copies fill
            // zeros outside): its column < n.
            unsafe {
                if bad(0) {
                    marks.raise_flag(1 + m + n_col);
                }
                if bad(1) {
                    marks.raise_flag(1 + m + n_col + 1);
                }
                marks.raise_flag(0);
            }
            v = v.map(finite_or_zero);
        }
        // Columns inside the peaks' window have the factor 1: most inputs
        // skip the multiplies, which cost the issue slots the split needs.
        if SCALED && (scale[0] != 1.0 || scale[1] != 1.0) {
            v = core::array::from_fn(|i| v[i] * scale[i % 2]);
        }
        let lo = v.map(low_half);
        core::array::from_fn(|i| if i < 16 { v[i] } else { lo[i - 16] })
    };

    let mut part = [0.0f32; ACC_N128];
    for j in 0..units {
        let (m0, n0) = origin(j);
        let n_col = n_col(n0);
        let col_exps = if SCALED { [col_exp(n_col), col_exp(n_col + 1)] } else { [0; 2] };
        let scale = col_exps.map(|e| pow2(-e));
        // The flat index of the tile's first pass.
        let g0 = j * tiles;
        let mut acc = [0.0f32; ACC_N128];
        // Pass t's fragments, loaded (and split) while pass t - 1's
        // products run: they are other registers than the ones those
        // products read, which stay unwritten until the wait retires them.
        let mut frag = [0.0f32; 32];
        if tiles > 0 {
            wait(g0);
            frag = load(g0 % STAGES, n_col, scale);
        }
        for t in 0..tiles {
            let s = (g0 + t) % STAGES;
            ctx.wgmma_fence();
            let hi = |kk: usize| [frag[4 * kk], frag[4 * kk + 1], frag[4 * kk + 2], frag[4 * kk + 3]];
            let lo = |kk: usize| [frag[16 + 4 * kk], frag[17 + 4 * kk], frag[18 + 4 * kk], frag[19 + 4 * kk]];
            let a_hi = |kk: usize| k_major_128b(base + (a_tile(s) + 32 * kk) as u32);
            let a_lo = |kk: usize| k_major_128b(base + (lo_tile(s) + 32 * kk) as u32);
            // The tensor cores truncate each sum they accumulate, an error
            // of up to an ulp of the partial sum: the eight small products
            // go first, while the sum is small, and the four `hi * hi`
            // after them, four truncations a pass at full size (each
            // slice's three in turn would make ten).
            // SAFETY: stage s holds its tiles and its A_lo: the copies and
            // the splitter completed the phases waited for. The pass's
            // first product starts the partial sum.
            unroll!(kk < 4, [0, 1, 2, 3], {
                unsafe {
                    ctx.wgmma_m64n128k8_tf32_rs(&mut part, hi(kk), a_lo(kk), kk != 0);
                    ctx.wgmma_m64n128k8_tf32_rs(&mut part, lo(kk), a_hi(kk), true);
                }
            });
            // SAFETY: as above.
            unroll!(kk < 4, [0, 1, 2, 3], {
                unsafe { ctx.wgmma_m64n128k8_tf32_rs(&mut part, hi(kk), a_hi(kk), true) };
            });
            ctx.wgmma_commit();
            let next = if t + 1 < tiles {
                let (u, s1) = (g0 + t + 1, (g0 + t + 1) % STAGES);
                wait(u);
                load(s1, n_col, scale)
            } else {
                frag
            };
            ctx.wgmma_wait_n128_rs::<0>(&mut part, &frag);
            // The products have read stage s: release it, then add.
            ctx.mbarrier_arrive(empty(s));
            promote(&mut acc, &part);
            frag = next;
        }

        if SCALED {
            // acc[4 j + h] is (m, n_col), acc[4 j + 2 + h] is (m, n_col + 1)
            // with m = m0 + 8 j + 2 q + h (`store_transposed`).
            unroll!(j < ACC_N128 / 4, {
                unroll!(h < 2, [0, 1], {
                    let e = row_exp(m0 + 8 * j + 2 * q + h);
                    // Exponent 0: nothing to undo (and no f64 work).
                    if e + col_exps[0] != 0 {
                        acc[4 * j + h] = unscale(acc[4 * j + h], e + col_exps[0]);
                    }
                    if e + col_exps[1] != 0 {
                        acc[4 * j + 2 + h] = unscale(acc[4 * j + 2 + h], e + col_exps[1]);
                    }
                });
            });
        }
        // SAFETY: the caller's contract (C holds its matrix).
        unsafe { store_transposed(&c, &acc, &p, (m0, n_col), q) };
    }
}

/// The low half of a finite `x` whose high half the tensor cores read as
/// its top 19 bits (`x` truncated to TF32): `x - trunc(x)`, exact, rounded
/// to TF32 to nearest (ties away, as `cvt.rna`; in integers: the rest is
/// under `2^-10 |x|`, far from overflow).
#[inline(always)]
pub fn low_half(x: f32) -> f32 {
    let rest = x - f32::from_bits(x.to_bits() & 0xffff_e000);
    f32::from_bits(rest.to_bits().wrapping_add(0x1000) & 0xffff_e000)
}

/// Whether all are finite: `x * 0` is NaN for inf and NaN, else 0, and a
/// NaN survives the sum (one fused multiply-add each).
#[inline(always)]
fn all_finite<const N: usize>(v: [f32; N]) -> bool {
    v.iter().fold(0.0f32, |z, &x| z + x * 0.0) == 0.0
}

/// `x`, or 0 where it is not finite.
#[inline(always)]
fn finite_or_zero(x: f32) -> f32 {
    if x.is_finite() { x } else { 0.0 }
}

/// `C = alpha * A * B + beta * C` in 3xTF32 with promoted partial sums, on
/// `A` and `B` copied by the TMA as they are and split by the block.
///
/// # Parameters
/// `a` and `b` are not the matrices but the addresses of two
/// [`TensorMap`]s in global memory (64-byte aligned), written before the
/// launch: `a`'s describes `A` (`K` columns by `M` rows, box 32 x 128),
/// `b`'s describes `B` (`N` columns by `K` rows, box 32 x 32), both f32 with
/// the 128-byte swizzle; [`DX3_MARKS_OFFSET`] bytes from `a` lie the
/// `1 + m + n` zeroed words of marks (`gemm::fixup`). `c`, `p` as
/// [`super::naive`]. Shared memory: [`DX3_SHARED_BYTES`] (193 KiB, an
/// opt-in size).
///
/// # Thread mapping
/// 384 threads (1D), grid `ceil(n/128) x ceil(m/128) x S` (or `G x 1`
/// blocks walking tiles, below); the block
/// computes the tile [`grouped_tile_at`] names for its index, over run
/// `blockIdx.z` of the `S` runs of `K` ([`run_of`]; `S = 1`: all of it).
/// A grid of `G` blocks, fewer than the tiles, `S = 1`: the block computes
/// tiles `i, i + G, ..` from its index `i`. Threads `0..256`: warpgroup `g` owns
/// columns `64 g ..+64` of the tile (rows of `C^T`), all 128 rows; warp `w`
/// of it the 16 columns of box `2 g + w / 2` that [`pair_of`] names.
/// Threads `256..384` split `A`, chunk `t - 256 + 128 i` (16 bytes) of its
/// tile for `i < 8`; thread 256 issues the copies.
///
/// # Safety
/// The tensor maps and the marks are as above; `c` holds the `m * n`
/// floats (`S` slices of `m * n` where `S > 1`: then each slice receives
/// `alpha` times its run's product, `beta == 0`, for
/// [`super::split_k::sum_splits`]); the GPU runs `sm_90a` code (compute
/// capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_direct_3xtf32<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    // ptxas fits the launch to 384 threads ([`DX3_REGS`]).
    ctx.launch_bound::<DX3_THREADS>();
    // A grid of fewer blocks than `C` has tiles walks them. The two cases
    // are two copies of the code: a block of one tile keeps the loops of
    // a kernel without walking, and neither carries the other's counters.
    let grid = ctx.grid_dim();
    // SAFETY: the caller's contract.
    unsafe {
        if grid.x * grid.y < p.n.div_ceil(DX3_BN) * p.m.div_ceil(DX3_BM) {
            tiles_of::<C, true>(ctx, a, b, c, p)
        } else {
            tiles_of::<C, false>(ctx, a, b, c, p)
        }
    }
}

/// The block's tiles of `C`: its own (`WALK` false), or every tile
/// `i, i + G, ..` from its index `i` among the grid's `G` blocks.
///
/// # Safety
/// As [`wgmma_direct_3xtf32`].
#[inline(always)]
unsafe fn tiles_of<C: ThreadCtx, const WALK: bool>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (map_a, map_b) = (a.cast::<TensorMap>(), b.cast::<TensorMap>());
    let (m, n) = (p.m as usize, p.n as usize);
    let marks = ctx.global_mut(a.cast::<u8>().wrapping_add(DX3_MARKS_OFFSET).cast::<u32>().cast_mut(), 1 + m + n);
    // Split K (`gridDim.z` runs, [`super::split_k`]): this block's run of
    // K's tiles, and its slice of the partial products.
    let (z, splits) = (ctx.block_idx().z, ctx.grid_dim().z);
    let (first, tiles) = run_of((p.k as usize).div_ceil(BK) as u32, z, splits);
    let (first, tiles) = (first as usize, tiles as usize);
    let c = ctx.global_mut(c.wrapping_add(z as usize * m * n), (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    // The tiles of `C` this block computes, in the grouped order: its own
    // index `me` among the grid's blocks, then every `blocks`-th after it.
    // A grid of one block a tile computes one each; a grid of one block an
    // SM walks them, and its passes over `K` run on as one sequence, so the
    // copies and the split of the next tile's first stages overlap this
    // tile's last products and its store.
    let (blk, grid) = (ctx.block_idx(), ctx.grid_dim());
    let (me, blocks) = ((blk.y * grid.x + blk.x) as usize, (grid.x * grid.y) as usize);
    let tile_grid = if WALK { (p.n.div_ceil(DX3_BN), p.m.div_ceil(DX3_BM)) } else { (grid.x, grid.y) };
    let units = if WALK { (tile_grid.0 as usize * tile_grid.1 as usize - me).div_ceil(blocks.max(1)) } else { 1 };
    // The origin in `C` of this block's `j`-th tile.
    let origin = |j: usize| {
        let (tile_m, tile_n) = grouped_tile_at::<TMA_GROUP_ROWS>((me + j * blocks) as u32, tile_grid);
        (tile_m as usize * BM, tile_n as usize * BN)
    };
    // Pass `g` of the block is pass `g % tiles` of its tile `g / tiles`.
    let passes = units * tiles;

    let (smem, base) = swizzle_base(ctx, DX3_SHARED_BYTES);
    let (full, ready, empty) = (|s| full(base, s), |s| ready(base, s), |s| empty(base, s));

    if tid == 0 {
        for s in 0..STAGES {
            ctx.mbarrier_init(full(s), 1);
            ctx.mbarrier_init(ready(s), SPLITTERS as u32);
            ctx.mbarrier_init(empty(s), CONSUMERS as u32);
        }
        ctx.mbarrier_init_fence();
    }
    ctx.sync_threads();

    if tid >= CONSUMERS {
        ctx.setmaxnreg_dec::<{ DX3_REGS.0 }>();
        let st = tid - CONSUMERS;
        // Queues the copies of pass `g` into its stage (free: waited for).
        // The copies go in pass order: `at` is the next one's tile of the
        // block, its pass in the tile, and the tile's origin in `C`, kept
        // as counters so that a pass costs the copying thread no division.
        let mut at = (0usize, 0usize, origin(0));
        let mut fill = |g: usize| {
            let s = g % STAGES;
            let (j, t, (m0, n0)) = at;
            ctx.mbarrier_arrive_expect_tx(full(s), DX3_STAGE_BYTES - A_BYTES as u32);
            let k0 = ((first + t) * BK) as i32;
            // SAFETY: the boxes (16 KiB of A, four of 4 KiB of B) fit the
            // stage at 1024-byte-aligned offsets; the stage is free.
            unsafe {
                ctx.tma_load_2d(base + a_tile(s) as u32, map_a, (k0, m0 as i32), full(s));
                for j in 0..BN / DIRECT_B_BOX as usize {
                    let x = (n0 + j * DIRECT_B_BOX as usize) as i32;
                    ctx.tma_load_2d(base + b_box(s, j) as u32, map_b, (x, k0), full(s));
                }
            }
            at = if !WALK || t + 1 < tiles { (j, t + 1, (m0, n0)) } else { (j + 1, 0, origin(j + 1)) };
        };
        if st == 0 {
            // SAFETY: the caller's contract: two tensor maps in global memory.
            unsafe {
                ctx.tensormap_acquire(map_a);
                ctx.tensormap_acquire(map_b);
            }
            for g in 0..passes.min(AHEAD) {
                fill(g);
            }
        }
        let quads = smem.cast::<F4>(STAGES * STAGE_BYTES / 16);
        // The pass's place in its tile and the tile's first row, for the
        // marks: counters, so that the splitters' loop holds one division
        // a tile rather than one per chunk (code the loop would carry).
        let (mut pass, mut unit, mut m0) = (0usize, 0usize, origin(0).0);
        for g in 0..passes {
            let s = g % STAGES;
            ctx.mbarrier_wait(full(s), parity(g));
            unroll!(i < CHUNKS, [0, 1, 2, 3, 4, 5, 6, 7], {
                let chunk = st + SPLITTERS * i;
                let (at, lo_at) = ((a_tile(s) + 16 * chunk) / 16, (lo_tile(s) + 16 * chunk) / 16);
                // SAFETY: inside stage s's A tile, delivered by the copies
                // whose phase was waited for.
                let F4(mut v) = unsafe { quads.load(at) };
                if !all_finite(v) {
                    // Zeros for the tensor cores' A_hi too; the row of A
                    // (a 16-byte chunk lies in one 128-byte row) is marked.
                    v = v.map(finite_or_zero);
                    // SAFETY: as above; a non-finite value lies inside A
                    // (the copies fill zeros outside), so its row < m.
                    unsafe {
                        quads.store(at, F4(v));
                        marks.raise_flag(1 + m0 + chunk / 8);
                        marks.raise_flag(0);
                    }
                }
                // SAFETY: inside stage s's A_lo, which the consumers are
                // done with (this thread waited for the stage's release
                // before pass g's fill).
                unsafe { quads.store(lo_at, F4(v.map(low_half))) };
            });
            // The tensor cores read A_lo (and A_hi) through the async proxy.
            ctx.fence_proxy_async();
            ctx.mbarrier_arrive(ready(s));
            // Then pass g + 2 goes where pass g - 2 was, once the consumers
            // are done with it (the first four fills find their stages
            // free): the split of pass g waits only for its copies.
            let u = g + AHEAD;
            if u < passes {
                if u >= STAGES {
                    ctx.mbarrier_wait(empty(u % STAGES), parity(u) ^ 1);
                }
                if st == 0 {
                    fill(u);
                }
            }
            pass += 1;
            if WALK && pass == tiles {
                (pass, unit) = (0, unit + 1);
                m0 = origin(unit).0;
            }
        }
        return;
    }

    ctx.setmaxnreg_inc::<{ DX3_REGS.1 }>();
    // SAFETY: the caller's contract; the splitter writes each stage's
    // A_lo before its `ready` arrival.
    unsafe { consume::<C, true, false>(ctx, (smem, base), marks, c, p, (units, tiles), origin, tid) }
}
