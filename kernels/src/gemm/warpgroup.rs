//! What the tensor-core steps (9-16) share: the plumbing around `wgmma`,
//! so that each step's file shows only its own idea.
//!
//! - **The layout:** every operand tile is K-major, 32 TF32 values deep, so
//!   a row is [`ROW_BYTES`] (128), stored in the 128-byte swizzle
//!   ([`swizzled`]) from a 1024-byte boundary of shared memory
//!   ([`swizzle_base`]); step 9's doc says why.
//! - **The descriptors** through which `wgmma` reads such a tile
//!   ([`k_major_128b`]).
//! - **Staging by the threads** (steps 9-11): what a block knows before
//!   its loop, and whether it may load without checks ([`StagedBlock`]); the
//!   16-byte loads ([`load4`]); the 3xTF32 split's paired stores
//!   ([`store_split`]).
//! - **Fragment stores:** the epilogue of two warpgroups' `wgmma` D
//!   fragments ([`store_fragment`]), and of `C^T`'s, transposed into `C`
//!   (steps 14, 15: [`store_transposed`]).
//! - **Promotion** (steps 11, 13, 15, 16): a tile's 3xTF32 products into a new
//!   partial sum ([`products_3x`]), added into f32 sums ([`promote`]).
//! - **The TMA steps' order of tiles** (steps 12-16): [`grouped_tile`], [`grouped_tile_in`].

use super::{F4, Problem, aligned16, split_tf32, store_c_at, store_c2_at};
use crate::{Global, GlobalMut, Load, Shared, ThreadCtx};

/// Bytes of one K-major row of a tile: 32 TF32 values, the 128-byte
/// swizzle's row (before swizzling).
pub(super) const ROW_BYTES: usize = 128;

/// The matrix descriptor of a K-major operand in the 128-byte swizzle at
/// shared address `addr` (PTX ISA, "Matrix Descriptor Format"): start
/// address `>> 4` in bits 0-13, the leading byte offset (unused by K-major
/// swizzled layouts, 16 by convention) in 16-29, the stride byte offset (1024
/// bytes: 8 rows of 128 bytes) in 32-45, base offset 0 (the tile is aligned
/// to 1024 bytes) and swizzle mode 1 (128 bytes) in bits 62-63.
#[inline(always)]
pub fn k_major_128b(addr: u32) -> u64 {
    let enc = |x: u32| ((x & 0x3ffff) >> 4) as u64;
    enc(addr) | (enc(16) << 16) | (enc(1024) << 32) | (1 << 62)
}

/// Byte offset, in a tile of K-major 128-byte rows stored with the 128-byte
/// swizzle, of the 16-byte chunk `chunk` (0..8) of row `row`.
#[inline(always)]
pub(crate) fn swizzled(row: usize, chunk: usize) -> usize {
    row * ROW_BYTES + 16 * (chunk ^ (row % 8))
}

/// The first 1024-byte boundary of the block's `bytes` of shared memory,
/// as a view of the bytes from there and as the shared-space address
/// `wgmma` descriptors take: the 128-byte swizzle repeats every 1024 bytes,
/// and the tensor-core steps' launches reserve 1024 bytes for this skew.
#[inline(always)]
pub(crate) fn swizzle_base<C: ThreadCtx>(ctx: &C, bytes: u32) -> (Shared<'_, C, u8>, u32) {
    let raw = ctx.shared::<F4>(bytes / 16).cast::<u8>(bytes);
    let skew = (1024 - ctx.shared_addr(raw.as_ptr()) as usize % 1024) % 1024;
    // SAFETY: the launch reserves 1024 bytes for this skew.
    let base = unsafe { raw.at(skew, bytes as usize - skew) };
    (base, ctx.shared_addr(base.as_ptr()))
}

