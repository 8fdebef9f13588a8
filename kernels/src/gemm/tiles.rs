//! The pieces steps 5-7 share: moving `A` and `B` tiles from global to
//! shared memory in 16-byte vectors, and storing a thread's 4x4 fragments of
//! `C`.
//!
//! Tiles are moved in two halves, [`load_a`]/[`load_b`] (global to registers)
//! and [`stage_a`]/[`stage_b`] (registers to shared), so that step 7 can put
//! a tile's worth of compute between the two.
//!
//! Layouts in shared memory:
//! - the `A` tile (`BM x BK` in global memory) is stored **transposed**,
//!   `As[k][m]` with row stride `a_stride`, so that the values of one `k` for
//!   consecutive rows are adjacent and 4 of them are one 16-byte load;
//! - the `B` tile is stored as in global memory, `Bs[k][n]`, row stride `BN`.

use super::{F4, Problem, aligned16, store_c_at, store_c4_at};
use crate::ThreadCtx;
use crate::mem::{Global, GlobalMut, Shared};

/// Where a block's tiles sit in the matrices, and which fast paths apply.
#[derive(Clone, Copy)]
pub(crate) struct TileCtx {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// First row of the block's `C` tile.
    pub m0: usize,
    /// First column of the block's `C` tile.
    pub n0: usize,
    /// `k % 4 == 0` and `a` 16-byte aligned: rows of `A` can be read in vectors.
    pub a_vec: bool,
    /// `n % 4 == 0` and `b`, `c` 16-byte aligned: rows of `B` and `C` likewise.
    pub bc_vec: bool,
}

