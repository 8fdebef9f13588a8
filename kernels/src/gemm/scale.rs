//! Exact power-of-two scaling for step 16: FP32 accuracy for every finite
//! input. Measured in [`docs/gemm.md`](../../../docs/gemm.md).
//!
//! 3xTF32 keeps FP32's accuracy only while every half and every product of
//! halves is a normal float. A subnormal `x` has fewer than TF32's 11 bits
//! above `2^-136`, so its halves drop the rest of it; a normal `x` below
//! `2^-115` has a subnormal `lo`; and a product of halves under `2^-126`
//! may lose bits in the tensor cores. A row of `A` of subnormals against
//! `B` of about `1e3` measured 19,460 times cuBLAS SGEMM's error.
//!
//! So the product multiplies `diag(2^-r) A` by `B diag(2^-s)` and the
//! epilogue multiplies element `(i, j)` back by `2^(r_i + s_j)`: a row of
//! `A` (a column of `B`) whose largest `|x|`, its peak, lies outside
//! [`PEAK_WINDOW`] is scaled into it ([`exponent`]). Scaling by a power of
//! two is exact unless it underflows; a row with a peak above `2^46` is
//! brought down only to `2^46`, so that the rest of it stays normal where
//! a term it makes with a column's peak could matter. Inside the window
//! nothing changes, and any product of peaks stays below `2^94`: no sum
//! overflows. The one rounding of the unscaling ([`unscale`], in f64) is
//! the rounding an FP32 result takes anyway.
//!
//! The exponents come from [`maxima`], one launch over both operands
//! before the product: the largest finite `|x|` of each row of `A` (or column of
//! `B`), as its bits (the bits of non-negative floats order as integers),
//! raised atomically into words the host zeroed. Non-finite values are left
//! out: the fix-up recomputes their rows and columns
//! ([`super::fixup`]).

use crate::registry::{Step, params_and_entry, utilities};
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The pass in the registry (a utility of step 16).
pub const MAXIMA_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// the largest finite `|x|` of each row of `A` and each column of `B`, in one launch, for step 16's exact power-of-two scaling
    maxima => "gemm_maxima" in "gemm/scale.rs", geometry "maxima_dims(m, k, n)";
};

/// Block of the pass: 32 columns by 8 rows of threads.
const W: usize = 32;
const H: usize = 8;
/// The most spans a thread reads (by rows, spans of 32 columns; by
/// columns, of 32 rows, four of its own): a block then covers `32 x 512`
/// or `512 x 32` elements and raises each of its words once per thread
/// that read it.
const SPAN: u32 = 16;
/// Spans a thread loads at once: with its four rows (by rows) or four
/// rows of a span (by columns), 16 loads in flight a thread.
const AT_ONCE: usize = 4;
/// The fewest blocks the pass gives an operand that has the elements for
/// them (a span of a block, 32 x 32 elements, each): 2 an SM of a 132-SM
/// GPU, so that `A`'s and `B`'s 512 blocks of a 1024^3 product fit on it
/// at once (5 blocks an SM at the pass's 48 registers) at span 4, each
/// thread's 16 loads in flight. At the full span a 1024^2 operand took 64 blocks, and
/// an H200 read it at 150 GB/s (27.9 us, `ncu` in the GEMM run at
/// b74d7a5); at span 1, 1024 blocks, an H100 read both operands in 17.9
/// us, 470 GB/s (`ncu`, in
/// docs/measurements/2026-12-05-h100-gemm-short-shapes at commit ce46891).
const FEW_BLOCKS: u64 = 256;

/// How the pass covers one `rows x cols` operand, by rows (`A`) or by
/// columns (`B`): blocks of 32 lines by `32 span` elements along them,
/// `grid` of them (`x` along the rows, `y` down the columns). The span is
/// the largest up to 16 that leaves the operand [`FEW_BLOCKS`] blocks, 1
/// for an operand too small for that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cover {
    pub rows: u32,
    pub cols: u32,
    pub by_rows: bool,
    pub span: u32,
}

impl Cover {
    /// The cover of a `rows x cols` operand.
    pub const fn of(rows: u32, cols: u32, by_rows: bool) -> Cover {
        let blocks_of_one_span = (rows as u64).div_ceil(W as u64) * (cols as u64).div_ceil(W as u64);
        let span = in_span_range(blocks_of_one_span / FEW_BLOCKS);
        Cover { rows, cols, by_rows, span }
    }

