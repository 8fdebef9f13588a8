//! The GEMM's kernels on a stream: each kernel's argument tuple in the
//! order of its parameters, and a TMA step's sequence (workspace, tensor
//! maps, operand passes, product, fix-up).

use super::plan::{DirectLayout, Maxima, Pass, TmaLayout, passes};
use super::tma::{Workspace, encode};
use super::{AlphaBeta, GemmShape, Problem, Variant};
use crate::{LaunchDims, Result, Stream};
use coalesce_kernels::gemm::pack::MapParam;
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};

/// The fix-up's entry point.
const FIXUP: &str = "gemm_fixup";

/// The operand pass's entry point.
const PACK: &str = "gemm_pack";

/// The peaks' pass's entry point.
const MAXIMA: &str = "gemm_maxima";

/// The split-K sum's entry point.
const SUM_SPLITS: &str = "gemm_sum_splits";

/// `A`, `B` and `C` as a step reads them; for a TMA step, `A` and `B` are
/// the addresses of its tensor maps, which the kernel takes as `a` and `b`.
type Operands = (DevicePointer<f32>, DevicePointer<f32>, DevicePointer<f32>);

/// The parameters of every GEMM step, from the registry (`kernel(..)` in
/// `gemm_steps!`): `(a, b, c, m, n, k, alpha, beta)`.
type StepArgs = super::KernelParams;

/// The parameters of `gemm_fixup`: a step's, then `marks: *const u32`.
type FixupArgs =
    (DevicePointer<f32>, DevicePointer<f32>, DevicePointer<f32>, u32, u32, u32, f32, f32, DevicePointer<u32>);

/// The parameters of `gemm_sum_splits`: `(parts, c, m, n, k, alpha, beta,
/// splits)`.
type SumArgs = (DevicePointer<f32>, DevicePointer<f32>, u32, u32, u32, f32, f32, u32);

/// A tensor map's 128 bytes as `cust` plain data: `gemm_pack`'s `map0` and
/// `map1`, passed by value as the kernels' [`MapParam`] (8-byte aligned),
/// and the pointee of its `maps`.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct MapBytes(MapParam);
// SAFETY: sixteen integers: no pointer, no host resource.
unsafe impl DeviceCopy for MapBytes {}

/// The parameters of `gemm_pack`, in order.
type PackArgs = (
    DevicePointer<f32>,      // src: *const f32
    DevicePointer<f32>,      // hi: *mut f32
    DevicePointer<f32>,      // lo: *mut f32
    u32,                     // rows
    u32,                     // cols
    u32,                     // stride
    u32,                     // flags
    DevicePointer<MapBytes>, // maps: *mut TensorMap
    MapBytes,                // map0: MapParam
    MapBytes,                // map1: MapParam
    DevicePointer<u32>,      // any: *mut u32
    DevicePointer<u32>,      // lines: *mut u32
    DevicePointer<u32>,      // peaks: *const u32
);

/// The parameters of `gemm_maxima`: `(src, rows, cols, out, by_rows)`.
type MaximaArgs = (DevicePointer<f32>, u32, u32, DevicePointer<u32>, u32);

fn step_args((a, b, c): Operands, p: Problem) -> StepArgs {
    (a, b, c, p.m, p.n, p.k, p.alpha, p.beta)
}

/// Queues `entry`, a GEMM step, on `stream`.
///
/// # Safety
/// `a` and `b` are what the kernel reads (the matrices, or for a TMA step
/// its tensor maps), `c` holds `m * n` floats and overlaps neither.
pub(super) unsafe fn step(
    stream: &Stream<'_>, entry: &'static str, dims: LaunchDims, operands: Operands, p: Problem,
) -> Result<()> {
    // SAFETY: every step takes `StepArgs` (`gemm_entry!`); the caller's
    // contract.
    unsafe { stream.launch(entry, dims, step_args(operands, p)) }
}

/// Queues `gemm_fixup` on `stream`.
///
/// # Safety
/// `a`, `b` and `c` hold their matrices, `c` overlaps neither, and `marks`
/// holds the `1 + m + n` words of marks.
unsafe fn fixup(stream: &Stream<'_>, dims: LaunchDims, operands: Operands, p: Problem, marks: u64) -> Result<()> {
    let (a, b, c, m, n, k, alpha, beta) = step_args(operands, p);
    let args: FixupArgs = (a, b, c, m, n, k, alpha, beta, DevicePointer::from_raw(marks));
    // SAFETY: `gemm_fixup` takes `FixupArgs`; the caller's contract.
    unsafe { stream.launch(FIXUP, dims, args) }
}

