//! What a GEMM launch does, decided on the host for the GPU and the
//! emulator alike: the checks and which step runs for a shape ([`Plan`]),
//! and for a TMA step, where its operands live in the workspace
//! ([`TmaLayout`]) and the two operand passes that write them ([`passes`]).

use super::{AlphaBeta, GemmShape, Variant};
use crate::{GridLimits, LaunchDims, Result};

/// What a GEMM launch runs, once its buffers are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// `m = 0` or `n = 0` (`C` has no element), or `k = 0` with `beta ==
    /// 1` (`C = C`): nothing.
    Nothing,
    /// `k = 0`: `C = beta * C`, step 1 with `alpha = 0` and no terms (its
    /// epilogue writes `0` where `beta == 0`, without reading `C`). Every
    /// module has step 1, and the TMA steps cannot describe a 0-wide operand.
    Scale(LaunchDims),
    /// The product, by the version asked for, or by step 7 where that
    /// version cannot give FP32's result ([`fp32_for`]).
    Product(Variant, LaunchDims),
}

/// The version that computes `C = alpha * A * B + beta * C` for `variant`:
/// itself, but for a 3xTF32 TMA step (13, 15, 16) with a non-finite
/// `alpha`, which step 7 ([`Variant::DoubleBuffered`], FP32 FMAs, in every
/// module) computes instead. Such a step's fix-up (`gemm_fixup`) rebuilds
/// the elements of inputs holding an inf or NaN from the product's value
/// `alpha * acc + beta * C0`, taking it to be non-finite only where
/// `beta * C0` is; with `alpha` inf or NaN every element is non-finite, so
/// `beta * C0` is lost (an inf row of `A` would come out NaN where FP32
/// gives inf). Every element of such a product is inf or NaN, and step 7's
/// are FP32's.
pub(crate) fn fp32_for(variant: Variant, scalars: AlphaBeta) -> Variant {
    let g = variant.geometry();
    if g.tma && g.precision.is_3xtf32() && !scalars.alpha.is_finite() { Variant::DoubleBuffered } else { variant }
}

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns what to launch on a GPU of `sm_count` SMs (a step that splits
/// `K` gets its runs as the grid's `z`, [`coalesce_kernels::gemm::split_k`]).
/// Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant, shape: GemmShape, lens: (usize, usize, usize), scalars: AlphaBeta, limits: &GridLimits,
    sm_count: u32,
) -> Result<Plan> {
    shape.a().check_len("A", lens.0)?;
    shape.b().check_len("B", lens.1)?;
    shape.c().check_len("C", lens.2)?;
    if shape.c().is_empty() || (shape.k() == 0 && scalars.beta == 1.0) {
        return Ok(Plan::Nothing);
    }
    let (m, n) = (shape.m() as u32, shape.n() as u32);
    if shape.k() == 0 {
        let dims = Variant::Naive.launch_dims(m, n);
        limits.check(Variant::Naive.entry_point(), &shape, dims)?;
        return Ok(Plan::Scale(dims));
    }
    let variant = fp32_for(variant, scalars);
    let mut dims = variant.launch_dims(m, n);
    // The passes over `K` of a TMA step's tile (tiles of `TMA_BK`).
    let k_tiles = shape.k().div_ceil(coalesce_kernels::gemm::TMA_BK as usize).min(u32::MAX as usize) as u32;
    if variant.geometry().splits_k {
        dims.grid.z =
            coalesce_kernels::gemm::split_k::splits_for(dims.grid.x.saturating_mul(dims.grid.y), k_tiles, sm_count);
    }
    // The grid of one block a tile is what the limits judge, walking or not.
    limits.check(variant.entry_point(), &shape, dims)?;
    // More tiles than SMs, unsplit, few passes a tile: one block an SM, each
    // walking its tiles, so that no tile waits for a block to start and fill
    // its pipeline.
    if dims.grid.z == 1 && variant.geometry().walks(dims.grid.x.saturating_mul(dims.grid.y), k_tiles, sm_count) {
        dims.grid = coalesce_kernels::Dim3::xy(sm_count.max(1), 1);
    }
    Ok(Plan::Product(variant, dims))
}

/// The scalars of [`Plan::Scale`]: `alpha = 0`, so that the (empty) product
/// adds `+0` whatever `alpha` is, as BLAS's `C = beta * C`.
pub(super) fn scale_only(s: AlphaBeta) -> AlphaBeta {
    AlphaBeta { alpha: 0.0, beta: s.beta }
}

