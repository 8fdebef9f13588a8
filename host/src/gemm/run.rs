//! A TMA step's launches, written once for the GPU and the emulator: the
//! workspace it needs, the tensor maps it encodes there, the marks it
//! zeroes, and the kernels it launches in order ([`Launch`]), which a
//! [`Device`] carries out.

use super::plan::{DirectLayout, Maxima, Pass, Tensor2d, TmaLayout, passes};
use super::{AlphaBeta, GemmShape, Problem, Variant};
use crate::{LaunchDims, Result};
use coalesce_kernels::TensorMap;

/// The fix-up's entry point.
const FIXUP: &str = "gemm_fixup";
/// The operand pass's entry point.
const PACK: &str = "gemm_pack";
/// The peaks' pass's entry point.
const MAXIMA: &str = "gemm_maxima";
/// The split-K sum's entry point.
const SUM_SPLITS: &str = "gemm_sum_splits";

/// One kernel of a TMA product's sequence, its addresses absolute.
// A pass carries its two 128-byte maps by value, as `gemm_pack` takes
// them; a sequence is at most seven launches, so the size is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Launch {
    /// `gemm_maxima`: the peaks of an operand's rows or columns.
    Maxima(Maxima),
    /// `gemm_pack`: an operand's copy (rounded, split, scaled or padded)
    /// and the tensor maps it writes.
    Pack(Pass),
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
        use coalesce_kernels::gemm::{fixup::fixup_dims, pack::pack_dims, scale::maxima_dims};
        match *self {
            Launch::Maxima(m) => (MAXIMA, maxima_dims(m.rows, m.cols, m.by_rows)),
            Launch::Pack(p) => (PACK, pack_dims(p.shape.rows, p.shape.cols)),
            Launch::Product { variant, dims, .. } => (variant.entry_point(), dims),
            Launch::SumSplits { p, .. } => (SUM_SPLITS, sum_splits_dims(p.m, p.n)),
            Launch::Fixup { p, .. } => (FIXUP, fixup_dims(p.m, p.n)),
        }
    }
}

/// Where a TMA step's operands live in its workspace: K-major copies made
/// by its passes (steps 12 and 13), or the matrices themselves or padded
/// copies of them (the direct steps, 14-16).
enum Layout {
    Packed(TmaLayout),
    Direct(DirectLayout),
}

/// One TMA product: the step, its shape, scalars and grid, and `A`, `B`
/// and `C`'s device addresses.
pub(crate) struct Sequence {
    variant: Variant,
    shape: GemmShape,
    scalars: AlphaBeta,
    dims: LaunchDims,
    operands: (u64, u64, u64),
    layout: Layout,
}

impl Sequence {
    pub(crate) fn new(
        variant: Variant, shape: GemmShape, scalars: AlphaBeta, dims: LaunchDims, operands: (u64, u64, u64),
    ) -> Sequence {
        let layout = if variant.geometry().direct {
            Layout::Direct(DirectLayout::new(variant, shape, (operands.0, operands.1), dims.grid.z))
        } else {
            Layout::Packed(TmaLayout::new(variant, shape))
        };
        Sequence { variant, shape, scalars, dims, operands, layout }
    }

    /// The workspace's bytes.
    pub(crate) fn bytes(&self) -> usize {
        match &self.layout {
            Layout::Packed(l) => l.bytes,
            Layout::Direct(l) => l.bytes,
        }
    }

    /// The tensors the maps describe, in the maps' order, with the
    /// workspace at `base`.
    pub(crate) fn tensors(&self, base: u64) -> Vec<Tensor2d> {
        let (a, b, _) = self.operands;
        match &self.layout {
            Layout::Packed(l) => l.tensors(self.variant, self.shape, base),
            Layout::Direct(l) => l.tensors(self.shape, base, (a, b)).to_vec(),
        }
    }

    /// The words to zero before the first launch, with the workspace at
    /// `base`: the marks (and peaks) of a 3xTF32 step, which its passes
    /// and product raise.
    pub(crate) fn zero(&self, base: u64) -> Option<(u64, usize)> {
        let shape = self.shape;
        match &self.layout {
            Layout::Packed(l) => l.marks.map(|_| (l.marks_at(base, shape).0, 1 + shape.m() + shape.n())),
            Layout::Direct(l) => l.marks_to_zero(base, shape),
        }
    }

