//! The operand pass of the TMA steps: copies a row-major matrix into a
//! workspace as the tensor cores read it: K-major, rounded to TF32 (or, for
//! 3xTF32, split into TF32 halves), with the row length the host gives
//! (a tensor map's row stride must be a multiple of 16 bytes). Measured
//! in [`docs/gemm.md`](../../../docs/gemm.md), with the steps it feeds.
//!
//! `wgmma` takes TF32 operands K-major only and the TMA copies without
//! transposing, so `B` (`K x N`, N-major) is transposed here; `A` (`M x K`)
//! is already K-major and passes through only where its rows are not
//! 16-byte aligned, or to be split. One pass reads the matrix once and
//! writes it once (twice when split): at 4096^2 a few percent of the
//! product's time.
//!
//! A block moves a 32x32 tile through shared memory, as the transpose
//! ladder's `padded` step does: loads along the source's rows and stores
//! along the destination's are both 128-byte coalesced, and the tile's
//! padding column (`+ 1`) keeps the transposed reads free of bank
//! conflicts.

use super::ozaki::{self, LADDER_MODULI, MODULI};
use super::scale::{exponent, pow2};
use super::to_tf32;
use crate::registry::{Step, params_and_entry, utilities};
use crate::{Dim3, LaunchDims, TensorMap, ThreadCtx};

/// The pass in the registry (a utility of the TMA steps).
pub const PACK_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// a GEMM operand into a K-major, 16-byte-padded workspace for the TMA steps: `B` transposed, either split into TF32 halves for 3xTF32
    pack => "gemm_pack" in "gemm/pack.rs", geometry "pack_dims(rows, cols)";
    /// the pass in its residue mode (`PACK_RESIDUES`), for step 17: each operand's signed-byte residues modulo its moduli, a plane each
    residues => "gemm_residues" in "gemm/pack.rs", geometry "pack_dims(rows, cols)";
};

/// The entry point of a pass with these flags: the residue mode is an
/// entry of its own, so that `gemm_pack`'s instructions are the other
/// modes' alone.
pub const fn pack_entry(flags: u32) -> &'static str {
    if flags & PACK_RESIDUES != 0 { "gemm_residues" } else { "gemm_pack" }
}

/// Side of the tile a block moves.
pub const PACK_TILE: u32 = 32;
/// Rows of threads per block: each thread moves `PACK_TILE / PACK_ROWS` elements.
pub const PACK_ROWS: u32 = 8;
/// Transpose: element `(r, c)` of the source goes to row `c`, column `r`.
pub const PACK_TRANSPOSE: u32 = 1;
/// Split ([`split`]): `hi = tf32(x)` and `lo = tf32(x - hi)`; without it,
/// `hi = tf32(x)` and `lo` is not written. Both round to nearest
/// (`cvt.rna`): the tensor cores read an f32's top 19 bits, and truncation
/// there would double TF32's error (measured: 2.7 times cuBLAS TF32's at
/// 4096^3). A split pass also records where the source is not finite
/// ([`Marks`]) and writes zero halves there: the product then sees only
/// finite values, and `gemm_fixup` recomputes the marked rows and columns
/// of `C` in FP32.
pub const PACK_SPLIT: u32 = 2;
/// Keep: the f32 bits as they are, not rounded (for step 14, whose tensor
/// maps of type TF32 round in the copy, to nearest even, as they do where
/// the operand is read in place).
pub const PACK_KEEP: u32 = 4;
/// Scale (with [`PACK_SPLIT`], step 16's pass over `A`): each destination
/// row is multiplied by `2^-e` before the split, `e` the [`exponent`] of
/// its peak ([`Marks::peaks`], from `gemm_maxima`): exact, and every row's
/// largest finite `|x|` then splits inside the peaks' window
/// ([`super::scale::PEAK_WINDOW`]).
pub const PACK_SCALE: u32 = 8;

/// Residues (step 17, Ozaki scheme II): each destination row (a row of
/// `A`, a column of `B`) is scaled by `2^(alpha - e)`, `e` from its peak
/// ([`super::ozaki::exponent`]), rounded to an integer of at most
/// `2^alpha` ([`super::ozaki::to_integer`], `alpha` from the depth, the
/// destination's columns), and written as its signed-byte residue modulo
/// each of the first [`LADDER_MODULI`] moduli: plane `l` (`dst_rows` rows
/// of `stride` bytes) after plane `l - 1`, the bytes of a row from its
/// length up to a multiple of 4 zero (the product's tensor maps count 4
/// bytes an element). Marks non-finite values as [`PACK_SPLIT`] does,
/// their residues zero; reads the peaks.
pub const PACK_RESIDUES: u32 = 16;

const T: usize = PACK_TILE as usize;
const ROWS: usize = PACK_ROWS as usize;

