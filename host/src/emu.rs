//! The launchers of [`crate::transpose`] and friends on the CPU emulator:
//! the same checks, the same kernel bodies, host slices instead of device
//! buffers. Slow (one OS thread per CUDA thread) and meant for tests.
//!
//! Every launch runs under the emulator's checker (bounds, alignment,
//! shared-memory races, reads of unwritten shared memory, for the kernels
//! that access memory through views: the transposes, the copies, softmax,
//! the nested sine and GEMM); a launch with findings fails with
//! [`crate::Error::Emulator`] holding [`EmuError::Checker`]. The `*_checked`
//! launchers (here, and each op's `emu::*_checked`) return a [`Report`]
//! instead: the findings as values, and the memory counters of every line
//! (32-byte sectors per global request, wavefronts per shared request).
//!
//! ```
//! # fn main() -> coalesce_host::Result<()> {
//! use coalesce_host::{MatrixShape, emu, transpose::Variant};
//! let shape = MatrixShape::new(64, 64)?;
//! let input = vec![1.0f32; shape.len()];
//! let mut output = vec![0.0f32; shape.len()];
//! let report = emu::transpose_checked(Variant::Tiled, &input, &mut output, shape)?;
//! assert!(report.findings.is_empty());
//! // Step 3 reads its tile down a column: 32 lanes, one bank, 32 wavefronts.
//! assert_eq!(report.counters.total(emu::Op::SharedLoad).per_request(), 32.0);
//! # Ok(()) }
//! ```

use crate::{GridLimits, MatrixShape, Result};
use coalesce_kernels::LaunchDims;
use coalesce_kernels::emu::{self, EmuCtx, SyncMutPtr, SyncPtr};
pub use coalesce_kernels::emu::{
    Access, Counters, EmuError, Finding, FindingKind, Op, Report, Site, SiteCounters, Tally,
};
use coalesce_kernels::transpose::Variant;

/// [`crate::transpose::launch`] on the emulator. The grid is checked against
/// [`GridLimits::CUDA`], so shapes a GPU would refuse are refused here too.
pub fn transpose(variant: Variant, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<()> {
    let dims = crate::transpose::plan(variant, shape, input.len(), output.len(), &GridLimits::CUDA)?;
    let (inp, out) = (SyncPtr::new(input), SyncMutPtr::new(output));
    let (rows, cols) = (shape.rows_u32(), shape.cols_u32());
    // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
    emu::launch(dims, |ctx| unsafe { variant.run(ctx, inp.get(), out.get(), rows, cols) })?;
    Ok(())
}

/// [`transpose`] with the memory counters: returns the [`Report`] (the
/// checker's findings are in it, not an error). The buffers are staged in
/// 256-byte aligned copies, as `cuMemAlloc` aligns device buffers, so the
/// sectors are those a GPU's request would touch.
pub fn transpose_checked(variant: Variant, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<Report> {
    let dims = crate::transpose::plan(variant, shape, input.len(), output.len(), &GridLimits::CUDA)?;
    let (rows, cols) = (shape.rows_u32(), shape.cols_u32());
    staged(dims, [input], output, |ctx, [inp], out| {
        // SAFETY: lengths checked by `plan`; the staged copies are distinct.
        unsafe { variant.run(ctx, inp, out, rows, cols) }
    })
}

/// [`crate::copy::copy`] on the emulator (4 SMs' worth of blocks, so the
/// grid-stride loop wraps around even on small inputs).
pub fn copy(src: &[f32], dst: &mut [f32]) -> Result<()> {
    if src.len() != dst.len() || src.is_empty() {
        return Err(crate::Error::LengthMismatch {
            buffer: "copy destination",
            shape: format!("{}-element", src.len()),
            expected: src.len(),
            actual: dst.len(),
        });
    }
    let dims = coalesce_kernels::copy::copy_dims(src.len() as u64, 1);
    let (s, d, len) = (SyncPtr::new(src), SyncMutPtr::new(dst), src.len() as u64);
    // SAFETY: equal lengths; `&` and `&mut` slices cannot alias.
    emu::launch(dims, |ctx| unsafe { coalesce_kernels::copy::copy(ctx, s.get(), d.get(), len) })?;
    Ok(())
}

/// [`copy`] with the memory counters, on 256-byte aligned copies of the
/// buffers: see [`transpose_checked`].
pub fn copy_checked(src: &[f32], dst: &mut [f32]) -> Result<Report> {
    crate::error::same_len("copy destination", src.len(), dst.len())?;
    if src.is_empty() {
        return Err(crate::Error::ZeroDimension { rows: 0, cols: 0 });
    }
    let dims = coalesce_kernels::copy::copy_dims(src.len() as u64, 1);
    let len = src.len() as u64;
    staged(dims, [src], dst, |ctx, [s], d| {
        // SAFETY: equal lengths; the staged copies are distinct.
        unsafe { coalesce_kernels::copy::copy(ctx, s, d, len) }
    })
}

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
}

/// Floats from the last 16-byte boundary to the start of `data` (0-3): how
/// far off 16-byte alignment a device view at the same offset would be, so
/// that a staged copy takes the kernels' same path (vector or scalar).
pub(crate) fn misalignment(data: &[f32]) -> usize {
    data.as_ptr() as usize % 16 / 4
}

/// Runs `kernel(ctx, inputs, output)` under [`emu::launch_checked`] on
/// aligned copies of the `inputs` and of `output`, then copies the output
/// back.
pub(crate) fn staged<const N: usize, F>(
    dims: LaunchDims,
    inputs: [&[f32]; N],
    output: &mut [f32],
    kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    staged_at(dims, inputs.map(|i| (i, 0)), (output, 0), kernel)
}

/// [`staged`], with each copy `offset` floats past its 256-byte boundary
/// ([`Aligned::copy_at`]).
pub(crate) fn staged_at<const N: usize, F>(
    dims: LaunchDims,
    inputs: [(&[f32], usize); N],
    (output, out_offset): (&mut [f32], usize),
    kernel: F,
) -> Result<Report>
where
    F: Fn(&EmuCtx<'_>, [*const f32; N], *mut f32) + Sync,
{
    let mut inp = inputs.map(|(data, offset)| Aligned::copy_at(data, offset));
    let mut out = Aligned::copy_at(output, out_offset);
    let i = inp.each_mut().map(|a| SyncPtr::new(a.as_mut_slice()));
    let o = SyncMutPtr::new(out.as_mut_slice());
    let report = emu::launch_checked(dims, |ctx| kernel(ctx, i.map(SyncPtr::get), o.get()))?;
    output.copy_from_slice(out.as_mut_slice());
    Ok(report)
}

/// [`crate::copy::copy_strided`] on the emulator.
pub fn copy_strided(
    src: &[f32],
    src_run: crate::copy::Strided,
    dst: &mut [f32],
    dst_run: crate::copy::Strided,
) -> Result<()> {
    let dims = crate::copy::plan_strided(src_run, src.len(), dst_run, dst.len())?;
    let (s, d) = (SyncPtr::new(&src[src_run.offset..]), SyncMutPtr::new(&mut dst[dst_run.offset..]));
    let (ss, ds, len) = (src_run.stride as u64, dst_run.stride as u64, src_run.len as u32);
    // SAFETY: runs checked in bounds; distinct slices.
    emu::launch(dims, |ctx| unsafe { coalesce_kernels::copy::copy_strided(ctx, s.get(), ss, d.get(), ds, len) })?;
    Ok(())
}
