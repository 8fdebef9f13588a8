//! The CPU emulator's side of the launchers: each op's `emu` module
//! ([`crate::transpose::emu`], [`crate::copy::emu`],
//! [`crate::nested_sin::emu`], [`crate::softmax::emu`], [`crate::gemm::emu`])
//! has the same two launchers, `launch` and `launch_checked`, with the GPU
//! launcher's arguments less the stream, on host slices. They run the same
//! checks and the same kernel bodies; they need no GPU and no CUDA (this
//! module builds without the `cuda` feature). Slower than the GPU by orders of
//! magnitude (every access is checked and counted): small shapes.
//!
//! Every launch runs under the emulator's checker (bounds, alignment,
//! shared-memory races, reads of unwritten shared memory); a launch with
//! findings fails with [`crate::Error::Emulator`] holding
//! [`EmuError::Checker`]. `launch_checked` returns a [`Report`] instead:
//! the findings as values, and the memory counters of every line (32-byte
//! sectors per global request, wavefronts per shared request), each with
//! one warp's request as a sample, which [`picture`] draws.
//!
//! Kernels of your own run through [`staged`] (or [`staged_with`], with
//! [`Options`]: a schedule, a step limit, a race shadow across blocks), on
//! staged copies of their buffers, each registered as one of the launch's
//! allocations: an access that leaves the data is refused and reported,
//! and the views' safe methods (`get`, `set`, ..) reach nothing else. An
//! endless loop ends at the step limit ([`EmuError::StepLimit`]), a panic
//! is one error ([`EmuError::Panicked`]).
//!
//! ```
//! use coalesce::{MatrixShape, emu::Op, transpose::{Variant, emu}};
//! # fn main() -> coalesce::Result<()> {
//! let shape = MatrixShape::new(64, 64)?;
//! let input = vec![1.0f32; shape.len()];
//! let mut output = vec![0.0f32; shape.len()];
//! let report = emu::launch_checked(Variant::Tiled, &input, &mut output, shape)?;
//! assert!(report.findings.is_empty());
//! // Step 3 reads its tile down a column: 32 lanes, one bank, 32 wavefronts.
//! assert_eq!(report.counters.total(Op::SharedLoad).per_request(), 32.0);
//! # Ok(()) }
//! ```

pub mod picture;

use crate::{MatrixShape, Result};
use coalesce_kernels::LaunchDims;
use coalesce_kernels::emu::{self, EmuCtx, SyncMutPtr, SyncPtr};
pub use coalesce_kernels::emu::{
    Access, Counters, EmuError, Finding, FindingKind, LaneAccess, Op, Options, Report, STEP_LIMIT, Schedule, Site,
    SiteCounters, Tally, bank_ways, launch_with, request_cost,
};

/// Host floats aligned as `cuMemAlloc`'s device buffers are (256 bytes):
/// the `*_checked` launchers stage their buffers in these, so that the
/// counted sectors are those of the GPU's requests.
pub(crate) struct Aligned {
    blocks: Vec<Block>,
    /// Floats before the data: the data is a view `offset` floats into a
    /// device buffer.
    offset: usize,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(256))]
struct Block([f32; 64]);

impl Aligned {
    /// `data` copied `offset` floats past the 256-byte boundary, as a view
    /// that far into a device buffer lies.
    pub(crate) fn copy_at(data: &[f32], offset: usize) -> Aligned {
        let blocks = vec![Block([0.0; 64]); (offset + data.len()).div_ceil(64)];
        let mut aligned = Aligned { blocks, offset, len: data.len() };
        aligned.as_mut_slice().copy_from_slice(data);
        aligned
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        // SAFETY: `blocks` holds at least `offset + len` contiguous f32s (a
        // Block is 64 of them with no padding: 256 bytes, align 256).
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<f32>().add(self.offset), self.len) }
    }

    /// The data's pointer, to read and write through, and its bytes as an
    /// allocation of the launch ([`Options::allocations`]): exactly the
    /// data, not the padding around it, so that an access past its end is
    /// refused. The cast to an address exposes the pointer's provenance,
    /// which the emulator's safe accesses go through.
    fn registered(&mut self) -> (SyncMutPtr<f32>, std::ops::Range<usize>) {
        let data = self.as_mut_slice();
        let start = data.as_mut_ptr() as usize;
        let bytes = std::mem::size_of_val(data);
        (SyncMutPtr::new(data), start..start + bytes)
    }
}

/// Floats from the last 16-byte boundary to the start of `data` (0-3): how
/// far off 16-byte alignment a device view at the same offset would be, so
/// that a staged copy takes the kernels' same path (vector or scalar).
pub(crate) fn misalignment(data: &[f32]) -> usize {
    data.as_ptr() as usize % 16 / 4
}

