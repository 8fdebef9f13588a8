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