impl TileCtx {
    /// The context of this block, whose `C` tile is `bm x bn` (one block
    /// per tile, `x` along `N`), with the views `a`, `b`, `c` of problem `p`.
    #[inline(always)]
    pub fn new<C: ThreadCtx>(
        ctx: &C, p: &Problem, (bm, bn): (usize, usize),
        (a, b, c): (Global<'_, C, f32>, Global<'_, C, f32>, GlobalMut<'_, C, f32>),
    ) -> TileCtx {
        let blk = ctx.block_idx();
        TileCtx {
            m: p.m as usize,
            n: p.n as usize,
            k: p.k as usize,
            m0: blk.y as usize * bm,
            n0: blk.x as usize * bn,
            a_vec: p.k.is_multiple_of(4) && aligned16(a.as_ptr(), a.as_ptr(), a.as_ptr()),
            bc_vec: p.n.is_multiple_of(4) && aligned16(b.as_ptr(), b.as_ptr(), c.as_ptr()),
        }
    }

    /// Whether every tile of this block, for every `k0`, takes the vector
    /// paths without checks: the block's `C` tile is inside `C`, `K` is a
    /// multiple of the tile depth, and all rows are vector-readable.
    #[inline(always)]
    pub fn interior(&self, g: &super::WarpTiling) -> bool {
        self.a_vec
            && self.bc_vec
            && self.m0 + g.bm as usize <= self.m
            && self.n0 + g.bn as usize <= self.n
            && self.k.is_multiple_of(g.bk as usize)
    }
}

/// Reads the `f`-th 16-byte vector of the `bm x bk` tile of `A` at `k0`:
/// row `f / (bk/4)`, columns `4 * (f % (bk/4)) ..+4`, zero outside `A`.
///
/// `fast` says the whole tile is inside `A` and vector-readable.
///
/// # Safety
/// `a` views the `m * k` floats of `A`.
#[inline(always)]
pub(crate) unsafe fn load_a<C: ThreadCtx>(
    a: Global<'_, C, f32>, t: &TileCtx, k0: usize, bk: usize, f: usize, fast: bool,
) -> F4 {
    let (r, c) = (t.m0 + f / (bk / 4), k0 + 4 * (f % (bk / 4)));
    // SAFETY: `fast`: the whole tile is inside A; k % 4 == 0, c % 4 == 0
    // and an aligned base keep the address 16-byte aligned.
    unsafe { load_vec(a, (t.m, t.k), t.k, r, c, fast) }
}

/// Stores what [`load_a`] read for vector `f` into the transposed tile:
/// `As[4*(f % (bk/4)) + q][f / (bk/4)]`, four scalar stores.
///
/// # Safety
/// `a_tile` holds `bk * a_stride` floats, `f < bm * bk / 4`.
#[inline(always)]
pub(crate) unsafe fn stage_a<C: ThreadCtx>(a_tile: Shared<'_, C, f32>, a_stride: usize, bk: usize, f: usize, v: F4) {
    let (r, c) = (f / (bk / 4), 4 * (f % (bk / 4)));
    unroll!(q < 4, [0, 1, 2, 3], {
        // SAFETY: c + q < bk, r < bm <= a_stride.
        unsafe { a_tile.store((c + q) * a_stride + r, v.0[q]) };
    });
}

/// Reads the `f`-th 16-byte vector of the `bk x bn` tile of `B` at `k0`:
/// row `f / (bn/4)`, columns `4 * (f % (bn/4)) ..+4`, zero outside `B`.
///
/// # Safety
/// `b` views the `k * n` floats of `B`.
#[inline(always)]
pub(crate) unsafe fn load_b<C: ThreadCtx>(
    b: Global<'_, C, f32>, t: &TileCtx, k0: usize, bn: usize, f: usize, fast: bool,
) -> F4 {
    let (r, c) = (k0 + f / (bn / 4), t.n0 + 4 * (f % (bn / 4)));
    // SAFETY: `fast`: the whole tile is inside B; n % 4 == 0 and an aligned
    // base keep the address 16-byte aligned.
    unsafe { load_vec(b, (t.k, t.n), t.n, r, c, fast) }
}

/// Four floats of row `r` of a row-major matrix with rows of `stride`
/// floats, from column `c`: one 16-byte load when `fast`, else loads checked
/// against `rows` rows and `cols` columns (the matrix, or the part of it a
/// tile may read), zero outside.
///
/// # Safety
/// `x` holds `rows` rows of `stride` floats, `cols <= stride`; when `fast`,
/// the four are inside and 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn load_vec<C: ThreadCtx>(
    x: Global<'_, C, f32>, (rows, cols): (usize, usize), stride: usize, r: usize, c: usize, fast: bool,
) -> F4 {
    if fast {
        // SAFETY: the caller's contract.
        unsafe { x.load_as::<F4>(r * stride + c) }
    } else {
        let mut v = F4::ZERO;
        unroll!(q < 4, [0, 1, 2, 3], {
            if r < rows && c + q < cols {
                // SAFETY: checked just above.
                v.0[q] = unsafe { x.load(r * stride + c + q) };
            }
        });
        v
    }
}

/// Stores what [`load_b`] read for vector `f` at row `f / (bn/4)`, columns
/// `4 * (f % (bn/4)) ..+4` of a tile with row stride `b_stride` (a multiple
/// of 4): one 16-byte shared store.
///
/// The `F4` is rebuilt from its lanes, so that LLVM emits one
/// `st.shared.v4.f32` (an assignment of `v` itself is an aggregate copy,
/// which LLVM lowers as two 8-byte integer moves, through local memory when
/// the vector was staged in an array), and the emulator counts the one
/// 16-byte store the GPU makes. The store goes through a sub-view of the
/// vector: indexing the tile directly gives LLVM another, equivalent address
/// computation, and other PTX.
///
/// # Safety
/// `b_tile` 16-byte aligned and holding `bk * b_stride` floats,
/// `f < bk * bn / 4`.
#[inline(always)]
pub(crate) unsafe fn stage_b<C: ThreadCtx>(b_tile: Shared<'_, C, f32>, b_stride: usize, bn: usize, f: usize, v: F4) {
    let (r, c) = (f / (bn / 4), 4 * (f % (bn / 4)));
    // SAFETY: forwarded; r * b_stride + c is a multiple of 4.
    let dst = unsafe { b_tile.at(r * b_stride + c, 4usize) };
    // SAFETY: inside the tile, aligned.
    unsafe { dst.store_as::<F4>(0, F4([v.0[0], v.0[1], v.0[2], v.0[3]])) };
}