/// Runs `kernel(ctx, inputs, output)` under [`emu::launch_checked`] on
/// aligned copies of the `inputs` and of `output` (256-byte aligned, as
/// `cuMemAlloc`'s buffers are, so that the counted sectors are a GPU's),
/// then copies the output back: the launcher of every op's
/// `launch_checked`, and of kernels of your own (the exercises of
/// `coalesce-learn`). The copies' data, exactly, are the launch's
/// allocations ([`Options::allocations`]): an access through a view that
/// leaves them is refused and reported
/// ([`FindingKind::OutsideAllocation`]), and the views' safe methods
/// ([`coalesce_kernels::mem::Checked`]) reach them and nothing else.
pub fn staged<const N: usize, F>(dims: LaunchDims, inputs: [&[f32]; N], output: &mut [f32], kernel: F) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    staged_at((dims, 1), inputs.map(|i| (i, 0)), (output, 0), kernel)
}

/// [`staged`] with the caller's `options` ([`launch_with`]): its schedule,
/// step limit and race shadow, and its allocations, to which the staged
/// copies' are added.
pub fn staged_with<const N: usize, F>(
    dims: LaunchDims, options: Options, inputs: [&[f32]; N], output: &mut [f32], kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    staged_in((dims, 1), options, inputs.map(|i| (i, 0)), (output, 0), kernel)
}

/// [`staged`], with each copy `offset` floats past its 256-byte boundary
/// ([`Aligned::copy_at`]).
pub(crate) fn staged_at<const N: usize, F>(
    (dims, cluster): (LaunchDims, u32), inputs: [(&[f32], usize); N], output: (&mut [f32], usize), kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    staged_in((dims, cluster), Options::default(), inputs, output, kernel)
}

/// [`staged_at`] with `options`, the staged copies added to its allocations.
fn staged_in<const N: usize, F>(
    (dims, cluster): (LaunchDims, u32), mut options: Options, inputs: [(&[f32], usize); N],
    (output, out_offset): (&mut [f32], usize), kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    let mut inp = inputs.map(|(data, offset)| Aligned::copy_at(data, offset));
    let mut out = Aligned::copy_at(output, out_offset);
    // Pointers that may write, inputs too: a safe store through a view of
    // an input lands in its copy, which the launch owns.
    let i = inp.each_mut().map(|a| {
        let (p, range) = a.registered();
        // SAFETY: the copy is the launch's alone, alive until it returns,
        // its address taken with `as usize` (provenance exposed).
        unsafe { options.register(range) };
        p
    });
    let (o, range) = out.registered();
    // SAFETY: as the inputs' copies.
    unsafe { options.register(range) };
    let report =
        emu::launch_with(dims, cluster, &options, |ctx| kernel(ctx, i.map(|p| p.get().cast_const()), o.get()))?;
    output.copy_from_slice(out.as_mut_slice());
    Ok(report)
}

/// The `launch` of the matrix ops' `emu` modules (transpose, softmax):
/// `kernel(ctx, input, output, rows, cols)` on `shape` matrices whose
/// lengths the op's `plan` has checked, over `dims` (`None`: an empty
/// matrix, nothing to launch) in clusters of `cluster` blocks (1: none).
pub(crate) fn launch_matrix<F>(
    (dims, cluster): (Option<LaunchDims>, u32), input: &[f32], output: &mut [f32], shape: MatrixShape, kernel: F,
) -> Result<()>
where
    F: Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync,
{
    let Some(dims) = dims else { return Ok(()) };
    let (inp, out) = (SyncPtr::new(input), SyncMutPtr::new(output));
    let (rows, cols) = (shape.rows_u32(), shape.cols_u32());
    emu::launch_cluster(dims, cluster, |ctx| kernel(ctx, inp.get(), out.get(), rows, cols))?;
    Ok(())
}

/// The `launch_checked` of the matrix ops' `emu` modules: [`launch_matrix`]
/// on copies staged each `offset` floats past its 256-byte boundary
/// ([`staged_at`]); an empty matrix launches nothing: an empty report.
pub(crate) fn launch_matrix_checked<F>(
    (dims, cluster): (Option<LaunchDims>, u32), input: (&[f32], usize), output: (&mut [f32], usize),
    shape: MatrixShape, kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync,
{
    let Some(dims) = dims else { return Ok(Report::default()) };
    let (rows, cols) = (shape.rows_u32(), shape.cols_u32());
    staged_at((dims, cluster), [input], output, |ctx, [inp], out| kernel(ctx, inp, out, rows, cols))
}
