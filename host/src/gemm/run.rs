//! A TMA step's launches, derived once, for the GPU and the emulator, from
//! what the step declares ([`Feed`]): the workspace, the tensor maps
//! encoded there, the words zeroed and the kernels launched in order
//! ([`Launch`]), which a [`Device`] carries out.
//!
//! The workspace, each part 256-byte aligned as the pool's allocations are:
//! the tensor maps, `A`'s then `B`'s; for 3xTF32 and Ozaki the marks of the
//! non-finite inputs (`1 + m + n` words, `gemm::fixup`), where a direct
//! step's product raises them ([`DX3_MARKS_OFFSET`]), and for a scaled
//! step the peaks of `A`'s rows and `B`'s columns (`m + n` words,
//! `gemm::scale`); the operands' copies, `A`'s then `B`'s, rows of `K`
//! (of `N` for `B` not transposed) rounded up to 32 floats, so that a
//! box's 128-byte rows are L2 lines (at 4097^3, rounding to 4 measured 64
//! TFLOP/s against 99 at 4095^3), or for Ozaki their residues, a plane of
//! rows of `K` bytes (rounded up to 128) a modulus; and the partial
//! products of a split `K`, `S` slices of `m n` floats.

use super::{AlphaBeta, GemmShape, Problem, Variant};
use crate::{GridLimits, LaunchDims, Result};
use coalesce_kernels::TensorMap;
use coalesce_kernels::gemm::ozaki::LADDER_MODULI;
use coalesce_kernels::gemm::pack::{PACK_KEEP, PACK_RESIDUES, PACK_SCALE, PACK_SPLIT, PACK_TRANSPOSE, PackShape};
use coalesce_kernels::gemm::{DIRECT_B_BOX, DIRECT_BK, DX3_MARKS_OFFSET, Feed, Operand, Precision, TMA_BK};
use coalesce_kernels::gemm::{OZ_SCRATCH_WORDS, oz_scratch_offset};

/// A tensor map's bytes.
const MAP: u64 = size_of::<TensorMap>() as u64;

/// A 2D f32 tensor as a TMA step reads it: `dims` `[cols, rows]`, rows
/// `row_bytes` apart, at `base`, copied in boxes of `boxed` `[cols, rows]`
/// (`crate::gpu::encode_tiled_2d` says more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tensor2d {
    pub base: u64,
    pub dims: [u64; 2],
    pub row_bytes: u64,
    pub boxed: [u32; 2],
    pub tf32: bool,
}

/// One kernel of a TMA product's sequence, its addresses absolute.
// A pass carries its two 128-byte maps by value, as `gemm_pack` takes
// them; a sequence is at most six launches, so the size is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Launch {
    /// `gemm_maxima`: the peaks of `A`'s `m` rows, then of `B`'s `n`
    /// columns, raised into the `m + n` words at `out`.
    Maxima { a: u64, b: u64, p: Problem, out: u64 },
    /// `gemm_pack`: `src` copied into `to`, its halves `hi` and `lo` (0:
    /// none), as `shape` says; the pair of encoded maps written at
    /// `maps.0` (0: none); a split pass marks the non-finite values at
    /// `marks`' `any` and the operand's `lines`, a scaled one reads its rows'
    /// peaks at its `peaks` (0s: none).
    Pack { src: u64, shape: PackShape, to: [u64; 2], maps: (u64, [TensorMap; 2]), marks: [u64; 3] },
    /// The step itself on its grid: `a` and `b` its tensor maps, `c` where
    /// it writes.
    Product { variant: Variant, dims: LaunchDims, a: u64, b: u64, c: u64, p: Problem },
    /// `gemm_sum_splits`: the `splits` partial products at `parts` into `c`
    /// as `alpha * sum + beta * C`.
    SumSplits { parts: u64, c: u64, p: Problem, splits: u32 },
    /// `gemm_fixup`: the rows and columns of `C` whose inputs the marks at
    /// `marks` name as not finite, recomputed in FP32.
    Fixup { a: u64, b: u64, c: u64, p: Problem, marks: u64 },
}

impl Launch {
    /// Its entry point and launch dimensions.
    pub(crate) fn kernel(&self) -> (&'static str, LaunchDims) {
        use coalesce_kernels::gemm::split_k::sum_splits_dims;
        use coalesce_kernels::gemm::{fixup::fixup_dims, pack::pack_dims, pack::pack_entry, scale::maxima_dims};
        match *self {
            Launch::Maxima { p, .. } => ("gemm_maxima", maxima_dims(p.m, p.k, p.n)),
            Launch::Pack { shape, .. } => (pack_entry(shape.flags), pack_dims(shape.rows, shape.cols)),
            Launch::Product { variant, dims, .. } => (variant.entry_point(), dims),
            Launch::SumSplits { p, .. } => ("gemm_sum_splits", sum_splits_dims(p.m, p.n)),
            Launch::Fixup { p, .. } => ("gemm_fixup", fixup_dims(p.m, p.n)),
        }
    }
}