/// Grid and block for a `rows x cols` source: one block for a source of
/// no elements (a pass that only writes tensor maps).
pub const fn pack_dims(rows: u32, cols: u32) -> LaunchDims {
    LaunchDims {
        // `n.div_ceil(T)` for `n > 0`, and 1 for 0.
        grid: Dim3::xy(1 + cols.saturating_sub(1) / PACK_TILE, 1 + rows.saturating_sub(1) / PACK_TILE),
        block: Dim3::xy(PACK_TILE, PACK_ROWS),
        shared_bytes: PACK_TILE * (PACK_TILE + 1) * 4,
    }
}

/// The shape of one pass: a `rows x cols` row-major source, a destination
/// of row length `stride` (at least `cols`, or `rows` when transposed), and
/// the `PACK_*` flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackShape {
    pub rows: u32,
    pub cols: u32,
    pub stride: u32,
    pub flags: u32,
}

impl PackShape {
    /// Rows of the destination.
    pub const fn dst_rows(self) -> u32 {
        if self.flags & PACK_TRANSPOSE != 0 { self.cols } else { self.rows }
    }
    /// Floats of one destination buffer: its rows of `stride`; for
    /// [`PACK_RESIDUES`], bytes of all the planes.
    pub const fn dst_len(self) -> u64 {
        let planes = if self.flags & PACK_RESIDUES != 0 { LADDER_MODULI as u64 } else { 1 };
        planes * self.dst_rows() as u64 * self.stride as u64
    }
}

/// Tensor maps that a pass writes to global memory for the product that
/// follows it: `maps` (null for none) receives `words`. A tensor map is
/// encoded by the host, but the product reads it from global memory, and
/// a kernel parameter is the one way to get bytes there that is ordered
/// with the stream and recorded by value in a CUDA graph; the pass that
/// makes the operand carries its map.
#[derive(Clone, Copy, Debug)]
pub struct MapsOut {
    pub maps: *mut TensorMap,
    pub words: [TensorMap; 2],
}

/// The split of a finite `x` into TF32 halves, `x ~ hi + lo`: `hi =
/// tf32(x)`, to nearest, except where that rounds past `FLT_MAX` (`|x|`
/// within half a TF32 ulp of it), where `hi` is `x` truncated to TF32 (as
/// CUTLASS truncates every big half): every finite `x` gives finite halves,
/// and `|hi| <= |x|` there, so no product of halves overflows where `x`'s
/// own does not. `lo = tf32(x - hi)`, `x - hi` exact. A subnormal `x`
/// keeps its bits from `2^-136` up (TF32's 10 mantissa bits at the
/// smallest exponent): below `2^-137` it splits into zeros.
#[inline(always)]
pub fn split(x: f32) -> (f32, f32) {
    let h = to_tf32(x);
    let h = if h.is_infinite() { f32::from_bits(x.to_bits() & 0xffff_e000) } else { h };
    (h, to_tf32(x - h))
}

/// Where a split pass records the source's non-finite values: `any[0]` is
/// raised if there is one, and `lines[r]` for each destination row `r`
/// that holds one (a row of `A`, or a column of `B` for the transposed
/// pass). Both are zeroed before the pass and only ever raised (set to 1).
/// A scaled pass ([`PACK_SCALE`]) reads `peaks[r]`, the bits of row `r`'s
/// largest finite `|x|`.
#[derive(Clone, Copy, Debug)]
pub struct Marks {
    pub any: *mut u32,
    pub lines: *mut u32,
    pub peaks: *const u32,
}

/// Copies `src` into `hi` (and `lo`), as [`PackShape`] says; block `(0, 0)`
/// also writes `out`'s tensor maps.
///
/// # Thread mapping
/// Block `(32, 8)`, grid [`pack_dims`]: block `(x, y)` moves the source's
/// tile at rows `32 y ..+32`, columns `32 x ..+32`; thread `(tx, ty)` loads
/// rows `ty + 8 j` at column `tx`, and stores destination rows `ty + 8 j` of
/// the tile at column `tx`; in the residue mode, thread `32 ty + tx` stores
/// 4 columns of one destination row, a 4-byte word a plane.
///
/// # Safety
/// `src` holds `rows * cols` floats; `hi` (and `lo` when split) hold
/// [`PackShape::dst_len`] floats each, and overlap nothing else; `out.maps`
/// is null or holds two tensor maps that nothing reads during the pass;
/// when split, `marks.any` holds one `u32` and `marks.lines` one per
/// destination row ([`PackShape::dst_rows`]), overlapping nothing else;
/// when scaled, `marks.peaks` one per destination row.
#[inline(always)]
pub unsafe fn pack<C: ThreadCtx>(
    ctx: &C, src: *const f32, (hi, lo): (*mut f32, *mut f32), s: PackShape, out: MapsOut, marks: Marks,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if s.flags & PACK_RESIDUES != 0 {
            pack_as::<C, true>(ctx, src, (hi, lo), s, out, marks)
        } else {
            pack_as::<C, false>(ctx, src, (hi, lo), s, out, marks)
        }
    }
}

