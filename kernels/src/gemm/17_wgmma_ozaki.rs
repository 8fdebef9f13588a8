//! Step 17 (tensor cores, Hopper, `sm_90a` only): an FP32 GEMM as exact
//! INT8 products, Ozaki scheme II ([`super::ozaki`]), on step 12's TMA
//! pipeline. Not yet measured on a GPU ([`docs/gemm.md`](../../../docs/gemm.md));
//! `examples/ozaki2_accuracy` computes its accuracy.
//!
//! **Idea:** 3xTF32 (steps 10-16) buys FP32's accuracy with three TF32
//! products a term, so its ceiling is a third of the TF32 roof. The
//! tensor cores multiply signed bytes about twice as fast as TF32 and
//! exactly, into `i32`. Scale each row of `A` and each column of `B` by a
//! power of two and round it to integers of `alpha` bits; the integer
//! product `A' B'` is then exact, and it is determined by its residues
//! modulo `L` coprime moduli of at most 256, each the product of byte
//! residues (`wgmma` `m64n256k32` of `s8`). The Chinese remainder
//! theorem rebuilds `A' B'` from the `L` residues, and one rounding to f32
//! gives `C`. The error is the rounding of the operands to `alpha` bits
//! alone, `alpha` as large as `P`, the moduli's product, allows
//! (`2 k 2^(2 alpha) < P`): with [`LADDER_MODULI`] (9) moduli, 30 bits at
//! `k = 1003`, 27 at 16384. So the step trades one FP32 product for nine
//! INT8 ones, no TF32 at all.
//!
//! **The sequence** (the host's runner derives it from [`GEOMETRY`]'s
//! feed): `gemm_maxima` finds the peak of each row of `A` and column of
//! `B`; `gemm_residues`, the operand pass's residue mode
//! ([`super::pack::PACK_RESIDUES`]), writes each operand's residues,
//! K-major (`B` transposed), one plane of bytes a modulus, marking
//! non-finite inputs; this kernel; `gemm_fixup` recomputes the rows and
//! columns of `C` that the marks name.
//!
//! **This kernel** is step 12's: one producer thread issues TMA copies into
//! a four-stage ring, two consumer warpgroups multiply (its warpgroup hands
//! its registers to theirs, `setmaxnreg`, as step 16's does). A stage holds 128
//! bytes of `K` a row (the tensor maps count 4-byte elements, so a box of
//! 32 is step 12's 128-byte swizzled row), and each warpgroup issues four
//! `m64n256k32` on it. The block runs the whole `K` once per modulus, the
//! ring's fills numbered across them, so the producer runs ahead into the
//! next modulus's planes while the consumers finish one. After each
//! modulus a thread reduces its 128 sums modulo `p_l` and keeps the bytes
//! in a scratch of the workspace that it alone writes and reads (9 x 128
//! bytes a thread: registers cannot hold them beside the accumulators,
//! and the kernels keep no stack frame); after the last it rebuilds
//! each element with Garner's digits ([`ozaki::garner`], in `i32` and one
//! f64 sum), multiplies it back by `2^(e_i + f_j - 2 alpha)` (exact, in
//! f64) and rounds it once to f32 for the epilogue. A sum of `i32`
//! products stays exact below `2^31`: the consumers reduce their sums
//! every [`REDUCE_EVERY`] stages, so any `K` fits.
//!
//! **The bound** ([`super::Variant::error_bound`]): an operand rounded to
//! `alpha` bits is within `2^-alpha` of its row's peak, so `|c - c^| <=
//! 2^-alpha (1 + k 2^-alpha) (max |a_i.| sum |b_.j| + sum |a_i.| max
//! |b_.j|)`, plus the roundings of the epilogue. Against `sum |a b|` it is
//! tight where a row's values are alike and loose where they spread.

use super::ozaki::{self, LADDER_MODULI, Modulus};
use super::ring::{Ring, acquire, produce};
use super::scale::pow2_f64;
use super::warpgroup::{ROW_BYTES, grouped_tile, k_major_128b, swizzle_base};
use super::{DX3_MARKS_OFFSET, Problem, store_c_at};
use crate::{TensorMap, ThreadCtx};

