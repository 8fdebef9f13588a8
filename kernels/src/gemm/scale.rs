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
//! The exponents come from [`maxima`], one pass over each operand before
//! the product: the largest finite `|x|` of each row of `A` (or column of
//! `B`), as its bits (the bits of non-negative floats order as integers),
//! raised atomically into words the host zeroed. Non-finite values are left
//! out: the fix-up recomputes their rows and columns
//! ([`super::fixup`]).

use crate::registry::{Step, params_and_entry, utilities};
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The pass in the registry (a utility of step 16).
pub const MAXIMA_STEPS: &[Step] = utilities! {
    op: "gemm";
    /// the largest finite `|x|` of each row (or column) of a GEMM operand, for step 16's exact power-of-two scaling
    maxima => "gemm_maxima" in "gemm/scale.rs", geometry "maxima_dims(rows, cols, by_rows)";
};

/// Block of the pass: 32 columns by 8 rows of threads.
const W: usize = 32;
const H: usize = 8;
/// The most spans a thread reads (by rows, spans of 32 columns; by
/// columns, of 32 rows, four of its own): a block then covers `32 x 512`
/// or `512 x 32` elements and raises each of its words once per thread
/// that read it.
const SPAN: u32 = 16;
/// The fewest blocks the pass gives an operand that has the elements for
/// them (a span of a block, 32 x 32 elements, each): 8 an SM of a 132-SM
/// GPU. At the full span a 1024^2 operand takes 64 blocks, and an H200
/// read it at 150 GB/s (27.9 us, `ncu` in the GEMM run at b74d7a5).
const FEW_BLOCKS: u64 = 1024;

/// Grid and block for a `rows x cols` operand: by rows, blocks of 32 rows
/// by `32 s` columns; by columns, of `32 s` rows by 32 columns. The span
/// `s` is the largest up to 16 that leaves the operand [`FEW_BLOCKS`]
/// blocks, 1 for an operand too small for that; the kernel reads `s` back
/// from the grid.
pub const fn maxima_dims(rows: u32, cols: u32, by_rows: bool) -> LaunchDims {
    let blocks_of_one_span = (rows as u64).div_ceil(W as u64) * (cols as u64).div_ceil(W as u64);
    let wide = blocks_of_one_span / FEW_BLOCKS;
    let span = if wide < 1 {
        1
    } else if wide > SPAN as u64 {
        SPAN
    } else {
        wide as u32
    };
    let long = W as u32 * span;
    let grid = if by_rows {
        Dim3::xy(cols.div_ceil(long), rows.div_ceil(W as u32))
    } else {
        Dim3::xy(cols.div_ceil(W as u32), rows.div_ceil(long))
    };
    LaunchDims { grid, block: Dim3::xy(W as u32, H as u32), shared_bytes: 0 }
}

/// The bits of `|x|` for a finite `x`, 0 for inf and NaN.
#[inline(always)]
fn magnitude(x: f32) -> u32 {
    if x.is_finite() { x.to_bits() & 0x7fff_ffff } else { 0 }
}