/// One TMA product laid out in a workspace of `bytes` at `base`: what its
/// maps describe, in their order; the marks and peaks it zeroes first; its
/// launches in order, their passes' maps not yet encoded.
struct Sequence {
    base: u64,
    bytes: usize,
    tensors: Vec<Tensor2d>,
    zero: Option<(u64, usize)>,
    launches: Vec<Launch>,
}

impl Sequence {
    fn new(
        variant: Variant, feed: Feed, shape: GemmShape, scalars: AlphaBeta, dims: LaunchDims,
        (a, b, c): (u64, u64, u64), base: u64,
    ) -> Sequence {
        let precision = variant.geometry().precision;
        let (split, marking) = (precision.is_3xtf32(), precision.fixes_up());
        let (m, n, k) = (shape.m() as u64, shape.n() as u64, shape.k() as u64);
        let (kp, np) = (k.next_multiple_of(32), n.next_multiple_of(32));
        let (bm, bn) = variant.block_tile();
        let maps_of = |o: Operand| if split && o == Operand::KMajor { 2 } else { 1 };
        let mut bytes = (maps_of(feed.a) + maps_of(feed.b)) as u64 * MAP;
        let mut take = |len: u64| {
            let at = bytes.next_multiple_of(256);
            bytes = at + 4 * len;
            base + at
        };
        let (marked, peaked) = (1 + m + n, if feed.scaled { m + n } else { 0 });
        let marks = marking.then(|| take(marked + peaked));
        debug_assert!(feed.a == Operand::KMajor || marks.is_none_or(|at| at == base + DX3_MARKS_OFFSET as u64));
        let peaks = marks.filter(|_| feed.scaled).map_or(0, |at| at + 4 * marked);
        // Step 17's blocks keep their residues after the marks and peaks.
        let ozaki = matches!(precision, Precision::Ozaki { .. });
        let scratch = ozaki.then(|| take(u64::from(dims.grid.x) * u64::from(dims.grid.y) * OZ_SCRATCH_WORDS as u64));
        debug_assert!(scratch.is_none_or(|at| at == base + oz_scratch_offset(m as usize, n as usize) as u64));

        let p = shape.problem(scalars);
        let mut launches = Vec::new();
        if feed.scaled {
            launches.push(Launch::Maxima { a, b, p, out: peaks });
        }
        let (mut tensors, mut passes) = (Vec::new(), Vec::new());
        for (is_b, src, operand) in [(false, a, feed.a), (true, b, feed.b)] {
            // The source's shape; a split or residue pass marks its lines
            // after the first mark, `A`'s rows then `B`'s columns, and
            // reads their peaks, `A`'s then `B`'s.
            let (rows, cols) = if is_b { (k, n) } else { (m, k) };
            let after_a = if is_b { 4 * m } else { 0 };
            let marked_lines = marks.map_or(0, |at| at + 4 + after_a);
            let mut pack = |stride: u64, flags: u32, hi: u64, lo: u64| {
                let scaled = if flags & PACK_SCALE != 0 { peaks + after_a } else { 0 };
                let marking = flags & (PACK_SPLIT | PACK_RESIDUES) != 0;
                let marks = if marking { [marks.unwrap_or(0), marked_lines, scaled] } else { [0; 3] };
                let (rows, cols, stride) = (rows as u32, cols as u32, stride as u32);
                passes.push((src, PackShape { rows, cols, stride, flags }, [hi, lo], marks));
            };
            let tf32 = !split && operand == Operand::AsItIs;
            let tensor = |base, dims, row: u64, boxed| Tensor2d { base, dims, row_bytes: 4 * row, boxed, tf32 };
            // The rows of a K-major copy, and of its box.
            let (lines, box_rows, transpose) = if is_b { (n, bn, PACK_TRANSPOSE) } else { (m, bm, 0) };
            match operand {
                // `K`-major: `A` as it is, `B` transposed; halves one
                // after the other, a map each.
                Operand::KMajor => {
                    let halves = if split { 2 } else { 1 };
                    let hi = take(halves as u64 * lines * kp);
                    let lo = if split { hi + 4 * lines * kp } else { 0 };
                    pack(kp, if split { PACK_SPLIT } else { 0 } | transpose, hi, lo);
                    for half in [hi, lo].into_iter().take(halves) {
                        tensors.push(tensor(half, [k, lines], kp, [TMA_BK, box_rows]));
                    }
                }
                Operand::Stacked => {
                    let hi = take(2 * m * kp);
                    let scale = if feed.scaled { PACK_SCALE } else { 0 };
                    pack(kp, PACK_SPLIT | scale, hi, hi + 4 * m * kp);
                    tensors.push(tensor(hi, [k, 2 * m], kp, [DIRECT_BK, bm]));
                }
                // One plane of bytes a modulus, rows of `K` rounded up to
                // 128 bytes, counted by the map as 4-byte elements.
                Operand::Residues => {
                    let (row, planes) = (k.next_multiple_of(128), LADDER_MODULI as u64 * lines);
                    let at = take(planes * row / 4);
                    pack(row, PACK_RESIDUES | PACK_SCALE | transpose, at, 0);
                    tensors.push(tensor(at, [k.div_ceil(4), planes], row / 4, [TMA_BK, box_rows]));
                }
                Operand::AsItIs => {
                    let stride = if is_b { np } else { kp };
                    let boxed = if is_b { [DIRECT_B_BOX, DIRECT_BK] } else { [DIRECT_BK, bm] };
                    if src.is_multiple_of(16) && cols.is_multiple_of(4) {
                        tensors.push(tensor(src, [cols, rows], cols, boxed));
                    } else {
                        let copy = take(rows * stride);
                        pack(stride, PACK_KEEP, copy, 0);
                        tensors.push(tensor(copy, [cols, rows], stride, boxed));
                    }
                }
            }
        }
        // Each pass writes a pair of maps, in order, until none is left; a
        // pass over no elements writes them where no operand is copied.
        let pairs = tensors.len().div_ceil(2);
        let none = (a, PackShape { rows: 0, cols: 0, stride: 0, flags: 0 }, [0; 2], [0; 3]);
        passes.resize(passes.len().max(pairs), none);
        launches.extend(passes.into_iter().enumerate().map(|(i, (src, shape, to, marks))| {
            let maps = if i < pairs { base + 2 * MAP * i as u64 } else { 0 };
            Launch::Pack { src, shape, to, maps: (maps, [TensorMap([0; 16]); 2]), marks }
        }));

        let splits = dims.grid.z;
        let parts = (splits > 1).then(|| take(u64::from(splits) * m * n));
        let (into, product) = parts.map_or((c, p), |parts| (parts, shape.problem(AlphaBeta::PRODUCT)));
        let b_maps = base + maps_of(feed.a) as u64 * MAP;
        launches.push(Launch::Product { variant, dims, a: base, b: b_maps, c: into, p: product });
        launches.extend(parts.map(|parts| Launch::SumSplits { parts, c, p, splits }));
        launches.extend(marks.map(|marks| Launch::Fixup { a, b, c, p, marks }));
        let zero = marks.map(|at| (at, (marked + peaked) as usize));
        Sequence { base, bytes: bytes as usize, tensors, zero, launches }
    }