/// A TMA step ([`Geometry::tma`]): `A` and `B^T` made in the workspace by
/// `gemm_pack` (rounded to TF32 or split, rows padded; the passes also
/// write the tensor maps), then the product, all on `stream`; the workspace
/// is freed in stream order after it.
pub(super) fn tma(
    stream: &Stream<'_>, variant: Variant, dims: LaunchDims,
    (a, b, c): (&DeviceSlice<f32>, &DeviceSlice<f32>, &mut DeviceSlice<f32>), shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    use coalesce_kernels::gemm::fixup::fixup_dims;
    use coalesce_kernels::gemm::pack::pack_dims;
    let gpu = stream.gpu();
    // Refuse a module without the step before allocating anything.
    gpu.require(variant.entry_point())?;
    if variant.geometry().direct {
        return direct(stream, variant, dims, (a, b, c), shape, scalars);
    }
    let (m, n, k) = (shape.m(), shape.n(), shape.k());
    let limits = gpu.grid_limits();
    limits.check(PACK, &shape, pack_dims(m as u32, k as u32))?;
    limits.check(PACK, &shape, pack_dims(k as u32, n as u32))?;
    let layout = TmaLayout::new(variant, shape);
    let fix = layout.marks.is_some().then(|| fixup_dims(m as u32, n as u32));
    if let Some(fix) = fix {
        limits.check(FIXUP, &shape, fix)?;
    }
    let ws = Workspace::new(stream, layout.bytes)?;
    let base = ws.base();
    let maps = layout
        .tensors(variant, shape, base)
        .into_iter()
        .map(|t| Ok((t.base, encode(t)?)))
        .collect::<Result<Vec<_>>>()?;
    let (any, _, _) = layout.marks_at(base, shape);
    if fix.is_some() {
        // The 1 + m + n words of marks lie inside the workspace.
        zero_marks(stream, any, 1 + m + n)?;
    }
    let (ap, bp, cp) = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
    for pass in passes(&layout, shape, base, (ap.as_raw(), bp.as_raw()), &maps) {
        // SAFETY: A holds m x k floats, B k x n; the destinations, the maps
        // and the marks lie inside the workspace, which nothing else uses.
        unsafe { pack(stream, pass) }?;
    }
    let (a_maps, b_maps) = layout.maps_at(base);
    let maps = (DevicePointer::from_raw(a_maps), DevicePointer::from_raw(b_maps), cp);
    // SAFETY: the maps describe A's and B^T's arrays, written by the passes
    // queued before it; C holds m*n floats and overlaps neither A nor B
    // (checked by `launch`).
    unsafe { step(stream, variant.entry_point(), dims, maps, shape.problem(scalars)) }?;
    match fix {
        // SAFETY: A, B and C hold their matrices, C overlaps neither; the
        // marks (1 + m + n words) were written by the passes before it.
        Some(fix) => unsafe { fixup(stream, fix, (ap, bp, cp), shape.problem(scalars), any) },
        None => Ok(()),
    }
}

