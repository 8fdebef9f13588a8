//! The GEMM launchers on the CPU emulator: same checks, same kernel bodies,
//! host slices. Every access is checked: small shapes only.

use super::plan::{Plan, plan, scale_only};
use super::{AlphaBeta, GemmShape, Variant};
use crate::emu::{Report, staged};
use crate::{GridLimits, Result};
use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};

/// The SMs the plan sizes a split `K` for: an H100's, as [`sgemm`] runs
/// the version an H100 runs.
const EMULATED_SMS: u32 = 132;

/// [`super::sgemm`] on the emulator: the version an H100 runs for the shape
/// ([`Variant::sgemm_for`] of the `sm_90a` module).
pub fn sgemm(a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta) -> Result<()> {
    launch(Variant::sgemm_for("sm_90a", (shape.m(), shape.n(), shape.k())), a, b, c, shape, scalars)
}

/// [`super::launch`] on the emulator. The grid is checked against
/// [`GridLimits::CUDA`], so shapes a GPU would refuse are refused here too.
pub fn launch(
    variant: Variant, a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    launch_on(EMULATED_SMS, variant, a, b, c, shape, scalars)
}

/// [`launch`] planned for a GPU of `sms` SMs: with fewer SMs than `C` has
/// tiles and few passes a tile, a step that walks tiles ([`coalesce_kernels::gemm::Geometry::walks_tiles`])
/// runs one block an SM, each over several tiles, at a shape the emulator
/// can run.
pub fn launch_on(
    sms: u32, variant: Variant, a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    let (variant, dims, scalars) =
        match plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &GridLimits::CUDA, sms)? {
            Plan::Nothing => return Ok(()),
            Plan::Scale(dims) => (Variant::Naive, dims, scale_only(scalars)),
            Plan::Product(variant, dims) if variant.geometry().tma => {
                return tma(variant, (a, b, c), shape, scalars, dims, false).map(|_| ());
            }
            Plan::Product(variant, dims) => (variant, dims, scalars),
        };
    let (pa, pb, pc) = (SyncPtr::new(a), SyncPtr::new(b), SyncMutPtr::new(c));
    let p = shape.problem(scalars);
    // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
    emu::launch(dims, |ctx| unsafe { variant.run(ctx, pa.get(), pb.get(), pc.get(), p) })?;
    Ok(())
}