    /// The launches in order, with the workspace at `base` and `maps` the
    /// encoded maps of [`Self::tensors`].
    pub(crate) fn launches(&self, base: u64, maps: &[TensorMap]) -> Vec<Launch> {
        let (variant, dims, shape, (a, b, c)) = (self.variant, self.dims, self.shape, self.operands);
        let p = shape.problem(self.scalars);
        let mut out = Vec::new();
        match &self.layout {
            Layout::Packed(l) => {
                let arrays: Vec<(u64, TensorMap)> =
                    self.tensors(base).iter().zip(maps).map(|(t, &map)| (t.base, map)).collect();
                out.extend(passes(l, shape, base, (a, b), &arrays).map(Launch::Pack));
                let (a_maps, b_maps) = l.maps_at(base);
                out.push(Launch::Product { variant, dims, a: a_maps, b: b_maps, c, p });
                if l.marks.is_some() {
                    out.push(Launch::Fixup { a, b, c, p, marks: l.marks_at(base, shape).0 });
                }
            }
            Layout::Direct(l) => {
                out.extend(l.maxima(shape, base, (a, b)).into_iter().map(Launch::Maxima));
                out.extend(l.passes(shape, base, (a, b), [maps[0], maps[1]]).into_iter().map(Launch::Pack));
                let (a_map, b_map) = l.maps_at(base);
                let (product_c, product_scalars) = l.product_target(base, c, self.scalars);
                let product = shape.problem(product_scalars);
                out.push(Launch::Product { variant, dims, a: a_map, b: b_map, c: product_c, p: product });
                if let Some(parts) = l.parts_at(base) {
                    out.push(Launch::SumSplits { parts, c, p, splits: l.splits });
                }
                if let Some(marks) = l.marks_at(base) {
                    out.push(Launch::Fixup { a, b, c, p, marks });
                }
            }
        }
        out
    }
}

/// What carries out a TMA step's sequence: a GPU stream, or the emulator.
pub(crate) trait Device {
    /// Refuses a launch whose grid the device cannot take.
    fn check(&self, entry: &'static str, dims: LaunchDims) -> Result<()>;
    /// A workspace of `bytes`, 256-byte aligned, for the rest of the
    /// sequence: its address.
    fn workspace(&mut self, bytes: usize) -> Result<u64>;
    /// The tensor map of `t`.
    fn encode(&self, t: Tensor2d) -> Result<TensorMap>;
    /// Sets `words` words at `at` to 0, in order before the launches.
    fn zero(&mut self, at: u64, words: usize) -> Result<()>;
    /// Launches `launch`, kernel `entry`, on `dims` ([`Launch::kernel`]).
    fn run(&mut self, launch: Launch, entry: &'static str, dims: LaunchDims) -> Result<()>;
}

/// `C = alpha * A * B + beta * C` by TMA step `variant` on `device`, `A`,
/// `B` and `C` at `operands`, the step's grid `dims` (from `plan`): every
/// launch's grid checked before the workspace is taken, then the maps
/// encoded and the sequence carried out in order.
pub(crate) fn run(
    device: &mut impl Device, variant: Variant, shape: GemmShape, scalars: AlphaBeta, dims: LaunchDims,
    operands: (u64, u64, u64),
) -> Result<()> {
    let seq = Sequence::new(variant, shape, scalars, dims, operands);
    // The launches' grids do not depend on where the workspace lies.
    let unencoded = vec![TensorMap([0; 16]); seq.tensors(0).len()];
    for (entry, dims) in seq.launches(0, &unencoded).iter().map(Launch::kernel) {
        device.check(entry, dims)?;
    }
    let base = device.workspace(seq.bytes())?;
    let maps = seq.tensors(base).into_iter().map(|t| device.encode(t)).collect::<Result<Vec<_>>>()?;
    if let Some((at, words)) = seq.zero(base) {
        device.zero(at, words)?;
    }
    for launch in seq.launches(base, &maps) {
        let (entry, dims) = launch.kernel();
        device.run(launch, entry, dims)?;
    }
    Ok(())
}