/// A 2D f32 tensor as a TMA step reads it: `rows` rows of `cols` values,
/// `row_bytes` apart, at device address `base`; copied `box_rows x
/// box_cols` at a time into shared memory with the 128-byte swizzle, and
/// rounded to TF32 by the copy where `tf32` (element type TF32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tensor2d {
    pub base: u64,
    pub cols: u64,
    pub rows: u64,
    pub row_bytes: u64,
    pub box_cols: u32,
    pub box_rows: u32,
    pub tf32: bool,
}

/// Where a TMA step's operands live in its workspace: its tensor maps at
/// the start (`A`'s, then `B^T`'s), then `A` (`m` rows of `kp` floats) and
/// `B^T` (`n` rows of `kp`): rounded to TF32, or, for 3xTF32, each as two
/// TF32 halves (`hi`, then `lo`), followed by the marks of the non-finite
/// inputs (`1 + m + n` words, see `gemm::fixup`). `kp` is `k` rounded up to 32: a tensor
/// map needs rows 16-byte aligned, and rows 128-byte aligned make each
/// 128-byte row of a box one L2 line instead of two (at 4097^3, rounding to
/// 4 measured 64 TFLOP/s against 99 at 4095^3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TmaLayout {
    pub(crate) kp: usize,
    /// Arrays per operand: 1, or 2 (the halves).
    pub(crate) halves: usize,
    /// Byte offsets of `A`'s and `B^T`'s first array, of the marks (3xTF32
    /// only: none, `None`), and the total.
    pub(crate) a: usize,
    pub(crate) bt: usize,
    pub(crate) marks: Option<usize>,
    pub(crate) bytes: usize,
}

impl TmaLayout {
    pub(crate) fn new(variant: Variant, shape: GemmShape) -> TmaLayout {
        let kp = shape.k().next_multiple_of(32);
        let halves = if variant.geometry().precision.is_3xtf32() { 2 } else { 1 };
        let a = 2 * halves * size_of::<coalesce_kernels::TensorMap>();
        let bt = a + 4 * halves * shape.m() * kp;
        let end = bt + 4 * halves * shape.n() * kp;
        if halves == 2 {
            TmaLayout { kp, halves, a, bt, marks: Some(end), bytes: end + 4 * (1 + shape.m() + shape.n()) }
        } else {
            TmaLayout { kp, halves, a, bt, marks: None, bytes: end }
        }
    }
    /// The marks' three parts with the workspace at `base`: the word raised
    /// for any non-finite input, `A`'s rows, `B`'s columns (0s without marks).
    pub(crate) fn marks_at(&self, base: u64, shape: GemmShape) -> (u64, u64, u64) {
        self.marks.map_or((0, 0, 0), |at| {
            let any = base + at as u64;
            (any, any + 4, any + 4 + 4 * shape.m() as u64)
        })
    }
    /// The addresses of `A`'s maps and of `B^T`'s, with the workspace at
    /// `base`: what the product takes as `a` and `b`.
    pub(crate) fn maps_at(&self, base: u64) -> (u64, u64) {
        (base, base + (self.halves * size_of::<coalesce_kernels::TensorMap>()) as u64)
    }
    /// Byte offset of array `half` of the operand whose first is at `at`,
    /// `rows` rows long.
    fn half(&self, at: usize, rows: usize, half: usize) -> usize {
        at + 4 * half * rows * self.kp
    }
    /// The arrays' shapes with the workspace at `base`, in the maps' order
    /// (`A`'s halves, then `B^T`'s): boxes of 32 of `K` by the step's tile.
    pub(crate) fn tensors(&self, variant: Variant, shape: GemmShape, base: u64) -> Vec<Tensor2d> {
        let (bm, bn) = variant.block_tile();
        let tensor = |at: usize, rows: usize, box_rows: u32| Tensor2d {
            base: base + at as u64,
            cols: shape.k() as u64,
            rows: rows as u64,
            row_bytes: 4 * self.kp as u64,
            box_cols: coalesce_kernels::gemm::TMA_BK,
            box_rows,
            tf32: false,
        };
        let (m, n) = (shape.m(), shape.n());
        let a = (0..self.halves).map(|h| tensor(self.half(self.a, m, h), m, bm));
        a.chain((0..self.halves).map(|h| tensor(self.half(self.bt, n, h), n, bn))).collect()
    }
}