/// Four floats of row `r` of a row-major matrix of row length `stride`,
/// from column `c`: one 16-byte load when `fast`, else checked loads with
/// zeros outside rows `..rows` and columns `..cols` (the matrix, or the
/// part of it a tile may read).
///
/// # Safety
/// `p` holds the `rows` rows of `stride` floats, `cols <= stride`; when
/// `fast`, the four are inside and 16-byte aligned.
#[inline(always)]
pub(super) unsafe fn load4(
    p: &impl Load<f32>, (rows, cols): (usize, usize), stride: usize, r: usize, c: usize, fast: bool,
) -> [f32; 4] {
    if fast {
        // SAFETY: the caller's contract.
        unsafe { p.load_as::<F4>(r * stride + c).0 }
    } else {
        let mut v = [0.0f32; 4];
        unroll!(q < 4, [0, 1, 2, 3], {
            if r < rows && c + q < cols {
                // SAFETY: checked just above.
                v[q] = unsafe { p.load(r * stride + c + q) };
            }
        });
        v
    }
}

/// Whether the rows of `A` (`p.k` floats from `a`) and of `B` (`p.n`
/// floats from `b`) are each 16-byte aligned, so that 16-byte loads can
/// read them: `(A, B)`.
#[inline(always)]
pub(super) fn rows_aligned(a: *const f32, b: *const f32, p: &Problem) -> (bool, bool) {
    ((p.k as usize).is_multiple_of(4) && aligned16(a, a, a), (p.n as usize).is_multiple_of(4) && aligned16(b, b, b))
}

/// Whether every tile of block `blk`, of a `(bm, bn)` tile of `C` and `bk`
/// deep tiles of `K`, is whole and vector-readable: its `C` tile inside
/// `C`, `K` a multiple of the tile depth, rows of `A` and `B` 16-byte
/// aligned. Such a block runs the copy of the loop whose loads are
/// unconditional 16-byte loads (`INTERIOR`): with a bounds branch per load,
/// each load sits in its own basic block, and where the two paths join, the
/// loaded registers are moved, which waits for the load, so the loads of a
/// tile no longer fly together (step 7 met the same).
#[inline(always)]
pub(super) fn interior(
    a: *const f32, b: *const f32, p: &Problem, blk: crate::Dim3, (bm, bn, bk): (usize, usize, usize),
) -> bool {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    (blk.y as usize + 1) * bm <= m
        && (blk.x as usize + 1) * bn <= n
        && k.is_multiple_of(bk)
        && n.is_multiple_of(4)
        && aligned16(a, b, b)
}

/// What a block of the thread-staged steps (9-11) knows before its loop:
/// the views of `A`, `B` and `C`, the problem, its thread, the origin of
/// its `C` tile, whether the rows of `A` and of `B` take 16-byte loads
/// (`vec`, [`rows_aligned`]), and whether every tile of the block does
/// (`interior`, [`interior`]): the step runs the copy of its loop that
/// `interior` chooses, its `INTERIOR`.
pub(super) struct StagedBlock<'c, C> {
    pub a: Global<'c, C, f32>,
    pub b: Global<'c, C, f32>,
    pub c: GlobalMut<'c, C, f32>,
    pub p: Problem,
    pub tid: usize,
    /// First row and column of the block's `C` tile.
    pub m0: usize,
    pub n0: usize,
    /// `(A, B)`: rows 16-byte aligned.
    pub vec: (bool, bool),
    pub interior: bool,
}

impl<'c, C: ThreadCtx> StagedBlock<'c, C> {
    /// The block of a step whose blocks compute `(bm, bn)` tiles of `C` in
    /// `bk`-deep tiles of `K`, one block per tile, `x` along `N`; `a`, `b`,
    /// `c` and `p` as the steps' kernels take them.
    #[inline(always)]
    pub(super) fn new(
        ctx: &'c C, (a, b, c): (*const f32, *const f32, *mut f32), p: Problem, (bm, bn, bk): (usize, usize, usize),
    ) -> Self {
        let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
        let blk = ctx.block_idx();
        StagedBlock {
            a,
            b,
            c,
            p,
            tid: ctx.thread_idx().x as usize,
            m0: blk.y as usize * bm,
            n0: blk.x as usize * bn,
            vec: rows_aligned(a.as_ptr(), b.as_ptr(), &p),
            interior: interior(a.as_ptr(), b.as_ptr(), &p, blk, (bm, bn, bk)),
        }
    }
}

