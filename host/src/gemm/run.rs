//! A TMA step's launches, written once for the GPU and the emulator: the
//! workspace it needs, the tensor maps it encodes there, and what it
//! launches in order ([`Launch`]), which a [`Device`] carries out.

use super::plan::{DirectLayout, Maxima, Pass, Tensor2d, TmaLayout, passes};
use super::{AlphaBeta, GemmShape, Problem, Variant};
use crate::{LaunchDims, Result};
use coalesce_kernels::TensorMap;

/// The fix-up's entry point.
pub(crate) const FIXUP: &str = "gemm_fixup";
/// The operand pass's entry point.
pub(crate) const PACK: &str = "gemm_pack";
/// The peaks' pass's entry point.
pub(crate) const MAXIMA: &str = "gemm_maxima";
/// The split-K sum's entry point.
pub(crate) const SUM_SPLITS: &str = "gemm_sum_splits";

/// One step of a TMA product's sequence, its addresses absolute.
// A pass carries its two 128-byte maps by value, as `gemm_pack` takes
// them; a sequence is at most seven launches, so the size is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Launch {
    /// `words` words at `at` set to 0: the marks (and peaks), which the
    /// passes and the product raise.
    Zero { at: u64, words: usize },
    /// `gemm_maxima`: the peaks of an operand's rows or columns.
    Maxima(Maxima),
    /// `gemm_pack`: an operand's copy (rounded, split, scaled or padded)
    /// and the tensor maps it writes.
    Pack(Pass),
    /// The step itself: `a` and `b` its tensor maps, `c` where it writes.
    Product { a: u64, b: u64, c: u64, p: Problem },
    /// `gemm_sum_splits`: the `splits` partial products at `parts` into `c`
    /// as `alpha * sum + beta * C`.
    SumSplits { parts: u64, c: u64, p: Problem, splits: u32 },
    /// `gemm_fixup`: the rows and columns of `C` whose inputs the marks at
    /// `marks` name as not finite, recomputed in FP32.
    Fixup { a: u64, b: u64, c: u64, p: Problem, marks: u64 },
}

impl Launch {
    /// Its entry point and launch dimensions (`product`: the step's), for
    /// a kernel; `None` for a memset.
    pub(crate) fn kernel(&self, variant: Variant, product: LaunchDims) -> Option<(&'static str, LaunchDims)> {
        use coalesce_kernels::gemm::split_k::sum_splits_dims;
        use coalesce_kernels::gemm::{fixup::fixup_dims, pack::pack_dims, scale::maxima_dims};
        match *self {
            Launch::Zero { .. } => None,
            Launch::Maxima(m) => Some((MAXIMA, maxima_dims(m.rows, m.cols, m.by_rows))),
            Launch::Pack(p) => Some((PACK, pack_dims(p.shape.rows, p.shape.cols))),
            Launch::Product { .. } => Some((variant.entry_point(), product)),
            Launch::SumSplits { p, .. } => Some((SUM_SPLITS, sum_splits_dims(p.m, p.n))),
            Launch::Fixup { p, .. } => Some((FIXUP, fixup_dims(p.m, p.n))),
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
        Sequence { variant, shape, scalars, operands, layout }
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

    /// The launches in order, with the workspace at `base` and `maps` the
    /// encoded maps of [`Self::tensors`].
    pub(crate) fn launches(&self, base: u64, maps: &[TensorMap]) -> Vec<Launch> {
        let (shape, (a, b, c)) = (self.shape, self.operands);
        let p = shape.problem(self.scalars);
        let mut out = Vec::new();
        match &self.layout {
            Layout::Packed(l) => {
                let (any, _, _) = l.marks_at(base, shape);
                if l.marks.is_some() {
                    out.push(Launch::Zero { at: any, words: 1 + shape.m() + shape.n() });
                }
                let arrays: Vec<(u64, TensorMap)> =
                    self.tensors(base).iter().zip(maps).map(|(t, &map)| (t.base, map)).collect();
                out.extend(passes(l, shape, base, (a, b), &arrays).map(Launch::Pack));
                let (a_maps, b_maps) = l.maps_at(base);
                out.push(Launch::Product { a: a_maps, b: b_maps, c, p });
                if l.marks.is_some() {
                    out.push(Launch::Fixup { a, b, c, p, marks: any });
                }
            }
            Layout::Direct(l) => {
                if let Some((at, words)) = l.marks_to_zero(base, shape) {
                    out.push(Launch::Zero { at, words });
                }
                out.extend(l.maxima(shape, base, (a, b)).into_iter().map(Launch::Maxima));
                out.extend(l.passes(shape, base, (a, b), [maps[0], maps[1]]).into_iter().map(Launch::Pack));
                let (a_map, b_map) = l.maps_at(base);
                let (product_c, product_scalars) = l.product_target(base, c, self.scalars);
                out.push(Launch::Product { a: a_map, b: b_map, c: product_c, p: shape.problem(product_scalars) });
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
    /// Carries out `launch` on `dims` (a kernel's; unused by a memset).
    fn run(&mut self, launch: Launch, dims: LaunchDims) -> Result<()>;
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
    for launch in seq.launches(0, &unencoded) {
        if let Some((entry, dims)) = launch.kernel(variant, dims) {
            device.check(entry, dims)?;
        }
    }
    let base = device.workspace(seq.bytes())?;
    let maps = seq.tensors(base).into_iter().map(|t| device.encode(t)).collect::<Result<Vec<_>>>()?;
    for launch in seq.launches(base, &maps) {
        device.run(launch, launch.kernel(variant, dims).map_or(dims, |(_, d)| d))?;
    }
    Ok(())
}
