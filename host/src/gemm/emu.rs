//! The GEMM launchers on the CPU emulator: same checks, same kernel bodies,
//! host slices. Every access is checked: small shapes only.

use super::plan::{Plan, plan};
use super::run::{Device, Launch, Tensor2d};
use super::{AlphaBeta, Feed, GemmShape, Variant};
use crate::emu::{Report, staged};
use crate::{GridLimits, LaunchDims, Result};
use coalesce_kernels::TensorMap;
use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr, TmaMap, TmaSwizzle};

/// The SMs the plan sizes a split `K` for: an H100's, whose version [`sgemm`] runs.
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

/// [`launch`] planned for a GPU of `sms` SMs: a step that walks tiles
/// ([`coalesce_kernels::gemm::Geometry::walks_tiles`]) then runs one block an
/// SM over several tiles each at a shape the emulator can run.
pub fn launch_on(
    sms: u32, variant: Variant, a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    emulate(sms, variant, (a, b, c), shape, scalars, false).map(|_| ())
}

/// The plan's launches on the emulator, with the counters where `checked`
/// (the checker's findings in the [`Report`], not an error), else none.
fn emulate(
    sms: u32, variant: Variant, (a, b, c): (&[f32], &[f32], &mut [f32]), shape: GemmShape, scalars: AlphaBeta,
    checked: bool,
) -> Result<Report> {
    let (variant, dims, scalars) =
        match plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &GridLimits::CUDA, sms)? {
            Plan::Nothing => return Ok(Report::default()),
            Plan::Tma(variant, feed, dims) => return tma((variant, feed), (a, b, c), shape, scalars, dims, checked),
            Plan::Product(variant, dims, scalars) => (variant, dims, scalars),
        };
    let p = shape.problem(scalars);
    if checked {
        // SAFETY: lengths checked by `plan`; the staged copies are distinct.
        return staged(dims, [a, b], c, |ctx, [a, b], c| unsafe { variant.run(ctx, a, b, c, p) });
    }
    let (pa, pb, pc) = (SyncPtr::new(a), SyncPtr::new(b), SyncMutPtr::new(c));
    // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
    emu::launch(dims, |ctx| unsafe { variant.run(ctx, pa.get(), pb.get(), pc.get(), p) })?;
    Ok(Report::default())
}

/// A TMA step on the emulator: the GPU's sequence ([`super::run::run`]),
/// `C` staged 256-byte aligned as a device buffer is. The passes' and the
/// follow-up kernels' findings fail the launch; the product's are returned
/// in its [`Report`] when `checked`, else fail it.
fn tma(
    (variant, feed): (Variant, Feed), (a, b, c): (&[f32], &[f32], &mut [f32]), shape: GemmShape, scalars: AlphaBeta,
    dims: LaunchDims, checked: bool,
) -> Result<Report> {
    let mut staged_c = crate::emu::Aligned::copy_at(c, 0);
    let operands = (a.as_ptr() as u64, b.as_ptr() as u64, staged_c.as_mut_slice().as_mut_ptr() as u64);
    let mut device = Emulated { checked, workspace: None, report: Report::default() };
    super::run::run(&mut device, (variant, feed), shape, scalars, dims, operands)?;
    c.copy_from_slice(staged_c.as_mut_slice());
    Ok(device.report)
}

/// The emulator as the [`Device`] of one TMA product: the workspace a host
/// buffer 256-byte aligned and poisoned, as the pool's allocations may be,
/// the maps the emulator's ([`TmaMap`]).
struct Emulated {
    checked: bool,
    workspace: Option<crate::emu::Aligned>,
    report: Report,
}

impl Device for Emulated {
    fn limits(&self) -> GridLimits {
        GridLimits::CUDA
    }

    fn workspace(&mut self, bytes: usize) -> Result<u64> {
        let mut ws = crate::emu::Aligned::copy_at(&vec![f32::from_bits(0x7fc0_dead); bytes.div_ceil(4)], 0);
        let base = ws.as_mut_slice().as_mut_ptr() as u64;
        self.workspace = Some(ws); // its blocks stay where they are
        Ok(base)
    }

    fn encode(&self, t: Tensor2d) -> Result<TensorMap> {
        // `run` checked both sides below 2^31.
        let ([cols, rows], [box_cols, box_rows]) = (t.dims.map(|d| d as u32), t.boxed);
        let (base, row_stride, swizzle, tf32) = (t.base, t.row_bytes, TmaSwizzle::B128, t.tf32);
        Ok(TmaMap { base, cols, rows, row_stride, box_cols, box_rows, swizzle, tf32 }.encode())
    }

    fn zero(&mut self, at: u64, words: usize) -> Result<()> {
        // SAFETY: `at` and its words lie in the workspace.
        unsafe { std::ptr::write_bytes(at as *mut u32, 0, words) };
        Ok(())
    }

    fn run(&mut self, launch: Launch) -> Result<()> {
        use coalesce_kernels::gemm::pack::{MapsOut, Marks, pack};
        use coalesce_kernels::gemm::{fixup::fixup, scale::maxima, split_k::sum_splits};
        let dims = launch.kernel().1;
        // SAFETY (each launch): the sequence's addresses are `A`, `B` and
        // the staged `C` (lengths checked by `plan`, the three apart) or lie
        // in the workspace, laid out for this shape. The closures take the
        // addresses as integers: they run on every emulated thread, and raw
        // pointers are not `Sync`.
        match launch {
            Launch::Maxima { a, b, p, out } => emu::launch(dims, |ctx| unsafe {
                maxima(ctx, (a as *const f32, b as *const f32), (p.m, p.k, p.n), out as *mut u32)
            })?,
            Launch::Pack { src, shape, to: [hi, lo], maps: (maps, words), marks: [any, lines, peaks] } => {
                emu::launch(dims, |ctx| unsafe {
                    let out = MapsOut { maps: maps as *mut TensorMap, words };
                    let marks = Marks { any: any as *mut u32, lines: lines as *mut u32, peaks: peaks as *const u32 };
                    pack(ctx, src as *const f32, (hi as *mut f32, lo as *mut f32), shape, out, marks)
                })?
            }
            Launch::Product { variant, a, b, c, p, .. } => {
                let report = emu::launch_checked(dims, |ctx| unsafe {
                    variant.run(ctx, a as *const f32, b as *const f32, c as *mut f32, p)
                })?;
                if !self.checked && !report.findings.is_empty() {
                    return Err(emu::EmuError::Checker(report.findings).into());
                }
                self.report = report;
            }
            Launch::SumSplits { parts, c, p, splits } => {
                emu::launch(dims, |ctx| unsafe { sum_splits(ctx, parts as *const f32, c as *mut f32, p, splits) })?
            }
            Launch::Fixup { a, b, c, p, marks } => emu::launch(dims, |ctx| unsafe {
                fixup(ctx, a as *const f32, b as *const f32, c as *mut f32, p, marks as *const u32)
            })?,
        }
        Ok(())
    }
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
    emulate(EMULATED_SMS, variant, (a, b, c), shape, scalars, true)
}