/// A direct step ([`Geometry::direct`]): tensor maps over `A` and `B`
/// themselves (or over padded copies of an operand whose rows they cannot
/// describe, [`DirectLayout`]), written to the workspace by the one pass
/// before the product, all on `stream`; for 3xTF32, the marks zeroed before
/// and the fix-up after.
fn direct(
    stream: &Stream<'_>, variant: Variant, dims: LaunchDims,
    (a, b, c): (&DeviceSlice<f32>, &DeviceSlice<f32>, &mut DeviceSlice<f32>), shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    use coalesce_kernels::gemm::fixup::fixup_dims;
    use coalesce_kernels::gemm::pack::pack_dims;
    use coalesce_kernels::gemm::scale::maxima_dims;
    use coalesce_kernels::gemm::split_k::sum_splits_dims;
    let (ap, bp, cp) = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
    let (a_raw, b_raw) = (ap.as_raw(), bp.as_raw());
    let layout = DirectLayout::new(variant, shape, (a_raw, b_raw), dims.grid.z);
    let limits = stream.gpu().grid_limits();
    // The passes' grids are checked before anything is allocated or queued
    // (their shapes do not depend on where the workspace lies).
    let no_maps = [coalesce_kernels::TensorMap([0; 16]); 2];
    for pass in layout.passes(shape, 0, (a_raw, b_raw), no_maps) {
        limits.check(PACK, &shape, pack_dims(pass.shape.rows, pass.shape.cols))?;
    }
    for pass in layout.maxima(shape, 0, (a_raw, b_raw)) {
        limits.check(MAXIMA, &shape, maxima_dims(pass.rows, pass.cols, pass.by_rows))?;
    }
    let (m, n) = (shape.m(), shape.n());
    let fix = layout.marks.is_some().then(|| fixup_dims(m as u32, n as u32));
    if let Some(fix) = fix {
        limits.check(FIXUP, &shape, fix)?;
    }
    let sum = layout.parts.is_some().then(|| sum_splits_dims(m as u32, n as u32));
    if let Some(sum) = sum {
        limits.check(SUM_SPLITS, &shape, sum)?;
    }
    let ws = Workspace::new(stream, layout.bytes)?;
    let base = ws.base();
    let [ta, tb] = layout.tensors(shape, base, (a_raw, b_raw));
    let maps = [encode(ta)?, encode(tb)?];
    let marks = layout.marks_at(base);
    if let Some((any, words)) = layout.marks_to_zero(base, shape) {
        zero_marks(stream, any, words)?;
    }
    for pass in layout.maxima(shape, base, (a_raw, b_raw)) {
        // SAFETY: the source is A (m x k floats) or B (k x n); the peaks
        // lie inside the workspace, zeroed above.
        unsafe { maxima(stream, pass) }?;
    }
    for pass in layout.passes(shape, base, (a_raw, b_raw), maps) {
        // SAFETY: A holds m x k floats, B k x n; a copy and the maps lie
        // inside the workspace, which nothing else uses.
        unsafe { pack(stream, pass) }?;
    }
    let (a_map, b_map) = layout.maps_at(base);
    let (product_c, product_scalars) = layout.product_target(base, cp.as_raw(), scalars);
    let maps = (DevicePointer::from_raw(a_map), DevicePointer::from_raw(b_map), DevicePointer::from_raw(product_c));
    // SAFETY: the maps, written by the pass queued before it, describe A
    // and B (or their copies), and for 3xTF32 the zeroed marks follow them;
    // the product writes C (m*n floats, overlapping neither: checked by
    // `launch`) or, split, the workspace's `splits` slices of m*n.
    unsafe { step(stream, variant.entry_point(), dims, maps, shape.problem(product_scalars)) }?;
    if let (Some(sum), Some(parts)) = (sum, layout.parts_at(base)) {
        let p = shape.problem(scalars);
        let args: SumArgs = (DevicePointer::from_raw(parts), cp, p.m, p.n, p.k, p.alpha, p.beta, layout.splits);
        // SAFETY: `gemm_sum_splits` takes `SumArgs`; the parts (`splits`
        // slices of m*n floats) lie in the workspace, written by the
        // product before it; C holds m*n floats.
        unsafe { stream.launch(SUM_SPLITS, sum, args) }?;
    }
    match (fix, marks) {
        // SAFETY: A, B and C hold their matrices, C overlaps neither; the
        // marks (1 + m + n words) were written by the product before it.
        (Some(fix), Some(any)) => unsafe { fixup(stream, fix, (ap, bp, cp), shape.problem(scalars), any) },
        _ => Ok(()),
    }
}

/// Zeroes the `words` words of marks at `any` on `stream`: a memset in
/// stream order (a node of its own in a graph capture).
fn zero_marks(stream: &Stream<'_>, any: u64, words: usize) -> Result<()> {
    stream.gpu().bind()?;
    // SAFETY: the caller's marks lie inside its workspace; a live stream.
    let r = unsafe { cust::sys::cuMemsetD32Async(any, 0, words, stream.raw()) };
    crate::error::check("cuMemsetD32Async", r)
}

/// Queues the peaks' pass on `stream`.
///
/// # Safety
/// `src` holds `rows x cols` floats and `out` one word per row (or column).
unsafe fn maxima(stream: &Stream<'_>, pass: Maxima) -> Result<()> {
    use coalesce_kernels::gemm::scale::maxima_dims;
    let dims = maxima_dims(pass.rows, pass.cols, pass.by_rows);
    let args: MaximaArgs = (
        DevicePointer::from_raw(pass.src),
        pass.rows,
        pass.cols,
        DevicePointer::from_raw(pass.out),
        u32::from(pass.by_rows),
    );
    // SAFETY: `gemm_maxima` takes `MaximaArgs`; the caller's contract.
    unsafe { stream.launch(MAXIMA, dims, args) }
}

/// Queues the pass on `stream`.
///
/// # Safety
/// `src` holds the source's floats; `hi` (and `lo`, unless 0) its
/// destination (`PackShape::dst_len`), `maps` 256 bytes or is 0, and for a
/// split pass `any` one word and `lines` one per destination row; none
/// overlaps `src`.
unsafe fn pack(stream: &Stream<'_>, pass: Pass) -> Result<()> {
    use coalesce_kernels::gemm::pack::pack_dims;
    let s = pass.shape;
    let dims = pack_dims(s.rows, s.cols);
    let [map0, map1] = pass.words.map(|w| MapBytes(MapParam(w.0)));
    let args: PackArgs = (
        DevicePointer::from_raw(pass.src),
        DevicePointer::from_raw(pass.hi),
        DevicePointer::from_raw(pass.lo),
        s.rows,
        s.cols,
        s.stride,
        s.flags,
        DevicePointer::from_raw(pass.maps),
        map0,
        map1,
        DevicePointer::from_raw(pass.any),
        DevicePointer::from_raw(pass.lines),
        DevicePointer::from_raw(pass.peaks),
    );
    // SAFETY: `gemm_pack` takes `PackArgs`; the caller's contract.
    unsafe { stream.launch(PACK, dims, args) }
}