use super::{Dim3, Feed, Geometry, Operand, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry = Geometry::of(
    Precision::Ozaki { moduli: LADDER_MODULI as u32 },
    (OZ_BM, OZ_BN),
    Dim3::xy(OZ_THREADS, 1),
    OZ_SHARED_BYTES / 4,
)
.fed_by(Feed { a: Operand::Residues, b: Operand::Residues, scaled: true });

/// Rows of the `C` tile per block: two consumer warpgroups of 64.
pub const OZ_BM: u32 = 128;
/// Columns of the `C` tile per block: one `m64n256k32` per warpgroup.
pub const OZ_BN: u32 = 256;
/// Depth of a stage, in bytes (values of `K`): one 128-byte swizzled row.
pub const OZ_BK: u32 = 128;
/// Threads per block: two consumer warpgroups and a producer warpgroup,
/// one thread of which issues the copies.
pub const OZ_THREADS: u32 = 3 * 128;
/// Registers per thread: 168 at launch (65536 for 384 threads); then the
/// producer warpgroup gives all but 56 back and each consumer takes 224
/// (`setmaxnreg`), for its 128 accumulators and the fold of its sums.
pub const OZ_REGS: (u32, u32) = (56, 224);
/// Stages of the pipeline.
pub const OZ_STAGES: u32 = 4;
/// Bytes one stage holds: the `A` tile and the `B^T` tile.
pub const OZ_STAGE_BYTES: u32 = (OZ_BM + OZ_BN) * OZ_BK;
/// Bytes of shared memory per block: the stages, two 8-byte barriers per
/// stage, and 1024 bytes to align the stages to the swizzle's period.
pub const OZ_SHARED_BYTES: u32 = OZ_STAGES * OZ_STAGE_BYTES + 16 * OZ_STAGES + 1024;
/// Stages between two reductions of the sums modulo `p_l`: a stage adds at
/// most `128 * 128^2 = 2^21` to a sum, so 512 stages stay below `2^30`.
pub const REDUCE_EVERY: usize = 512;

/// Words of scratch a block keeps its residues in: for each modulus, 32
/// words a consumer thread (its 128 sums' residues, 4 bytes a word).
pub const OZ_SCRATCH_WORDS: usize = LADDER_MODULI * REGS / 4 * CONSUMERS;

/// Byte offset of the residues' scratch from `A`'s tensor map: after the
/// marks (`1 + m + n` words) and the peaks (`m + n`), 256-byte aligned as
/// the host's workspace parts are. The block of linear index `i` keeps its
/// residues [`OZ_SCRATCH_WORDS`] `i` words from there.
pub const fn oz_scratch_offset(m: usize, n: usize) -> usize {
    DX3_MARKS_OFFSET + (4 * (1 + 2 * (m + n))).next_multiple_of(256)
}

const BM: usize = OZ_BM as usize;
const BK: usize = OZ_BK as usize;
const STAGES: usize = OZ_STAGES as usize;
const STAGE_BYTES: usize = OZ_STAGE_BYTES as usize;
/// Threads that consume (both warpgroups).
const CONSUMERS: usize = 256;
/// One thread's share of the 64x256 accumulator.
const REGS: usize = 128;

const _: () = assert!(ROW_BYTES == BK && STAGE_BYTES.is_multiple_of(1024) && (BM * ROW_BYTES).is_multiple_of(1024));

/// `C = alpha * A * B + beta * C` from the residues of `A` and `B` modulo
/// each of the first [`LADDER_MODULI`] moduli, multiplied with `wgmma` on
/// signed bytes that the TMA copies into a four-stage pipeline.
///
/// # Parameters
/// `a` and `b` are the addresses of two [`TensorMap`]s in global memory
/// (64-byte aligned), written before the launch: `a`'s describes the
/// residue planes of `A` (`L m` rows, plane `l` rows `l m ..+m`, of `K`
/// bytes counted as 4-byte elements, box 32 x 128), `b`'s those of `B^T`
/// (`L n` rows, box 32 x 256), both with the 128-byte swizzle.
/// [`DX3_MARKS_OFFSET`] bytes from `a` lie the `1 + m + n` marks of the
/// non-finite inputs, then the bits of the peaks of `A`'s `m` rows and
/// `B`'s `n` columns (`gemm_maxima`'s); [`oz_scratch_offset`] bytes from
/// `a`, the scratch, [`OZ_SCRATCH_WORDS`] words a block of the grid, that
/// nothing else uses during the launch. `c`, `p` as [`super::naive`].
/// Shared memory: [`OZ_SHARED_BYTES`] (193 KiB, an opt-in size).
///
/// # Thread mapping
/// 384 threads (1D), grid `ceil(n/256) x ceil(m/128)`; the block computes
/// the tile [`grouped_tile`] names, for every modulus in turn. Threads
/// `0..256`: warpgroup `g` owns rows `64 g ..+64` of the tile, all 256
/// columns, as in step 12. Thread 256 issues the copies; threads 257..384
/// give their registers to the consumers and leave.
///
/// # Safety
/// The tensor maps and the words after them as above, readable; `c` holds
/// the `m * n` floats; the GPU runs `sm_90a` code (compute capability 9.0).
#[inline(always)]
pub unsafe fn wgmma_ozaki<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    // ptxas fits the launch to 384 threads ([`OZ_REGS`]).
    ctx.launch_bound::<OZ_THREADS>();
    let (map_a, map_b) = (a.cast::<TensorMap>(), b.cast::<TensorMap>());
    let (m, n) = (p.m as usize, p.n as usize);
    let peaks_at = a.cast::<u8>().wrapping_add(DX3_MARKS_OFFSET + 4 * (1 + m + n)).cast::<u32>();
    let peaks = ctx.global(peaks_at, m + n);
    let c = ctx.global_mut(c, (p.m, p.n));
    let tid = ctx.thread_idx().x as usize;
    let (blk, grid) = (ctx.block_idx(), ctx.grid_dim());
    let (blocks, block) = (grid.x as usize * grid.y as usize, blk.y as usize * grid.x as usize + blk.x as usize);
    let scratch_at = a.cast::<u8>().wrapping_add(oz_scratch_offset(m, n)).cast::<u32>().cast_mut();
    let scratch = ctx.global_mut(scratch_at, blocks * OZ_SCRATCH_WORDS);
    // Word `w` of this thread's residues of modulus `l`: a warp's 32 words
    // of one `(l, w)` lie side by side.
    let kept = |l: usize, w: usize| block * OZ_SCRATCH_WORDS + (l * REGS / 4 + w) * CONSUMERS + tid;
    let (tile_m, tile_n) = grouped_tile(blk, grid);
    let (m0, n0) = (tile_m as usize * BM, tile_n as usize * OZ_BN as usize);

    let (_, base) = swizzle_base(ctx, OZ_SHARED_BYTES);
    let a_tile = |s: usize| base + (s * STAGE_BYTES) as u32;
    let b_tile = |s: usize| a_tile(s) + (BM * ROW_BYTES) as u32;
    let ring = Ring::<STAGES> { base, at: STAGES * STAGE_BYTES };
    ring.init(ctx, tid, CONSUMERS);

    let tiles = (p.k as usize).div_ceil(BK);
    if tid >= CONSUMERS {
        ctx.setmaxnreg_dec::<{ OZ_REGS.0 }>();
        if tid == CONSUMERS {
            // SAFETY: the caller's contract: two tensor maps in global memory.
            unsafe { acquire(ctx, [map_a, map_b]) };
            produce!(ctx, ring, LADDER_MODULI * tiles, OZ_STAGE_BYTES, |s, t| {
                // Fill t: stage (t % tiles) of modulus t / tiles, whose
                // planes start `l m` and `l n` rows into the maps.
                let (l, k0) = (t / tiles, (t % tiles * BK / 4) as i32);
                // SAFETY: the maps' boxes (16 and 32 KiB) fit the stage at
                // its 1024-byte-aligned offsets; the stage is free (waited above).
                unsafe {
                    ctx.tma_load_2d(a_tile(s), map_a, (k0, (l * m + m0) as i32), ring.full(s));
                    ctx.tma_load_2d(b_tile(s), map_b, (k0, (l * n + n0) as i32), ring.full(s));
                }
            });
        }
        return;
    }

    ctx.setmaxnreg_inc::<{ OZ_REGS.1 }>();
    let group = tid / 128;
    let mut acc = [0i32; REGS];
    for l in 0..LADDER_MODULI {
        let q = Modulus::of(l);
        // Runs of at most REDUCE_EVERY stages, each summed from scale-d 0
        // (only the tensor cores write the accumulators) and folded into
        // the kept residues once its products complete.
        let mut start = 0;
        while start < tiles {
            let end = tiles.min(start + REDUCE_EVERY);
            for i in start..end {
                let t = l * tiles + i;
                let s = t % STAGES;
                ctx.mbarrier_wait(ring.full(s), ring.parity(t));
                let a_addr = a_tile(s) + (group * 64 * ROW_BYTES) as u32;
                ctx.wgmma_fence();
                unroll!(kk < BK / 32, [0, 1, 2, 3], {
                    let (step, accumulate) = ((32 * kk) as u32, kk > 0 || i > start);
                    // SAFETY: stage s holds fill t: its copies completed the phase waited for.
                    unsafe {
                        let (a, b) = (k_major_128b(a_addr + step), k_major_128b(b_tile(s) + step));
                        ctx.wgmma_m64n256k32_s8(&mut acc, a, b, accumulate)
                    };
                });
                ctx.wgmma_commit();
                // Fill t - 1's products have read their stage: release it.
                ctx.wgmma_wait_s32::<1>(&mut acc);
                if t > 0 {
                    ctx.mbarrier_arrive(ring.empty((t - 1) % STAGES));
                }
            }
            ctx.wgmma_wait_s32::<0>(&mut acc);
            unroll!(w < REGS / 4, {
                // SAFETY: inside this block's scratch; written by this
                // thread alone (at its first run, before it is read).
                let old = if start == 0 { 0 } else { unsafe { scratch.load(kept(l, w)) } };
                let mut word = 0;
                unroll!(j < 4, [0, 1, 2, 3], {
                    let sum = (old >> (8 * j)) & 0xff;
                    word |= q.add(sum, q.reduce(acc[4 * w + j])) << (8 * j);
                });
                // SAFETY: as above.
                unsafe { scratch.store(kept(l, w), word) };
            });
            start = end;
        }
    }

    // Element r of the fragment: rows `lane / 4 (+ 8)`, column pairs `2
    // (lane % 4) + 8 j`, as `warpgroup::store_fragment` stores them.
    let alpha = ozaki::alpha(LADDER_MODULI, p.k as usize) as i32;
    let (warp, lane) = ((tid % 128) / 32, tid % 32);
    let (row0, col0) = (m0 + 64 * group + 16 * warp + lane / 4, n0 + 2 * (lane % 4));
    for w in 0..REGS / 4 {
        // SAFETY: inside this block's scratch, written above by this thread.
        let words: [u32; LADDER_MODULI] = core::array::from_fn(|l| unsafe { scratch.load(kept(l, w)) });
        unroll!(j < 4, [0, 1, 2, 3], {
            let r = 4 * w + j;
            let (row, col) = (row0 + 8 * ((r / 2) % 2), col0 + 8 * (r / 4) + r % 2);
            if row < m && col < n {
                // SAFETY: row < m, m + col < m + n: inside the peaks.
                let (pa, pb) = unsafe { (peaks.load(row), peaks.load(m + col)) };
                let e = ozaki::exponent(pa) + ozaki::exponent(pb) - 2 * alpha;
                let v = ozaki::garner(LADDER_MODULI, |l| (words[l] >> (8 * j)) & 0xff);
                // `2^e` is a normal f64 (`e` within [-420, 256]): exact, and
                // the one rounding is to f32.
                let acc = (v * pow2_f64(e)) as f32;
                // SAFETY: inside C (checked).
                unsafe { store_c_at(c, row * n + col, acc, p.alpha, p.beta) };
            }
        });
    }
}
