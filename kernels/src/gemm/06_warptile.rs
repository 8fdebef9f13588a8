//! Step 6: warp tiling, each warp owns a `WM x WN` tile of `C`, and its
//! threads own 4x4 fragments interleaved across it.
//! (`docs/gemm.md`, "6. warptile")
//!
//! **Idea:** the block tile is split among warps (`BM/WM x BN/WN` of them),
//! and each warp's tile is covered by its 32 lanes arranged `LANES_M x
//! LANES_N`, repeated `MI x NI` times. A thread's `(4 MI) x (4 NI)` outputs
//! are `MI x NI` fragments of 4x4, spaced `4 * LANES_M` rows and `4 * LANES_N`
//! columns apart, instead of one contiguous block.
//!
//! **What it fixes:** per `k`, the lanes of a warp now read *adjacent*
//! 16-byte vectors: `LANES_N` distinct vectors of `B` (the other lanes get
//! broadcasts) and `LANES_M` of `A`, at most 128 contiguous bytes each, so
//! every `ld.shared.v4` is one conflict-free wavefront (step 5: 4-way
//! conflicts on `B`). Warps also map to rectangles of `C` whose `A` and `B`
//! slices are shared by fewer warps, and the same code is tuned by changing
//! the constants of [`WT`].
//!
//! **What it costs:** as in steps 2-5, a block loads a tile, waits at a
//! barrier, computes, and waits again before the next load: while the tile
//! arrives from L2/DRAM the FMA units of that block idle, and only other
//! blocks on the SM can fill the gap. Step 7 overlaps the two.

use super::tiles::{TileCtx, a_fast, b_fast, load_a, load_b, stage_a, stage_b, store_fragment};
use super::{F4, Problem, shared_tiles};
use crate::ThreadCtx;
use crate::math::fma;
use crate::mem::{GlobalMut, Shared};

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Fp32, (WT.bm, WT.bn), Dim3::xy(WT.threads(), 1), WT.shared_floats());

/// Geometry of a warp-tiled kernel (steps 6 and 7).
///
/// Threads: `(bm/wm) * (bn/wn)` warps of 32. Per thread: `mi x ni`
/// fragments of 4x4 outputs. Lanes: `lanes_n = wn / (4 ni)` along `N`,
/// `lanes_m = 32 / lanes_n` along `M`, with `wm == 4 * mi * lanes_m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpTiling {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub wm: u32,
    pub wn: u32,
    pub mi: u32,
    pub ni: u32,
    /// Floats of padding per row of the transposed `A` tile (a multiple of
    /// 4, to keep rows 16-byte aligned).
    pub a_pad: u32,
}

impl WarpTiling {
    /// Threads per block.
    pub const fn threads(&self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn) * 32
    }
    /// Lanes of a warp along `N`.
    pub const fn lanes_n(&self) -> u32 {
        self.wn / (4 * self.ni)
    }
    /// Lanes of a warp along `M`.
    pub const fn lanes_m(&self) -> u32 {
        32 / self.lanes_n()
    }
    /// Row stride of the transposed `A` tile in shared memory.
    pub const fn a_stride(&self) -> u32 {
        self.bm + self.a_pad
    }
    /// Floats of shared memory for one `A` and one `B` tile.
    pub const fn shared_floats(&self) -> u32 {
        self.bk * self.a_stride() + self.bk * self.bn
    }
    /// 16-byte vectors of the `A` tile each thread moves per `K` step.
    pub const fn a_vectors(&self) -> u32 {
        self.bm * self.bk / 4 / self.threads()
    }
    /// 16-byte vectors of the `B` tile each thread moves per `K` step.
    pub const fn b_vectors(&self) -> u32 {
        self.bk * self.bn / 4 / self.threads()
    }
    /// Whether the geometry is consistent (checked at compile time for the
    /// constants used).
    pub const fn is_valid(&self) -> bool {
        let lanes_n = self.wn / (4 * self.ni);
        self.bk.is_multiple_of(4)
            && self.bm.is_multiple_of(self.wm)
            && self.bn.is_multiple_of(self.wn)
            && self.wn.is_multiple_of(4 * self.ni)
            && lanes_n > 0
            && 32 % lanes_n == 0
            && self.wm == 4 * self.mi * (32 / lanes_n)
            && self.a_pad.is_multiple_of(4)
            && (self.bm * self.bk / 4).is_multiple_of(self.threads())
            && (self.bk * self.bn / 4).is_multiple_of(self.threads())
            && self.threads() <= 1024
            // the unroll! lists of compute_tile, store_acc and step 7
            && self.bk <= 16
            && self.mi <= 4
            && self.ni <= 4
            && self.a_vectors() <= 8
            && self.b_vectors() <= 8
    }
}