    /// Blocks along the rows and down the columns.
    pub const fn grid(self) -> (u32, u32) {
        let long = W as u32 * self.span();
        if self.by_rows {
            (self.cols.div_ceil(long), self.rows.div_ceil(W as u32))
        } else {
            (self.cols.div_ceil(W as u32), self.rows.div_ceil(long))
        }
    }

    /// The span, in `[1, 16]` whatever the field holds.
    pub const fn span(self) -> u32 {
        in_span_range(self.span as u64)
    }

    /// Blocks in all.
    pub const fn blocks(self) -> u64 {
        let (x, y) = self.grid();
        x as u64 * y as u64
    }
}

/// `s` brought into `[1, SPAN]`.
const fn in_span_range(s: u64) -> u32 {
    if s < 1 {
        1
    } else if s > SPAN as u64 {
        SPAN
    } else {
        s as u32
    }
}

/// Grid and block of the pass over `A` (`m x k`, by rows) and `B` (`k x
/// n`, by columns) in one launch: `A`'s blocks, then `B`'s, along `x`
/// (a grid too long for the GPU fails the launch's check).
pub const fn maxima_dims(m: u32, k: u32, n: u32) -> LaunchDims {
    let blocks = Cover::of(m, k, true).blocks() + Cover::of(k, n, false).blocks();
    let x = if blocks > u32::MAX as u64 { u32::MAX } else { blocks as u32 };
    LaunchDims { grid: Dim3::xy(x, 1), block: Dim3::xy(W as u32, H as u32), shared_bytes: 0 }
}

/// The bits of `|x|` for a finite `x`, 0 for inf and NaN.
#[inline(always)]
fn magnitude(x: f32) -> u32 {
    if x.is_finite() { x.to_bits() & 0x7fff_ffff } else { 0 }
}

/// Raises `out[i]` to the bits of the largest finite `|x|` of row `i` of
/// `A` (`m x k`, row-major) for `i < m`, and `out[m + j]` to that of
/// column `j` of `B` (`k x n`) for `j < n`: one launch on the grid
/// [`maxima_dims`], its first blocks over `A` ([`peaks`] by rows), the
/// rest over `B` (by columns).
///
/// # Safety
/// `a` holds `m k` floats, `b` `k n`, and `out` `m + n` words, which
/// nothing else uses during the pass.
#[inline(always)]
pub unsafe fn maxima<C: ThreadCtx>(
    ctx: &C, (a, b): (*const f32, *const f32), (m, k, n): (u32, u32, u32), out: *mut u32,
) {
    let (of_a, of_b) = (Cover::of(m, k, true), Cover::of(k, n, false));
    let (block, of_a_blocks) = (ctx.block_idx().x as u64, of_a.blocks());
    // SAFETY: forwarded from the caller; `B`'s words follow `A`'s `m`.
    unsafe {
        if block < of_a_blocks {
            peaks(ctx, of_a, block as u32, a, out)
        } else {
            peaks(ctx, of_b, (block - of_a_blocks) as u32, b, out.add(m as usize))
        }
    }
}