/// [`pack`] with the residue mode known at compile time (`RESIDUES`: the
/// flag [`PACK_RESIDUES`] is set), as each entry point takes it.
///
/// # Safety
/// As [`pack`].
#[inline(always)]
unsafe fn pack_as<C: ThreadCtx, const RESIDUES: bool>(
    ctx: &C, src: *const f32, (hi, lo): (*mut f32, *mut f32), s: PackShape, out: MapsOut, marks: Marks,
) {
    let b = ctx.block_idx();
    if !out.maps.is_null() && b.x == 0 && b.y == 0 {
        let maps = ctx.global_mut(out.maps.cast::<u64>(), 32usize);
        let t = ctx.thread_idx();
        let i = (t.y * PACK_TILE + t.x) as usize;
        // Word `w` by a constant index: indexed by `i`, the parameters would
        // be copied to a stack frame in every thread of every block.
        unroll!(w < 32, {
            if i == w {
                // SAFETY: w < 32 words: inside the two maps (the caller's contract).
                unsafe { maps.store(w, out.words[w / 16].0[w % 16]) };
            }
        });
    }
    let (rows, cols) = (s.rows as usize, s.cols as usize);
    let (transpose, split) = (s.flags & PACK_TRANSPOSE != 0, s.flags & PACK_SPLIT != 0);
    let marked = split || RESIDUES;
    let dst_len = s.dst_len() as usize;
    let src = ctx.global(src, (s.rows, s.cols));
    let hi = ctx.global_mut(hi, if RESIDUES { 0 } else { dst_len });
    let lo = ctx.global_mut(lo, if split { dst_len } else { 0 });
    let any = ctx.global_mut(marks.any, if marked { 1usize } else { 0 });
    let lines = ctx.global_mut(marks.lines, if marked { s.dst_rows() } else { 0 });
    let scaled = if RESIDUES { s.flags & PACK_SCALE != 0 } else { split && s.flags & PACK_SCALE != 0 };
    let peaks = ctx.global(marks.peaks, if scaled { s.dst_rows() } else { 0 });
    let tile = ctx.shared::<f32>(T * (T + 1));
    let t = ctx.thread_idx();
    let (tx, ty) = (t.x as usize, t.y as usize);
    let (r0, c0) = (b.y as usize * T, b.x as usize * T);

    // Destination row `dr`, column `dc` of this tile, and where its value
    // sits in the tile: transposed, the tile is read down a column.
    let (dr0, dc0, drows, dcols) = if transpose { (c0, r0, cols, rows) } else { (r0, c0, rows, cols) };
    // A scaled split's peaks for the thread's four destination rows,
    // loaded first and outside any row's branch, so that their four loads
    // and the tile's are in flight together (a load behind a row's branch
    // makes ptxas wait for it there). A row past the end loads the last
    // row's peak, from a clamped address; nothing is stored for it.
    let mut row_peaks = [0u32; T / ROWS];
    if !RESIDUES && scaled && drows > 0 {
        unroll!(j < T / ROWS, [0, 1, 2, 3], {
            // SAFETY: the index is below drows, the length of `peaks`.
            row_peaks[j] = unsafe { peaks.load((dr0 + ty + ROWS * j).min(drows - 1)) };
        });
    }
    unroll!(j < T / ROWS, [0, 1, 2, 3], {
        let (r, c) = (r0 + ty + ROWS * j, c0 + tx);
        if r < rows && c < cols {
            // SAFETY: inside the source (checked) and the tile.
            unsafe { tile.store((ty + ROWS * j) * (T + 1) + tx, src.load(r * cols + c)) };
        }
    });
    ctx.sync_threads();
    if RESIDUES {
        // Thread `t` (`32 ty + tx`) takes destination row `t / 8` of the
        // tile and its 4 columns from `4 (t % 8)`: one 4-byte store a
        // plane, and a row's bytes from its length up to a multiple of 4
        // are the zeros of its last quad. The tile's reads are
        // conflict-free either way (row `r`, column `c` at bank `r + c`
        // mod 32, the tile padded).
        let alpha = ozaki::alpha(LADDER_MODULI, dcols) as i32;
        let words = hi.cast::<u32>(dst_len / 4);
        let thread = ty * T + tx;
        let (r, q) = (thread / (T / 4), 4 * (thread % (T / 4)));
        let (dr, dc) = (dr0 + r, dc0 + q);
        if dr < drows && dc < dcols {
            // SAFETY: dr < drows, the length of `peaks`.
            let shift = alpha - ozaki::exponent(unsafe { peaks.load(dr) });
            let mut v = [0i64; 4];
            unroll!(i < 4, [0, 1, 2, 3], {
                if dc + i < dcols {
                    let at = if transpose { (q + i) * (T + 1) + r } else { r * (T + 1) + q + i };
                    // SAFETY: inside the tile, loaded above (its source
                    // element is inside the matrix) by a thread the
                    // barrier orders before this.
                    let x = unsafe { tile.load(at) };
                    if !x.is_finite() {
                        // SAFETY: dr < drows, the length of `lines`.
                        unsafe {
                            lines.raise_flag(dr);
                            any.raise_flag(0);
                        }
                    }
                    // Zero residues for a non-finite value
                    // ([`ozaki::to_integer`]): the fix-up recomputes its
                    // row or column of `C`.
                    v[i] = ozaki::to_integer(x, shift);
                }
            });
            let plane = s.dst_rows() as usize * s.stride as usize;
            unroll!(l < LADDER_MODULI, [0, 1, 2, 3, 4, 5, 6, 7, 8], {
                let p = MODULI[l];
                let word = u32::from_le_bytes(v.map(|x| ozaki::residue_narrow(x, p) as u8));
                // SAFETY: dr < drows and dc + 3 < dcols rounded up to 4
                // <= stride, a multiple of 4: inside plane l, aligned.
                unsafe { words.store((l * plane + dr * s.stride as usize + dc) / 4, word) };
            });
        }
        return;
    }
    unroll!(j < T / ROWS, [0, 1, 2, 3], {
        let (dr, dc) = (dr0 + ty + ROWS * j, dc0 + tx);
        if dr < drows && dc < dcols {
            let at = if transpose { tx * (T + 1) + ty + ROWS * j } else { (ty + ROWS * j) * (T + 1) + tx };
            // SAFETY: inside the tile, loaded above (its source element is
            // inside the matrix) by a thread the barrier orders before this.
            let x = unsafe { tile.load(at) };
            let i = dr * s.stride as usize + dc;
            if split {
                // Zero halves for a non-finite value: the product stays
                // finite (inf - inf in the split, a NaN whose payload lies
                // in the low 13 bits read as inf), and the fix-up
                // recomputes its row or column of `C` from the source.
                let x = if scaled { x * pow2(-exponent(row_peaks[j])) } else { x };
                let (h, l) = if x.is_finite() { self::split(x) } else { (0.0, 0.0) };
                // SAFETY: dr < drows, dc < dcols <= stride: inside both.
                unsafe {
                    hi.store(i, h);
                    lo.store(i, l);
                }
                if !x.is_finite() {
                    // SAFETY: dr < drows, the length of `lines`.
                    unsafe {
                        lines.raise_flag(dr);
                        any.raise_flag(0);
                    }
                }
            } else {
                let x = if s.flags & PACK_KEEP != 0 { x } else { to_tf32(x) };
                // SAFETY: as above.
                unsafe { hi.store(i, x) };
            }
        }
    });
}