/// Step 6's geometry: 128x128x8 block tile, 8 warps of 64x32, 8x8 outputs
/// per thread as 2x2 fragments, lanes 8 x 4.
pub const WT: WarpTiling = WarpTiling { bm: 128, bn: 128, bk: 8, wm: 64, wn: 32, mi: 2, ni: 2, a_pad: 4 };
const _: () = assert!(WT.is_valid());

/// A thread's accumulators: `MI x NI` fragments of 4x4 (`acc[i][r][j][c]`
/// is row `r`, column `c` of fragment `(i, j)`).
pub(crate) type Acc<const MI: usize, const NI: usize> = [[[[f32; 4]; NI]; 4]; MI];

/// Where a thread's fragments start, tile-local: `(row, col)` of fragment
/// `(0, 0)`. Fragment `(i, j)` is `4 * lanes_m * i` rows and
/// `4 * lanes_n * j` columns further.
#[inline(always)]
pub(crate) fn thread_origin(g: &WarpTiling, tid: usize) -> (usize, usize) {
    let (warp, lane) = (tid / 32, tid % 32);
    let warps_n = (g.bn / g.wn) as usize;
    let lanes_n = g.lanes_n() as usize;
    let row = (warp / warps_n) * g.wm as usize + (lane / lanes_n) * 4;
    let col = (warp % warps_n) * g.wn as usize + (lane % lanes_n) * 4;
    (row, col)
}

/// A thread's fragments for one `k`: `MI` vectors of `A`, `NI` of `B`.
type Frags<const MI: usize, const NI: usize> = ([F4; MI], [F4; NI]);

/// Reads the thread's fragments for row `kk` of a staged tile: `MI` 16-byte
/// loads of `A` and `NI` of `B`.
///
/// # Safety
/// `a_tile`/`b_tile` hold a staged tile in `g`'s layout; `(row, col)` from
/// [`thread_origin`]; `kk < g.bk`.
#[inline(always)]
unsafe fn load_frags<C: ThreadCtx, const MI: usize, const NI: usize>(
    g: &WarpTiling, a_tile: Shared<'_, C, f32>, b_tile: Shared<'_, C, f32>, row: usize, col: usize, kk: usize,
) -> Frags<MI, NI> {
    let (sub_m, sub_n) = (4 * g.lanes_m() as usize, 4 * g.lanes_n() as usize);
    let (a_stride, bn) = (g.a_stride() as usize, g.bn as usize);
    let mut av = [F4::ZERO; MI];
    let mut bv = [F4::ZERO; NI];
    for (i, v) in av.iter_mut().enumerate() {
        // SAFETY: row + sub_m*i + 4 <= bm, a multiple of 4: aligned, inside.
        *v = unsafe { a_tile.load_as::<F4>(kk * a_stride + row + sub_m * i) };
    }
    for (j, v) in bv.iter_mut().enumerate() {
        // SAFETY: as above for B.
        *v = unsafe { b_tile.load_as::<F4>(kk * bn + col + sub_n * j) };
    }
    (av, bv)
}

/// The outer product of one `k`'s fragments into the accumulators:
/// `16 * MI * NI` FMAs.
#[inline(always)]
fn outer_product<const MI: usize, const NI: usize>(acc: &mut Acc<MI, NI>, (av, bv): &Frags<MI, NI>) {
    unroll!(i < MI, [0, 1, 2, 3], {
        unroll!(j < NI, [0, 1, 2, 3], {
            let (x, y) = (&av[i].0, &bv[j].0);
            for (acc, x) in acc[i].iter_mut().zip(x.iter()) {
                for (acc, y) in acc[j].iter_mut().zip(y.iter()) {
                    *acc = fma(*x, *y, *acc);
                }
            }
        });
    });
}

/// One tile's worth of FMAs: for each `k` of the tile, read the fragments
/// and accumulate their outer product.
///
/// # Safety
/// As [`load_frags`].
#[inline(always)]
pub(crate) unsafe fn compute_tile<C: ThreadCtx, const MI: usize, const NI: usize>(
    g: &WarpTiling, a_tile: Shared<'_, C, f32>, b_tile: Shared<'_, C, f32>, row: usize, col: usize,
    acc: &mut Acc<MI, NI>,
) {
    unroll!(kk < g.bk as usize, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], {
        // SAFETY: forwarded; kk < bk.
        let frags = unsafe { load_frags::<C, MI, NI>(g, a_tile, b_tile, row, col, kk) };
        outer_product(acc, &frags);
    });
}