    /// The launches, each pass with the encoded maps it writes.
    fn launches(mut self, maps: &[TensorMap]) -> Vec<Launch> {
        for launch in &mut self.launches {
            if let Launch::Pack { maps: (at, words), .. } = launch
                && *at != 0
            {
                let first = ((*at - self.base) / MAP) as usize;
                *words = [maps[first], maps[first + 1]];
            }
        }
        self.launches
    }
}

/// What carries out a TMA step's sequence: a GPU stream, or the emulator.
pub(crate) trait Device {
    /// The grids the device takes.
    fn limits(&self) -> GridLimits;
    /// A workspace of `bytes`, 256-byte aligned, for the rest of the
    /// sequence: its address.
    fn workspace(&mut self, bytes: usize) -> Result<u64>;
    /// The tensor map of `t`.
    fn encode(&self, t: Tensor2d) -> Result<TensorMap>;
    /// Sets `words` words at `at` to 0, in order before the launches.
    fn zero(&mut self, at: u64, words: usize) -> Result<()>;
    /// Launches `launch` ([`Launch::kernel`]).
    fn run(&mut self, launch: Launch) -> Result<()>;
}

/// `C = alpha * A * B + beta * C` by TMA step `variant`, fed as `feed`
/// says, on `device`, `A`, `B` and `C` at `operands`, the step's grid
/// `dims` (from `plan`): every launch's grid checked before the workspace
/// is taken, then the maps encoded and the sequence carried out in order.
pub(crate) fn run(
    device: &mut impl Device, (variant, feed): (Variant, Feed), shape: GemmShape, scalars: AlphaBeta, dims: LaunchDims,
    operands: (u64, u64, u64),
) -> Result<()> {
    // The launches' grids and the workspace's size do not depend on where
    // the workspace lies.
    let unplaced = Sequence::new(variant, feed, shape, scalars, dims, operands, 0);
    // A copy's coordinates are `i32`s: each side of a map below 2^31.
    if let Some(t) = unplaced.tensors.iter().find(|t| t.dims.iter().any(|&d| d > i32::MAX as u64)) {
        let (cols, rows, why) = (t.dims[0] as usize, t.dims[1] as usize, "a tensor map's side passes i32".into());
        return Err(crate::Error::ShapeTooLarge { rows, cols, why });
    }
    for (entry, dims) in unplaced.launches.iter().map(Launch::kernel) {
        device.limits().check(entry, &shape, dims)?;
    }
    let base = device.workspace(unplaced.bytes)?;
    let seq = Sequence::new(variant, feed, shape, scalars, dims, operands, base);
    let maps = seq.tensors.iter().map(|&t| device.encode(t)).collect::<Result<Vec<_>>>()?;
    if let Some((at, words)) = seq.zero {
        device.zero(at, words)?;
    }
    seq.launches(&maps).into_iter().try_for_each(|launch| device.run(launch))
}