/// Step 7's edge blocks (at the border of `C`, or with rows that are not
/// 16-byte aligned) load their tiles in two ways.
///
/// The **first** tile holds the `K` residue: its `k` runs over
/// `0..kw` with `kw = (K - 1) % BK + 1`, and everything past `kw`, `M` or
/// `N` reads as zero ([`load_a_first`], [`load_b_first`], checked element by
/// element). Every later tile is then whole in `K`, so only the block's
/// rows past `M` and columns past `N` remain to handle, and those are the
/// same for every tile, and need no zeros (a row of `A` past `M` only feeds
/// rows of `C` that are never stored, likewise columns past `N`):
/// [`load_a_clamped`] and [`load_b_clamped`] load unconditionally from
/// addresses clamped inside the matrix, and [`realign_b`] moves the one
/// vector that crosses `N` back into place when the tile is staged.
///
/// Why not check each load, as steps 5 and 6 do: a branch per element
/// puts every load in its own basic block with its own predicate, twelve
/// of them live across the tile's FMAs, and ptxas (7 predicate registers,
/// 230-odd general ones in use) then schedules the loads after the FMAs
/// instead of before: their latency is no longer hidden (ncu at 4095^3:
/// 45% of stall samples on long scoreboard, 56% of the speed of 4096^3).
/// Clamped loads keep no predicate alive and take one address per row
/// with immediate offsets, like the interior loop's vector loads.
///
/// # Safety
/// `a` views the `m * k` floats of `A`; `f < bm * bk / 4`.
#[inline(always)]
pub(crate) unsafe fn load_a_first<C: ThreadCtx>(
    a: Global<'_, C, f32>, t: &TileCtx, kw: usize, bk: usize, f: usize,
) -> F4 {
    let (r, c) = (t.m0 + f / (bk / 4), 4 * (f % (bk / 4)));
    // SAFETY: checked: r < m and c + q < kw <= k, inside A.
    unsafe { load_vec(a, (t.m, kw), t.k, r, c, false) }
}

/// [`load_a_first`] for `B`: rows `0..kw`, columns inside `N`.
///
/// # Safety
/// `b` views the `k * n` floats of `B`; `f < bk * bn / 4`.
#[inline(always)]
pub(crate) unsafe fn load_b_first<C: ThreadCtx>(
    b: Global<'_, C, f32>, t: &TileCtx, kw: usize, bn: usize, f: usize,
) -> F4 {
    let (r, c) = (f / (bn / 4), t.n0 + 4 * (f % (bn / 4)));
    // SAFETY: checked: r < kw <= k and c + q < n, inside B.
    unsafe { load_vec(b, (kw, t.n), t.n, r, c, false) }
}

/// Vector `f` of the `A` tile at `k0`, a tile whole in `K` (`k0 + bk <= k`),
/// read as four scalars from one address. A row past `M` reads row 0
/// instead and is left as read: it only feeds rows of `C` past `M`, which
/// are never stored (as columns of `B` past `N` only feed columns of `C`
/// past `N`). Only `K` must be exact, and the first tile takes care of it.
///
/// # Safety
/// `a` views the `m * k` floats of `A`; `k0 + bk <= k`.
#[inline(always)]
pub(crate) unsafe fn load_a_clamped<C: ThreadCtx>(
    a: Global<'_, C, f32>, t: &TileCtx, k0: usize, bk: usize, f: usize,
) -> F4 {
    let (r, c) = (t.m0 + f / (bk / 4), k0 + 4 * (f % (bk / 4)));
    let row = if r < t.m { r } else { 0 };
    // SAFETY: row < m and c + 3 < k0 + bk <= k: four floats inside A.
    unsafe {
        let p = a.at(row * t.k + c, 4usize);
        F4([p.load(0), p.load(1), p.load(2), p.load(3)])
    }
}