/// One `gemm_pack` launch: the source, its shape, the destination arrays,
/// the flags, and where the two maps `words` go (0: nowhere).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pass {
    pub(crate) src: u64,
    pub(crate) shape: coalesce_kernels::gemm::pack::PackShape,
    pub(crate) hi: u64,
    pub(crate) lo: u64,
    pub(crate) maps: u64,
    pub(crate) words: [coalesce_kernels::TensorMap; 2],
    /// Where a split pass marks non-finite values (`Marks`): the word for
    /// any, and the operand's lines (0, 0 when not split).
    pub(crate) any: u64,
    pub(crate) lines: u64,
    /// Where a scaled pass (`PACK_SCALE`) reads its rows' peaks (0: not scaled).
    pub(crate) peaks: u64,
}

/// One `gemm_maxima` launch: the peaks of `src`'s rows (`by_rows`) or
/// columns raised into `out`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Maxima {
    pub(crate) src: u64,
    pub(crate) rows: u32,
    pub(crate) cols: u32,
    pub(crate) out: u64,
    pub(crate) by_rows: bool,
}

/// The two passes of a TMA step, `A` then `B`, from the arrays and maps of
/// `layout` (`maps`: each array's address and tensor map, in the maps'
/// order). With one array per operand, `A`'s pass writes both maps; with
/// halves, each pass writes its operand's two.
pub(crate) fn passes(
    layout: &TmaLayout, shape: GemmShape, base: u64, (a, b): (u64, u64), maps: &[(u64, coalesce_kernels::TensorMap)],
) -> [Pass; 2] {
    use coalesce_kernels::gemm::pack::{PACK_SPLIT, PACK_TRANSPOSE, PackShape};
    let (m, n, k, kp) = (shape.m() as u32, shape.n() as u32, shape.k() as u32, layout.kp as u32);
    let split = if layout.halves == 2 { PACK_SPLIT } else { 0 };
    let h = layout.halves;
    let (a_arrays, b_arrays) = (&maps[..h], &maps[h..]);
    let lo = |arrays: &[(u64, coalesce_kernels::TensorMap)]| arrays.get(1).map_or(0, |x| x.0);
    let words = |i: usize, j: usize| [maps[i].1, maps[j].1];
    let (a_maps, b_maps) = layout.maps_at(base);
    let (a_words, b_words, b_maps) =
        if h == 2 { (words(0, 1), words(2, 3), b_maps) } else { (words(0, 1), words(0, 1), 0) };
    let (any, a_lines, b_lines) = layout.marks_at(base, shape);
    [
        Pass {
            src: a,
            shape: PackShape { rows: m, cols: k, stride: kp, flags: split },
            hi: a_arrays[0].0,
            lo: lo(a_arrays),
            maps: a_maps,
            words: a_words,
            any,
            lines: a_lines,
            peaks: 0,
        },
        Pass {
            src: b,
            shape: PackShape { rows: k, cols: n, stride: kp, flags: split | PACK_TRANSPOSE },
            hi: b_arrays[0].0,
            lo: lo(b_arrays),
            maps: b_maps,
            words: b_words,
            any,
            lines: b_lines,
            peaks: 0,
        },
    ]
}

/// Where a direct step (steps 14-16, [`coalesce_kernels::gemm::Geometry::direct`])
/// finds its operands: its two tensor maps at the start of the workspace
/// (`A`'s, then `B`'s); for 3xTF32 (steps 15 and 16), the marks of the
/// non-finite inputs right after them (`1 + m + n` words, see
/// `gemm::fixup`), and for step 16 the peaks of `A`'s rows and `B`'s
/// columns after them (`m + n` words more, `gemm::scale`); for step 16, `A`'s TF32 halves (`m` rows of `kp` floats
/// each, `A_hi`'s then `A_lo`'s), which its split pass writes; and, for
/// an operand whose rows a tensor map cannot describe (not 16-byte aligned:
/// `K`, or `N`, not a multiple of 4, or a base not 16-byte aligned), a copy
/// of it with its rows padded to a multiple of 32 floats (`gemm_pack`
/// without transposing or rounding: rows of `A`, `kp` floats long, then
/// rows of `B`, `np` long). Without a copy the maps describe the matrices
/// themselves, and the one pass left writes the maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirectLayout {
    /// Byte offsets of the copies of `A` and `B`, `None` for an operand
    /// read in place.
    a: Option<usize>,
    b: Option<usize>,
    /// Byte offset of the marks (3xTF32 only).
    pub(crate) marks: Option<usize>,
    /// Byte offset of the partial products of a split `K` (`splits`
    /// slices of `m * n` floats), `None` unsplit.
    pub(crate) parts: Option<usize>,
    pub(crate) splits: u32,
    kp: usize,
    np: usize,
    /// Rows of `A` in one box: the step's tile.
    a_box_rows: u32,
    /// Whether the copies round to TF32 (a TF32 step) or copy f32 (3xTF32).
    tf32: bool,
    /// Whether `A`'s copy is its TF32 halves (step 16): `m` rows of `A_hi`,
    /// then `m` of `A_lo`, made by a split pass that marks `A`'s rows.
    a_halves: bool,
    /// Whether the operands are scaled (step 16): the peaks follow the
    /// marks, and `A`'s pass scales its rows.
    scaled: bool,
    pub(crate) bytes: usize,
}