/// Raises `out[r]` (by rows) or `out[c]` (by columns) to the bits of the
/// largest finite `|x|` of row `r` (column `c`) of the `rows x cols`
/// row-major `src`.
///
/// # Thread mapping
/// Block `(32, 8)`, grid [`maxima_dims`], whose blocks cover the operand
/// in `s` spans of 32 (`s` read back from the grid: the fewest that reach
/// across it). By rows: block `(x, y)` reads rows `32 y..+32`, columns
/// `32 s x..+32 s`; warp `ty` takes rows `32 y + ty + 8 j` (`j < 4`), lane
/// `tx` columns `tx + 32 i` (`i < s`); the warp reduces each row with
/// shuffles and lane 0 raises its word. By columns: block `(x, y)` reads
/// columns `32 x..+32`, rows `32 s y..+32 s`; thread `(tx, ty)` takes
/// column `32 x + tx`, rows `ty + 8 i` (`i < 4 s`), and raises its word.
///
/// # Safety
/// `src` holds `rows * cols` floats and `out` one word per row (by rows)
/// or per column, which nothing else uses during the pass.
#[inline(always)]
pub unsafe fn maxima<C: ThreadCtx>(ctx: &C, src: *const f32, (rows, cols): (u32, u32), out: *mut u32, by_rows: bool) {
    let (r_len, c_len) = (rows as usize, cols as usize);
    let src = ctx.global(src, (rows, cols));
    let out = ctx.global_mut(out, if by_rows { rows } else { cols });
    let (b, t, grid) = (ctx.block_idx(), ctx.thread_idx(), ctx.grid_dim());
    let (tx, ty) = (t.x as usize, t.y as usize);
    let load = |r: usize, c: usize| {
        // SAFETY: inside the source (checked by the caller of the closure).
        if r < r_len && c < c_len { magnitude(unsafe { src.load(r * c_len + c) }) } else { 0 }
    };
    if by_rows {
        let span = c_len.div_ceil(W * grid.x as usize);
        let (r0, c0) = (b.y as usize * W, b.x as usize * W * span);
        let mut peak = [0u32; W / H];
        for i in 0..span {
            // Four independent loads a step, one per row.
            unroll!(j < W / H, [0, 1, 2, 3], {
                peak[j] = peak[j].max(load(r0 + ty + H * j, c0 + tx + W * i));
            });
        }
        unroll!(j < W / H, [0, 1, 2, 3], {
            // Non-negative floats: their f32 maximum is their bits' maximum.
            let mut x = f32::from_bits(peak[j]);
            unroll!(s < 32, [16, 8, 4, 2, 1], {
                x = x.max(ctx.shfl_xor_f32(x, s as u32));
            });
            let r = r0 + ty + H * j;
            if tx == 0 && r < r_len && x != 0.0 {
                // SAFETY: r < rows, the length of `out`.
                unsafe { out.raise_to(r, x.to_bits()) };
            }
        });
    } else {
        let span = r_len.div_ceil(W * grid.y as usize);
        let (r0, c) = (b.y as usize * W * span, b.x as usize * W + tx);
        let mut peak = [0u32; 4];
        for i in 0..span {
            unroll!(j < 4, [0, 1, 2, 3], {
                peak[j] = peak[j].max(load(r0 + ty + H * (4 * i + j), c));
            });
        }
        let x = peak[0].max(peak[1]).max(peak[2].max(peak[3]));
        if c < c_len && x != 0 {
            // SAFETY: c < cols, the length of `out`.
            unsafe { out.raise_to(c, x) };
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
    MaximaParams => gemm_maxima(src: *const f32, rows: u32, cols: u32, out: *mut u32, by_rows: u32) {
        // SAFETY: the host launcher checked the lengths and the geometry.
        unsafe { maxima(&crate::gpu::Gpu, src, (rows, cols), out, by_rows != 0) }
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

    /// The pass on the emulator against the peaks computed here: each
    /// operand by rows and by columns, on the grid `maxima_dims` gives and
    /// on grids of other spans (the kernel reads its span from the grid),
    /// with subnormals, infinities and NaNs among the values.
    #[test]
    fn maxima_finds_every_peak_on_any_span() {
        use crate::emu::{SyncMutPtr, SyncPtr, launch};
        use std::{vec, vec::Vec};
        let mut next = super::super::xorshift(0x2545_f491_4f6c_dd1du64);
        for (rows, cols) in [(1, 1), (70, 45), (33, 1000), (1000, 33), (300, 290)] {
            let src: Vec<f32> = (0..rows * cols)
                .map(|_| match next() % 50 {
                    0 => f32::INFINITY,
                    1 => f32::NAN,
                    2 => -1e-40,
                    _ => (next() % 2001) as f32 / 1000.0 - 1.0,
                })
                .collect();
            for by_rows in [true, false] {
                let words = if by_rows { rows } else { cols };
                let want: Vec<u32> = (0..words)
                    .map(|w| {
                        let line = |i: usize| if by_rows { src[w * cols + i] } else { src[i * cols + w] };
                        (0..if by_rows { cols } else { rows }).map(|i| magnitude(line(i))).max().unwrap()
                    })
                    .collect();
                let own = maxima_dims(rows as u32, cols as u32, by_rows);
                for span in [0, 1, 2, 3, 16] {
                    let mut dims = own;
                    if span > 0 {
                        let long = (W * span) as u32;
                        dims.grid = if by_rows {
                            Dim3::xy((cols as u32).div_ceil(long), (rows as u32).div_ceil(W as u32))
                        } else {
                            Dim3::xy((cols as u32).div_ceil(W as u32), (rows as u32).div_ceil(long))
                        };
                    }
                    let mut out = vec![0u32; words];
                    let (s, o) = (SyncPtr::new(&src), SyncMutPtr::new(&mut out));
                    launch(dims, |ctx| {
                        // SAFETY: `src` holds rows * cols floats, `out` a word per line.
                        unsafe { maxima(ctx, s.get(), (rows as u32, cols as u32), o.get(), by_rows) }
                    })
                    .unwrap();
                    assert_eq!(out, want, "{rows}x{cols}, by rows {by_rows}, span {span} ({:?})", dims.grid);
                }
            }
        }
    }

    #[test]
    fn maxima_fills_the_gpu_where_the_operand_can() {
        // A 1024^2 operand: 1024 blocks of one span, not 64 of 16.
        let d = maxima_dims(1024, 1024, true);
        assert_eq!(d.grid.x * d.grid.y, 1024);
        // Large operands keep the full span: 32 x 512 elements a block.
        let d = maxima_dims(16384, 16384, false);
        assert_eq!((d.grid.x, d.grid.y), (512, 32));
        // In between, the span that leaves at least FEW_BLOCKS blocks.
        let d = maxima_dims(4096, 2048, true);
        assert!(d.grid.x * d.grid.y >= FEW_BLOCKS as u32 && d.grid.x * d.grid.y < 2 * FEW_BLOCKS as u32);
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
