//! The launchers of [`crate::transpose`] and friends on the CPU emulator:
//! the same checks, the same kernel bodies, host slices instead of device
//! buffers. Slow (one OS thread per CUDA thread) and meant for tests.

use crate::{GridLimits, MatrixShape, Result};
use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};
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