/// A tensor map as a kernel parameter: the same 128 bytes, 8-byte aligned
/// (the NVPTX backend takes no by-value parameter aligned to 64).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct MapParam(pub [u64; 16]);

/// The pass's entry points, one per mode that [`pack_as`] takes as a
/// constant, with the same parameters.
macro_rules! pack_entry_point {
    ($(#[$doc:meta])* $Params:ident => $entry:ident, residues: $residues:literal) => {
        params_and_entry! {
            $(#[$doc])*
            $Params => $entry(
                src: *const f32, hi: *mut f32, lo: *mut f32, rows: u32, cols: u32, stride: u32, flags: u32,
                maps: *mut TensorMap, map0: MapParam, map1: MapParam, any: *mut u32, lines: *mut u32, peaks: *const u32,
            ) {
                let out = MapsOut { maps, words: [TensorMap(map0.0), TensorMap(map1.0)] };
                let marks = Marks { any, lines, peaks };
                let shape = PackShape { rows, cols, stride, flags };
                // SAFETY: the host launcher checked the lengths and the geometry.
                unsafe { pack_as::<_, $residues>(&crate::gpu::Gpu, src, (hi, lo), shape, out, marks) }
            }
        }
    };
}

pack_entry_point! {
    /// `gemm_pack`'s parameters, in order.
    PackParams => gemm_pack, residues: false
}
pack_entry_point! {
    /// `gemm_residues`'s parameters, in order: `gemm_pack`'s, with
    /// [`PACK_RESIDUES`] among the flags.
    ResiduesParams => gemm_residues, residues: true
}