/// Stores the 3xTF32 split of four floats: the `hi` halves as one 16-byte
/// shared store at byte `hi` of `tiles`, the `lo` halves as one at byte `lo`
/// (as 16-byte stores: scalar stores of a quarter warp's 8 rows would meet
/// in 8 banks, 4-way conflicts).
///
/// # Safety
/// `hi` and `lo` 16-byte aligned, their 16 bytes inside `tiles`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) unsafe fn store_split<C: ThreadCtx>(tiles: Shared<'_, C, u8>, hi: usize, lo: usize, v: [f32; 4]) {
    let halves = v.map(split_tf32);
    // SAFETY: forwarded.
    unsafe {
        tiles.store_f32x4(hi, halves.map(|h| h.0));
        tiles.store_f32x4(lo, halves.map(|h| h.1));
    }
}

/// Stores thread `tid`'s accumulator fragment (the `wgmma` D layout of an
/// `m64nN` product, `N / 2` registers a thread) into the block's tile of
/// `C` at `(m0, n0)`: two warpgroups of 64 rows, so the tile is 128 rows by
/// the fragment's `N` columns.
///
/// # Safety
/// `c` holds the `m * n` floats.
#[inline(always)]
pub(super) unsafe fn store_fragment<C: ThreadCtx, const REGS: usize>(
    c: &GlobalMut<'_, C, f32>, acc: &[f32; REGS], p: &Problem, (m0, n0): (usize, usize), tid: usize,
) {
    const { assert!(REGS <= 128) };
    let (m, n) = (p.m as usize, p.n as usize);
    let (group, warp, lane) = (tid / 128, (tid % 128) / 32, tid % 32);
    let row0 = m0 + 64 * group + 16 * warp + lane / 4;
    let col0 = n0 + 2 * (lane % 4);
    let fast = m0 + 128 <= m && n0 + 2 * REGS <= n;
    unroll!(
        i < REGS,
        [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
            29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55,
            56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82,
            83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107,
            108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127
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

/// Accumulator registers per thread of an `m64n128` fragment: the
/// promoted steps' partial and promoted sums.
pub(super) const ACC_N128: usize = 64;

/// One 32-deep tile's 3xTF32 products into `part`, a new partial sum:
/// per 8 of `K`, `A_lo B_hi`, `A_hi B_lo` and `A_hi B_hi` (the first with
/// scale-d 0 on the tile's first step, which starts the sum), from the
/// halves' tiles at the shared addresses `((A_hi, A_lo), (B_hi, B_lo))`
/// (K-major rows of 128 bytes, the 128-byte swizzle).
///
/// # Safety
/// As [`ThreadCtx::wgmma_m64n128k8_tf32`]: the four tiles written and
/// fenced (or delivered by copies whose barrier the caller waited for).
#[inline(always)]
pub(super) unsafe fn products_3x<C: ThreadCtx>(
    ctx: &C, part: &mut [f32; ACC_N128], ((a_hi, a_lo), (b_hi, b_lo)): ((u32, u32), (u32, u32)),
) {
    unroll!(kk < ROW_BYTES / 4 / 8, [0, 1, 2, 3], {
        let step = (32 * kk) as u32;
        let d = |addr: u32| k_major_128b(addr + step);
        // SAFETY: the caller's contract.
        unsafe {
            ctx.wgmma_m64n128k8_tf32(part, d(a_lo), d(b_hi), kk != 0);
            ctx.wgmma_m64n128k8_tf32(part, d(a_hi), d(b_lo), true);
            ctx.wgmma_m64n128k8_tf32(part, d(a_hi), d(b_hi), true);
        }
    });
}

/// `acc += part`, element by element, in f32 rounded to nearest.
#[inline(always)]
pub(super) fn promote(acc: &mut [f32; ACC_N128], part: &[f32; ACC_N128]) {
    unroll!(
        i < ACC_N128,
        [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
            29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55,
            56, 57, 58, 59, 60, 61, 62, 63
        ],
        {
            acc[i] += part[i];
        }
    );
}

/// Tile rows per group in the TMA steps' order of tiles ([`grouped_tile`]).
pub const TMA_GROUP_ROWS: u32 = 16;

/// The `(row, column)` of the `C` tile that block `blk` of a grid of `grid`
/// computes, in the grouped order of step 12's doc: block `i` (in launch
/// order, `x` fastest) takes, within its group of [`TMA_GROUP_ROWS`] tile
/// rows, row `i % rows` and column `i / rows`.
#[inline(always)]
pub(super) fn grouped_tile(blk: crate::Dim3, grid: crate::Dim3) -> (u32, u32) {
    grouped_tile_in::<TMA_GROUP_ROWS>(blk, grid)
}

/// [`grouped_tile`] with groups of `ROWS` tile rows.
#[inline(always)]
pub(super) fn grouped_tile_in<const ROWS: u32>(blk: crate::Dim3, grid: crate::Dim3) -> (u32, u32) {
    grouped_tile_at::<ROWS>(blk.y * grid.x + blk.x, (grid.x, grid.y))
}

/// The `(row, column)` of tile `i`, in the grouped order, of a `C` of
/// `cols x rows` tiles: [`grouped_tile_in`] for a block that walks tiles.
#[inline(always)]
pub(super) fn grouped_tile_at<const ROWS: u32>(i: u32, (cols, rows): (u32, u32)) -> (u32, u32) {
    // Neither divisor is 0 in a launch (grid sizes are at least 1); `max`
    // says so to the compiler, which would otherwise keep a panic path.
    let per_group = (ROWS * cols).max(1);
    let first = i / per_group * ROWS;
    // Past the last tile (a walking block names the tile after its last)
    // `first` can pass `rows`: that result goes unused, and the difference
    // wraps instead of trapping in a debug build.
    let height = rows.wrapping_sub(first).clamp(1, ROWS);
    let j = i % per_group;
    (first + j % height, j / height)
}

/// Stores thread `(.., q)`'s fragment of `C^T` (the D fragment of an
/// `m64nNk8`, `N = 2 R`, with `C^T`'s rows `n`, `n + 1`, columns
/// `m0 + 8 j + 2 q + {0, 1}` for `j < R / 4`: steps 14 and 15) into `C`, as 8-byte stores of
/// `C[m][n..n + 2]` where the pair is inside `C` and 8-byte aligned.
///
/// # Safety
/// `c` holds the `m * n` floats.
#[inline(always)]
pub(super) unsafe fn store_transposed<C: ThreadCtx, const R: usize>(
    c: &GlobalMut<'_, C, f32>, acc: &[f32; R], p: &Problem, (m0, n): (usize, usize), q: usize,
) {
    let (rows, cols) = (p.m as usize, p.n as usize);
    let pairs = n + 2 <= cols && cols.is_multiple_of(2) && c.as_ptr().addr().is_multiple_of(8);
    unroll!(j < R / 4, {
        unroll!(h < 2, [0, 1], {
            // acc[4 j + h] is (m, n), acc[4 j + 2 + h] is (m, n + 1).
            let m = m0 + 8 * j + 2 * q + h;
            let (x, y) = (acc[4 * j + h], acc[4 * j + 2 + h]);
            if m < rows {
                if pairs {
                    // SAFETY: inside C (checked), 8-byte aligned: n even, cols even.
                    unsafe { store_c2_at(*c, m * cols + n, [x, y], p.alpha, p.beta) };
                } else {
                    if n < cols {
                        // SAFETY: inside C (checked).
                        unsafe { store_c_at(*c, m * cols + n, x, p.alpha, p.beta) };
                    }
                    if n + 1 < cols {
                        // SAFETY: as above.
                        unsafe { store_c_at(*c, m * cols + n + 1, y, p.alpha, p.beta) };
                    }
                }
            }
        });
    });
}