impl DirectLayout {
    /// The layout of `variant` for `shape` with `A` at device address `a`
    /// and `B` at `b`, `K` in `splits` runs.
    pub(crate) fn new(variant: Variant, shape: GemmShape, (a, b): (u64, u64), splits: u32) -> DirectLayout {
        let (m, n, k) = (shape.m(), shape.n(), shape.k());
        let split = variant.geometry().precision.is_3xtf32();
        let in_place = |base: u64, cols: usize| base.is_multiple_of(16) && cols.is_multiple_of(4);
        let (kp, np) = (k.next_multiple_of(32), n.next_multiple_of(32));
        let mut bytes = 2 * size_of::<coalesce_kernels::TensorMap>();
        let (a_halves, scaled) = (variant.geometry().a_halves, variant.geometry().scaled);
        let marks = split.then(|| {
            debug_assert_eq!(bytes, coalesce_kernels::gemm::DX3_MARKS_OFFSET);
            let at = bytes;
            bytes = (bytes + 4 * Self::marks_words(scaled, shape)).next_multiple_of(256);
            at
        });
        // Each array starts 256-byte aligned, as the pool's allocations do.
        let mut take = |copy: bool, len: usize| {
            copy.then(|| {
                let at = bytes.next_multiple_of(256);
                bytes = at + 4 * len;
                at
            })
        };
        let a = take(a_halves || !in_place(a, k), if a_halves { 2 * m * kp } else { m * kp });
        let b = take(!in_place(b, n), k * np);
        let parts = take(splits > 1, splits as usize * m * n);
        let (a_box_rows, tf32) = (variant.block_tile().0, !split);
        DirectLayout { a, b, marks, parts, splits, kp, np, a_box_rows, tf32, a_halves, scaled, bytes }
    }

    /// The word raised for any non-finite input, with the workspace at
    /// `base` (the rows' and columns' marks follow it), for a 3xTF32 step.
    pub(crate) fn marks_at(&self, base: u64) -> Option<u64> {
        self.marks.map(|at| base + at as u64)
    }

    /// Words from [`Self::marks_at`] on that the host zeroes: the `1 + m +
    /// n` marks, and for a scaled step the `m + n` peaks after them.
    fn marks_words(scaled: bool, shape: GemmShape) -> usize {
        let (m, n) = (shape.m(), shape.n());
        1 + m + n + if scaled { m + n } else { 0 }
    }

    /// The marks' address and words to zero, with the workspace at `base`
    /// (3xTF32 only).
    pub(crate) fn marks_to_zero(&self, base: u64, shape: GemmShape) -> Option<(u64, usize)> {
        self.marks_at(base).map(|at| (at, Self::marks_words(self.scaled, shape)))
    }

    /// Where the peaks of `A`'s rows and of `B`'s columns lie, with the
    /// workspace at `base` (a scaled step only).
    fn peaks_at(&self, base: u64, shape: GemmShape) -> Option<(u64, u64)> {
        let rows = self.marks_at(base).filter(|_| self.scaled)? + 4 * (1 + shape.m() + shape.n()) as u64;
        Some((rows, rows + 4 * shape.m() as u64))
    }

    /// The `gemm_maxima` launches before the passes (a scaled step only): the
    /// peaks of `A`'s rows, then of `B`'s columns.
    pub(crate) fn maxima(&self, shape: GemmShape, base: u64, (a, b): (u64, u64)) -> Vec<Maxima> {
        let (m, n, k) = (shape.m() as u32, shape.n() as u32, shape.k() as u32);
        self.peaks_at(base, shape).map_or_else(Vec::new, |(rows, cols)| {
            vec![
                Maxima { src: a, rows: m, cols: k, out: rows, by_rows: true },
                Maxima { src: b, rows: k, cols: n, out: cols, by_rows: false },
            ]
        })
    }

    /// Where the partial products of a split `K` lie, with the workspace
    /// at `base` (`None` unsplit).
    pub(crate) fn parts_at(&self, base: u64) -> Option<u64> {
        self.parts.map(|at| base + at as u64)
    }