/// Block `block` of `cover`'s grid (`x` first) over `src`, raising `out`'s
/// word of each line it reads.
///
/// # Thread mapping
/// Block `(32, 8)`; block `(x, y)` of the cover's grid. By rows: it reads
/// rows `32 y..+32`, columns `32 s x..+32 s` (`s` the span); warp `ty`
/// takes rows `32 y + ty + 8 j` (`j < 4`), lane `tx` columns `tx + 32 i`
/// (`i < s`); the warp reduces each row with shuffles and lane 0 raises
/// its word. By columns: it reads columns `32 x..+32`, rows `32 s y..+32
/// s`; thread `(tx, ty)` takes column `32 x + tx`, rows `ty + 8 i` (`i < 4
/// s`), and raises its word. Each thread has [`AT_ONCE`] spans' loads in
/// flight.
///
/// # Safety
/// `src` holds the cover's `rows * cols` floats and `out` one word per row
/// (by rows) or per column, which nothing else uses during the pass.
#[inline(always)]
pub unsafe fn peaks<C: ThreadCtx>(ctx: &C, cover: Cover, block: u32, src: *const f32, out: *mut u32) {
    let Cover { rows, cols, by_rows, .. } = cover;
    let (r_len, c_len, span) = (rows as usize, cols as usize, cover.span() as usize);
    let src = ctx.global(src, (rows, cols));
    let out = ctx.global_mut(out, if by_rows { rows } else { cols });
    // At least 1: a block of an empty operand's grid reads nothing.
    let gx = cover.grid().0.max(1);
    let (bx, by) = ((block % gx) as usize, (block / gx) as usize);
    let t = ctx.thread_idx();
    let (tx, ty) = (t.x as usize, t.y as usize);
    // The value at `(r, c)` of span `i`, and whether it counts: inside
    // the source and the block's spans. Every load is made, from the
    // nearest element where it would fall outside, so that none sits
    // behind a branch or behind a select of its address: ptxas then
    // issues a batch's 16 loads before their maxima, where it otherwise
    // waits for each load before the next and a thread has one in flight.
    let fetch = |r: usize, c: usize, i: usize| {
        let inside = i < span && r < r_len && c < c_len;
        // SAFETY: inside the source, which has an element (the cover of
        // an empty operand has no blocks).
        (unsafe { src.load(r.min(r_len - 1) * c_len + c.min(c_len - 1)) }, inside)
    };
    // Load `(u, j)` of a batch from span `i`: row `r0 + 8 j + dr (i + u)`,
    // column `c0 + dc (i + u)`. By rows a thread's four rows, a span of
    // 32 columns apart; by columns a span's four rows of the thread's.
    let (r0, dr, c0, dc) =
        if by_rows { (by * W + ty, 0, bx * W * span + tx, W) } else { (by * W * span + ty, 4 * H, bx * W + tx, 0) };
    let mut peak = [0u32; 4];
    for i in (0..span).step_by(AT_ONCE) {
        let mut batch = [(0f32, false); 4 * AT_ONCE];
        unroll!(q < 4 * AT_ONCE, {
            let (u, j) = (q / 4, q % 4);
            batch[q] = fetch(r0 + H * j + dr * (i + u), c0 + dc * (i + u), i + u);
        });
        unroll!(q < 4 * AT_ONCE, {
            let (x, inside) = batch[q];
            peak[q % 4] = peak[q % 4].max(if inside { magnitude(x) } else { 0 });
        });
    }
    if by_rows {
        unroll!(j < W / H, [0, 1, 2, 3], {
            // Non-negative floats: their f32 maximum is their bits' maximum.
            let mut x = f32::from_bits(peak[j]);
            unroll!(s < 32, [16, 8, 4, 2, 1], {
                x = x.max(ctx.shfl_xor_f32(x, s as u32));
            });
            let r = r0 + H * j;
            if tx == 0 && r < r_len && x != 0.0 {
                // SAFETY: r < rows, the length of `out`.
                unsafe { out.raise_to(r, x.to_bits()) };
            }
        });
    } else {
        // The thread's column.
        let x = peak[0].max(peak[1]).max(peak[2].max(peak[3]));
        if c0 < c_len && x != 0 {
            // SAFETY: c0 < cols, the length of `out`.
            unsafe { out.raise_to(c0, x) };
        }
    }
}

/// Where a row's (or column's) peak may lie unscaled: `[2^-8, 2^46]`.
/// Values in `(-1, 1)` and near them, the common case, take the factor 1:
/// the consumers skip their multiplies and the epilogue its unscaling. A
/// product of two peaks then lies in `[2^-16, 2^94]`, and a sum of `K <
/// 2^32` of them under `2^126`: no overflow. An element at least `2^-99`
/// times its row's peak splits into halves whose products with a column's
/// peak are normal (`2^-8 2^-99 2^-11 2^-8 = 2^-126`). Above `2^46` a row is
/// scaled down to peak in `[2^46, 2^47)`, as high as that allows, so that
/// the rest of it stays as far above the subnormals as it can; below
/// `2^-8` it is scaled up to peak in `[2^-8, 2^-7)` (a subnormal peak to
/// `2^-23` or more: `2^126` is the largest factor). A power-of-two factor
/// changes no rounding of normal values: inside the window and out, `C`
/// is the same wherever every half and product of halves is normal.
pub const PEAK_WINDOW: (i32, i32) = (-8, 46);