/// A TMA step on the emulator, laid out as on the GPU ([`TmaLayout`]):
/// the operand passes into a zeroed host workspace (256-byte aligned, as
/// the pool's allocations are; the marks zeroed as on the GPU), writing
/// the emulator's tensor maps ([`TmaMap`]), then the product, then for
/// 3xTF32 the fix-up. The passes' and the fix-up's findings fail the
/// launch; the product's are returned in its [`Report`] when `checked`,
/// else fail it.
fn tma(
    variant: Variant, (a, b, c): (&[f32], &[f32], &mut [f32]), shape: GemmShape, scalars: AlphaBeta,
    dims: coalesce_kernels::LaunchDims, checked: bool,
) -> Result<Report> {
    use super::plan::{DirectLayout, TmaLayout, passes};
    use coalesce_kernels::TensorMap;
    use coalesce_kernels::emu::{TmaMap, TmaSwizzle};
    use coalesce_kernels::gemm::fixup::{fixup, fixup_dims};
    use coalesce_kernels::gemm::pack::{MapsOut, Marks, pack, pack_dims};
    let emu_map = |t: super::plan::Tensor2d| {
        let map = TmaMap {
            base: t.base,
            cols: t.cols as u32,
            rows: t.rows as u32,
            row_stride: t.row_bytes,
            box_cols: t.box_cols,
            box_rows: t.box_rows,
            swizzle: TmaSwizzle::B128,
            tf32: t.tf32,
        };
        (t.base, map.encode())
    };
    let (a_addr, b_addr) = (a.as_ptr() as u64, b.as_ptr() as u64);
    let layout = TmaLayout::new(variant, shape);
    let direct = variant.geometry().direct.then(|| DirectLayout::new(variant, shape, (a_addr, b_addr), dims.grid.z));
    let bytes = direct.map_or(layout.bytes, |d| d.bytes);
    let mut ws = crate::emu::Aligned::copy_at(&vec![0.0; bytes.div_ceil(4)], 0);
    let base = ws.as_mut_slice().as_mut_ptr() as u64;
    let (all_passes, (pa, pb)) = match direct {
        Some(d) => {
            let maps = d.tensors(shape, base, (a_addr, b_addr)).map(|t| emu_map(t).1);
            (d.passes(shape, base, (a_addr, b_addr), maps), d.maps_at(base))
        }
        None => {
            let maps: Vec<(u64, TensorMap)> = layout.tensors(variant, shape, base).into_iter().map(emu_map).collect();
            (passes(&layout, shape, base, (a_addr, b_addr), &maps).to_vec(), layout.maps_at(base))
        }
    };
    let maxima = direct.map_or_else(Vec::new, |d| d.maxima(shape, base, (a_addr, b_addr)));
    for pass in maxima {
        use coalesce_kernels::gemm::scale::{maxima, maxima_dims};
        let dims = maxima_dims(pass.rows, pass.cols, pass.by_rows);
        GridLimits::CUDA.check("gemm_maxima", &shape, dims)?;
        // SAFETY: the source holds its rows x cols floats (checked by
        // `plan`); the peaks lie in the zeroed workspace.
        emu::launch(dims, |ctx| unsafe {
            maxima(ctx, pass.src as *const f32, (pass.rows, pass.cols), pass.out as *mut u32, pass.by_rows)
        })?;
    }
    for pass in all_passes {
        let dims = pack_dims(pass.shape.rows, pass.shape.cols);
        GridLimits::CUDA.check("gemm_pack", &shape, dims)?;
        // SAFETY: the source holds its rows x cols floats (checked by
        // `plan`); the destinations and the maps lie in the workspace.
        // (The closure takes the addresses as integers: it runs on
        // every emulated thread, and raw pointers are not `Sync`.)
        emu::launch(dims, |ctx| unsafe {
            let out = MapsOut { maps: pass.maps as *mut TensorMap, words: pass.words };
            let marks =
                Marks { any: pass.any as *mut u32, lines: pass.lines as *mut u32, peaks: pass.peaks as *const u32 };
            let (hi, lo) = (pass.hi as *mut f32, pass.lo as *mut f32);
            pack(ctx, pass.src as *const f32, (hi, lo), pass.shape, out, marks)
        })?;
    }
    // C staged 256-byte aligned, as a device buffer is, for the counters.
    let mut staged_c = crate::emu::Aligned::copy_at(c, 0);
    let pc = SyncMutPtr::new(staged_c.as_mut_slice());
    let p = shape.problem(scalars);
    let c_addr = pc.get() as u64;
    let (product_c, product_scalars) = direct.map_or((c_addr, scalars), |d| d.product_target(base, c_addr, scalars));
    let product_p = shape.problem(product_scalars);
    // SAFETY: the maps describe the workspace's arrays, written above; the
    // product writes C (m x n floats, checked by `plan`) or the
    // workspace's slices of partial products.
    let report = emu::launch_checked(dims, |ctx| unsafe {
        variant.run(ctx, pa as *const f32, pb as *const f32, product_c as *mut f32, product_p)
    })?;
    if !checked && !report.findings.is_empty() {
        return Err(emu::EmuError::Checker(report.findings).into());
    }
    if let Some((at, splits)) = direct.and_then(|d| d.parts_at(base).map(|at| (at, d.splits))) {
        use coalesce_kernels::gemm::split_k::{sum_splits, sum_splits_dims};
        let sum = sum_splits_dims(shape.m() as u32, shape.n() as u32);
        GridLimits::CUDA.check("gemm_sum_splits", &shape, sum)?;
        // SAFETY: the parts lie in the workspace, written by the product;
        // C is staged apart and holds m x n floats.
        emu::launch(sum, |ctx| unsafe { sum_splits(ctx, at as *const f32, pc.get(), p, splits) })?;
    }
    let marks = match direct {
        Some(d) => d.marks_at(base),
        None => layout.marks.map(|_| layout.marks_at(base, shape).0),
    };
    if let Some(any) = marks {
        let (pa, pb) = (SyncPtr::new(a), SyncPtr::new(b));
        let (m, n) = (shape.m() as u32, shape.n() as u32);
        // SAFETY: A, B, C hold their matrices (checked by `plan`), C is
        // staged apart; the marks lie in the workspace, written above.
        emu::launch(fixup_dims(m, n), |ctx| unsafe { fixup(ctx, pa.get(), pb.get(), pc.get(), p, any as *const u32) })?;
    }
    c.copy_from_slice(staged_c.as_mut_slice());
    Ok(report)
}

/// [`launch`] with the memory counters: returns the [`Report`] (the
/// checker's findings are in it, not an error). `A`, `B` and `C` are
/// staged in 256-byte aligned copies, as `cuMemAlloc` aligns device
/// buffers, so the sectors are those a GPU's request would touch.
///
/// ```
/// # fn main() -> coalesce::Result<()> {
/// use coalesce::emu::Op;
/// use coalesce::gemm::{AlphaBeta, GemmShape, Variant, emu};
/// let shape = GemmShape::new(32, 32, 32)?;
/// let (a, b) = (vec![1.0f32; shape.a().len()], vec![1.0f32; shape.b().len()]);
/// let mut c = vec![0.0f32; shape.c().len()];
/// let report = emu::launch_checked(Variant::SmemTiled, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)?;
/// assert!(report.findings.is_empty());
/// assert!(c.iter().all(|&x| x == 32.0));
/// // The tile loads: a warp reads 32 consecutive floats of a row, 4 sectors.
/// assert_eq!(report.counters.total(Op::GlobalLoad).per_request(), 4.0);
/// # Ok(()) }
/// ```
pub fn launch_checked(
    variant: Variant, a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta,
) -> Result<Report> {
    let (variant, dims, scalars) =
        match plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &GridLimits::CUDA, EMULATED_SMS)? {
            Plan::Nothing => return Ok(Report::default()),
            Plan::Scale(dims) => (Variant::Naive, dims, scale_only(scalars)),
            Plan::Product(variant, dims) if variant.geometry().tma => {
                return tma(variant, (a, b, c), shape, scalars, dims, true);
            }
            Plan::Product(variant, dims) => (variant, dims, scalars),
        };
    let p = shape.problem(scalars);
    staged(dims, [a, b], c, |ctx, [a, b], c| {
        // SAFETY: lengths checked by `plan`; the staged copies are distinct.
        unsafe { variant.run(ctx, a, b, c, p) }
    })
}