    /// Where the product writes, and with which scalars, with the
    /// workspace at `base`: `C` (at `c`) with `scalars`; or, split, the
    /// unscaled partial products ([`AlphaBeta::PRODUCT`]), which
    /// `gemm_sum_splits` adds up as `alpha * sum + beta * C`.
    pub(crate) fn product_target(&self, base: u64, c: u64, scalars: AlphaBeta) -> (u64, AlphaBeta) {
        match self.parts_at(base) {
            Some(parts) => (parts, AlphaBeta::PRODUCT),
            None => (c, scalars),
        }
    }

    /// The addresses of `A`'s map and of `B`'s, with the workspace at `base`.
    pub(crate) fn maps_at(&self, base: u64) -> (u64, u64) {
        (base, base + size_of::<coalesce_kernels::TensorMap>() as u64)
    }

    /// The tensors the maps describe, `A`'s then `B`'s: the matrices at `a`
    /// and `b`, or their copies in the workspace at `base`; element type
    /// TF32 for a TF32 step, f32 for 3xTF32; boxes of 32 of `K` by the
    /// tile's rows of `A`, and of 32 columns by 32 rows of `B`.
    pub(crate) fn tensors(&self, shape: GemmShape, base: u64, (a, b): (u64, u64)) -> [Tensor2d; 2] {
        use coalesce_kernels::gemm::{DIRECT_B_BOX, DIRECT_BK};
        let (m, n, k) = (shape.m() as u64, shape.n() as u64, shape.k() as u64);
        let at = |copy: Option<usize>, src: u64| copy.map_or(src, |o| base + o as u64);
        let row = |copy: Option<usize>, padded: usize, cols: u64| 4 * copy.map_or(cols, |_| padded as u64);
        [
            Tensor2d {
                base: at(self.a, a),
                cols: k,
                rows: if self.a_halves { 2 * m } else { m },
                row_bytes: row(self.a, self.kp, k),
                box_cols: DIRECT_BK,
                box_rows: self.a_box_rows,
                tf32: self.tf32,
            },
            Tensor2d {
                base: at(self.b, b),
                cols: n,
                rows: k,
                row_bytes: row(self.b, self.np, n),
                box_cols: DIRECT_B_BOX,
                box_rows: DIRECT_BK,
                tf32: self.tf32,
            },
        ]
    }

    /// The passes before the product: a copy of each operand that needs one
    /// (the first also writing the two maps), or, with none, a pass over
    /// no elements that only writes the maps (`maps`: the two encoded maps).
    pub(crate) fn passes(
        &self, shape: GemmShape, base: u64, (a, b): (u64, u64), maps: [coalesce_kernels::TensorMap; 2],
    ) -> Vec<Pass> {
        use coalesce_kernels::gemm::pack::{PACK_KEEP, PACK_SCALE, PACK_SPLIT, PackShape};
        let (m, n, k) = (shape.m() as u32, shape.n() as u32, shape.k() as u32);
        let pass = |src: u64, shape: PackShape, dst: u64| Pass {
            src,
            shape,
            hi: dst,
            lo: 0,
            maps: 0,
            words: maps,
            any: 0,
            lines: 0,
            peaks: 0,
        };
        let a_pass = |o: usize| {
            let dst = base + o as u64;
            let flags = match (self.a_halves, self.scaled) {
                (true, true) => PACK_SPLIT | PACK_SCALE,
                (true, false) => PACK_SPLIT,
                _ => PACK_KEEP,
            };
            let copy = pass(a, PackShape { rows: m, cols: k, stride: self.kp as u32, flags }, dst);
            if !self.a_halves {
                return copy;
            }
            // A's halves, A_lo's rows after A_hi's, scaled by its rows'
            // peaks; the pass marks A's rows (the words after the first of
            // the marks).
            let any = self.marks_at(base).unwrap_or(0);
            let peaks = self.peaks_at(base, shape).map_or(0, |p| p.0);
            Pass { lo: dst + 4 * u64::from(m) * self.kp as u64, any, lines: any + 4, peaks, ..copy }
        };
        let mut out: Vec<Pass> = [
            self.a.map(a_pass),
            self.b.map(|o| {
                pass(b, PackShape { rows: k, cols: n, stride: self.np as u32, flags: PACK_KEEP }, base + o as u64)
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if out.is_empty() {
            out.push(pass(a, PackShape { rows: 0, cols: 0, stride: 0, flags: 0 }, 0));
        }
        out[0].maps = self.maps_at(base).0;
        out
    }
}