/// The scale exponent `e` of a row or column whose largest `|x|` has the
/// bits `peak` (0 for a row of zeros): the row is multiplied by `2^-e`
/// ([`PEAK_WINDOW`]), `e` in `[-126, 81]`.
#[inline(always)]
pub fn exponent(peak: u32) -> i32 {
    let biased = (peak >> 23) as i32;
    // floor(log2(peak)); a subnormal is `peak * 2^-149`.
    let p = if biased == 0 { 31 - peak.leading_zeros() as i32 - 149 } else { biased - 127 };
    let (low, high) = PEAK_WINDOW;
    if peak == 0 {
        0
    } else if p > high {
        p - high
    } else if p < low {
        (p - low).max(-126)
    } else {
        0
    }
}

/// `2^e` for `e` in `[-127, 127]` (`2^-127` is subnormal); the factors
/// `2^-e` of [`exponent`] are all normal.
#[inline(always)]
pub fn pow2(e: i32) -> f32 {
    if e >= -126 { f32::from_bits(((e + 127) as u32) << 23) } else { f32::from_bits(0x0040_0000) }
}

/// `x * 2^e` rounded once to f32, for `e` in `[-1022, 1023]` (two
/// [`exponent`]s added lie in `[-252, 162]`): in f64, where `x * 2^e` is exact, then rounded,
/// so that a subnormal or overflowing result takes the rounding FP32's
/// own would.
#[inline(always)]
pub fn unscale(x: f32, e: i32) -> f32 {
    (x as f64 * pow2_f64(e)) as f32
}