/// Writes a thread's fragments to `C` with the epilogue.
///
/// # Safety
/// `c` views the `m * n` floats of `C`.
#[inline(always)]
pub(crate) unsafe fn store_acc<C: ThreadCtx, const MI: usize, const NI: usize, const INTERIOR: bool>(
    g: &WarpTiling, c: GlobalMut<'_, C, f32>, t: &TileCtx, row: usize, col: usize, acc: &Acc<MI, NI>, p: &Problem,
) {
    let (sub_m, sub_n) = (4 * g.lanes_m() as usize, 4 * g.lanes_n() as usize);
    let fast = INTERIOR || (t.bc_vec && t.m0 + g.bm as usize <= t.m && t.n0 + g.bn as usize <= t.n);
    unroll!(i < MI, [0, 1, 2, 3], {
        unroll!(j < NI, [0, 1, 2, 3], {
            let frag = [acc[i][0][j], acc[i][1][j], acc[i][2][j], acc[i][3][j]];
            let (gr, gc) = (t.m0 + row + sub_m * i, t.n0 + col + sub_n * j);
            // SAFETY: fast only for interior tiles with aligned rows; else checked.
            unsafe { store_fragment(c, t, gr, gc, &frag, p, fast) };
        });
    });
}

/// Step 6 with the geometry `g` (`MI`, `NI` must equal `g.mi`, `g.ni`).
///
/// # Safety
/// As [`super::naive`]; the launch gives `g.threads()` threads and
/// `g.shared_floats()` floats of shared memory.
#[inline(always)]
pub unsafe fn warptile_with<C: ThreadCtx, const MI: usize, const NI: usize>(
    ctx: &C, g: WarpTiling, (a, b, c): (*const f32, *const f32, *mut f32), p: Problem,
) {
    debug_assert!(g.is_valid() && g.mi as usize == MI && g.ni as usize == NI);
    let (bm, bn, bk, threads) = (g.bm as usize, g.bn as usize, g.bk as usize, g.threads() as usize);
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // The transposed A tile (rows of a_stride, a multiple of 4), then the
    // B tile, aligned for the vector accesses (as F4).
    let (a_tile, b_tile) = shared_tiles::<C, F4>(ctx, bk * g.a_stride() as usize, bk * bn);
    let tid = ctx.thread_idx().x as usize;
    let t = TileCtx::new(ctx, &p, (bm, bn), (a, b, c));
    let (row, col) = thread_origin(&g, tid);

    let mut acc: Acc<MI, NI> = [[[[0.0; 4]; NI]; 4]; MI];
    let mut k0 = 0;
    while k0 < t.k {
        let (fa, fb) = (a_fast(&t, bm, k0, bk), b_fast(&t, bn, k0, bk));
        unroll!(i < g.a_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
            let f = tid + i * threads;
            // SAFETY: f < bm*bk/4; loads checked or inside A.
            unsafe { stage_a(a_tile, g.a_stride() as usize, bk, f, load_a(a, &t, k0, bk, f, fa)) };
        });
        unroll!(i < g.b_vectors() as usize, [0, 1, 2, 3, 4, 5, 6, 7], {
            let f = tid + i * threads;
            // SAFETY: f < bk*bn/4; loads checked or inside B.
            unsafe { stage_b(b_tile, bn, bn, f, load_b(b, &t, k0, bn, f, fb)) };
        });
        ctx.sync_threads();
        // SAFETY: the tile is staged.
        unsafe { compute_tile(&g, a_tile, b_tile, row, col, &mut acc) };
        ctx.sync_threads();
        k0 += bk;
    }
    // SAFETY: forwarded.
    unsafe { store_acc::<C, MI, NI, false>(&g, c, &t, row, col, &acc, &p) };
}

/// `C = alpha * A * B + beta * C`, warp-tiled with the geometry [`WT`].
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `As[BK][BM + a_pad]` (transposed),
/// then `Bs[BK][BN]`.
///
/// # Thread mapping
/// `WT.threads()` threads (1D), grid `ceil(n/BN) x ceil(m/BM)`. Warp `w`
/// owns rows `(w / (BN/WN)) * WM ..+WM`, columns `(w % (BN/WN)) * WN ..+WN`
/// of the tile; lane `l` owns the 4x4 fragments at `4 * (l / LANES_N) +
/// 4 * LANES_M * i`, `4 * (l % LANES_N) + 4 * LANES_N * j`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn warptile<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    // SAFETY: forwarded; the launch uses WT.
    unsafe { warptile_with::<C, { WT.mi as usize }, { WT.ni as usize }>(ctx, WT, (a, b, c), p) }
}