/// Vector `f` of the `B` tile at `k0`, a tile whole in `K`, read as four
/// scalars from one address inside its row, shifted left where the vector
/// crosses `N` ([`realign_b`] undoes that when staging). Needs `N >= 4`.
///
/// A vector wholly inside `N` reads its own four columns (shift 0); the one
/// that crosses `N` reads the row's last four (`N - 4 ..`, shift
/// `c - (N - 4)`); one wholly past `N` reads the row's first four. The
/// choice depends only on the thread and `N`, so the address moves by the
/// same stride every tile, like the interior loop's.
///
/// # Safety
/// `b` views the `k * n` floats of `B`; `n >= 4`; `k0 + bk <= k`;
/// `f < bk * bn / 4`.
#[inline(always)]
pub(crate) unsafe fn load_b_clamped<C: ThreadCtx>(
    b: Global<'_, C, f32>, t: &TileCtx, k0: usize, bn: usize, f: usize,
) -> F4 {
    let (r, c) = (k0 + f / (bn / 4), t.n0 + 4 * (f % (bn / 4)));
    let (start, _) = b_window(t, c);
    // SAFETY: r < k and start + 3 < n: four floats of row r.
    unsafe {
        let p = b.at(r * t.n + start, 4usize);
        F4([p.load(0), p.load(1), p.load(2), p.load(3)])
    }
}

/// The first column [`load_b_clamped`] reads for the vector at column `c`,
/// and how far that is left of `c` (nonzero only for the vector crossing `N`).
#[inline(always)]
fn b_window(t: &TileCtx, c: usize) -> (usize, usize) {
    if c + 4 <= t.n {
        (c, 0)
    } else if c < t.n {
        (t.n - 4, c - (t.n - 4))
    } else {
        (0, 0)
    }
}

/// What [`load_b_clamped`] read, moved back to its columns (columns past
/// `N` keep whatever they got: see [`load_a_clamped`]). Selects, not
/// branches, so that nothing here competes with the loads' scheduling.
#[inline(always)]
pub(crate) fn realign_b(t: &TileCtx, bn: usize, f: usize, v: F4) -> F4 {
    use core::hint::select_unpredictable as select;
    let (_, shift) = b_window(t, t.n0 + 4 * (f % (bn / 4)));
    let [l0, l1, l2, l3] = v.0;
    // Column c + q < n was read at q + shift <= 3.
    let pick = |i: usize| select(i == 0, l0, select(i == 1, l1, select(i == 2, l2, l3)));
    let mut out = F4::ZERO;
    unroll!(q < 4, [0, 1, 2, 3], {
        out.0[q] = pick(q + shift);
    });
    out
}

/// Whether the `A` tile at `k0` can take the unchecked vector path.
#[inline(always)]
pub(crate) fn a_fast(t: &TileCtx, bm: usize, k0: usize, bk: usize) -> bool {
    t.a_vec && t.m0 + bm <= t.m && k0 + bk <= t.k
}

/// Whether the `B` tile at `k0` can take the unchecked vector path.
#[inline(always)]
pub(crate) fn b_fast(t: &TileCtx, bn: usize, k0: usize, bk: usize) -> bool {
    t.bc_vec && t.n0 + bn <= t.n && k0 + bk <= t.k
}

/// Stores a 4x4 fragment of accumulators at `C[row..row+4][col..col+4]`:
/// four 16-byte stores when `fast`, else guarded scalar stores.
///
/// # Safety
/// `c` views the `m * n` floats of `C`; with `fast`, the fragment is inside
/// `C` and `C`'s rows are 16-byte aligned.
#[inline(always)]
pub(crate) unsafe fn store_fragment<C: ThreadCtx>(
    c: GlobalMut<'_, C, f32>, t: &TileCtx, row: usize, col: usize, frag: &[[f32; 4]; 4], p: &Problem, fast: bool,
) {
    let (alpha, beta) = (p.alpha, p.beta);
    unroll!(r < 4, [0, 1, 2, 3], {
        let gr = row + r;
        if fast {
            // SAFETY: inside C, aligned (the caller's `fast`).
            unsafe { store_c4_at(c, gr * t.n + col, frag[r], alpha, beta) };
        } else {
            unroll!(q < 4, [0, 1, 2, 3], {
                if gr < t.m && col + q < t.n {
                    // SAFETY: checked just above.
                    unsafe { store_c_at(c, gr * t.n + col + q, frag[r][q], alpha, beta) };
                }
            });
        }
    });
}