/// `2^e` in f64, for `e` in `[-1022, 1023]` (a normal f64), from its bits.
#[inline(always)]
pub fn pow2_f64(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

params_and_entry! {
    /// `gemm_maxima`'s parameters, in order.
    MaximaParams => gemm_maxima(a: *const f32, b: *const f32, m: u32, k: u32, n: u32, out: *mut u32) {
        // SAFETY: the host launcher checked the lengths and the geometry.
        unsafe { maxima(&crate::gpu::Gpu, (a, b), (m, k, n), out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_bring_every_peak_into_the_window() {
        let (low, high) = (2f32.powi(PEAK_WINDOW.0), 2f32.powi(PEAK_WINDOW.1 + 1));
        for peak in
            [f32::MIN_POSITIVE, 1e-39, 1.4e-45, 1e-20, 1e-3, 0.004, 0.4, 0.9999, 1.0, 1.5, 3e10, 3.0e38, f32::MAX]
        {
            let e = exponent(peak.to_bits());
            let scaled = peak * pow2(-e);
            // The smallest subnormals reach 2^-23 (the largest factor is 2^126).
            let floor = if peak < 2f32.powi(-126) { 2f32.powi(-23) } else { low };
            assert!(scaled >= floor && scaled < high, "{peak:e}: e {e}, scaled {scaled:e}");
            assert!(peak < low || peak >= high || e == 0, "{peak:e} is scaled");
            // Below the window a peak lands in its lowest binade.
            assert!(peak >= low || peak < 2f32.powi(-126) || scaled < 2.0 * low, "{peak:e} lands at {scaled:e}");
        }
        // uniform(-1, 1) data: its peaks lie in [0.5, 1), unscaled.
        assert_eq!(exponent(0.5f32.to_bits()), 0);
        assert_eq!(exponent(0), 0);
    }

    /// The peaks of `src` (`rows x cols`) computed here, by rows or by columns.
    fn peaks_here(src: &[f32], (rows, cols): (usize, usize), by_rows: bool) -> std::vec::Vec<u32> {
        let lines = if by_rows { rows } else { cols };
        let line = |w: usize, i: usize| if by_rows { src[w * cols + i] } else { src[i * cols + w] };
        (0..lines)
            .map(|w| (0..if by_rows { cols } else { rows }).map(|i| magnitude(line(w, i))).max().unwrap())
            .collect()
    }

    /// Values with subnormals, infinities and NaNs among them.
    fn values(len: usize, next: &mut impl FnMut() -> u64) -> std::vec::Vec<f32> {
        (0..len)
            .map(|_| match next() % 50 {
                0 => f32::INFINITY,
                1 => f32::NAN,
                2 => -1e-40,
                _ => (next() % 2001) as f32 / 1000.0 - 1.0,
            })
            .collect()
    }

    /// One cover's blocks on the emulator against the peaks computed here:
    /// each operand by rows and by columns, at the span `Cover::of` gives
    /// and at others, spans short of, at and past a multiple of
    /// `AT_ONCE`.
    #[test]
    fn peaks_finds_every_peak_on_any_span() {
        use crate::emu::{SyncMutPtr, SyncPtr, launch};
        use std::vec;
        let mut next = super::super::xorshift(0x2545_f491_4f6c_dd1du64);
        for (rows, cols) in [(1, 1), (70, 45), (33, 1000), (1000, 33), (300, 290)] {
            let src = values(rows * cols, &mut next);
            for by_rows in [true, false] {
                let want = peaks_here(&src, (rows, cols), by_rows);
                let own = Cover::of(rows as u32, cols as u32, by_rows);
                for span in [own.span, 1, 2, 3, 4, 5, 16] {
                    let cover = Cover { span, ..own };
                    let dims = LaunchDims { grid: Dim3::xy(cover.blocks() as u32, 1), ..maxima_dims(1, 1, 1) };
                    let mut out = vec![0u32; want.len()];
                    let (s, o) = (SyncPtr::new(&src), SyncMutPtr::new(&mut out));
                    launch(dims, |ctx| {
                        // SAFETY: `src` holds rows * cols floats, `out` a word per line.
                        unsafe { peaks(ctx, cover, ctx.block_idx().x, s.get(), o.get()) }
                    })
                    .unwrap();
                    assert_eq!(out, want, "{rows}x{cols}, by rows {by_rows}, span {span}");
                }
            }
        }
    }

    /// The launch over both operands: `A`'s row peaks, then `B`'s column
    /// peaks, in one grid.
    #[test]
    fn maxima_finds_both_operands_peaks_in_one_launch() {
        use crate::emu::{SyncMutPtr, SyncPtr, launch};
        use std::{vec, vec::Vec};
        let mut next = super::super::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for (m, k, n) in [(1, 1, 1), (70, 45, 33), (33, 1000, 5), (200, 7, 1100)] {
            let (a, b) = (values(m * k, &mut next), values(k * n, &mut next));
            let want: Vec<u32> = [peaks_here(&a, (m, k), true), peaks_here(&b, (k, n), false)].concat();
            let mut out = vec![0u32; m + n];
            let (pa, pb, o) = (SyncPtr::new(&a), SyncPtr::new(&b), SyncMutPtr::new(&mut out));
            let shape = (m as u32, k as u32, n as u32);
            launch(maxima_dims(shape.0, shape.1, shape.2), |ctx| {
                // SAFETY: `a` holds m k floats, `b` k n, `out` m + n words.
                unsafe { maxima(ctx, (pa.get(), pb.get()), shape, o.get()) }
            })
            .unwrap();
            assert_eq!(out, want, "{m}x{k}x{n}");
        }
    }

    #[test]
    fn maxima_fills_the_gpu_where_the_operand_can() {
        // A 1024^2 operand: 256 blocks of four spans, not 64 of 16.
        assert_eq!(Cover::of(1024, 1024, true).blocks(), 256);
        // Large operands keep the full span: 32 x 512 elements a block.
        assert_eq!(Cover::of(16384, 16384, false).grid(), (512, 32));
        // In between, the span that leaves at least FEW_BLOCKS blocks.
        let blocks = Cover::of(1000, 1500, true).blocks();
        assert!((FEW_BLOCKS..2 * FEW_BLOCKS).contains(&blocks));
        // Both operands in one grid.
        assert_eq!(maxima_dims(1024, 1024, 1024).grid.x, 512);
    }

    #[test]
    fn unscale_rounds_once() {
        // A result in the subnormal range: one rounding of the exact value.
        let x = 1.75f32;
        assert_eq!(unscale(x, -149), f32::from_bits(2));
        assert_eq!(unscale(x, 127 + 127), f32::INFINITY);
        assert_eq!(unscale(3.0, -2), 0.75);
    }
}
