//! Typed launchers for the transpose kernels (see `coalesce_kernels::transpose`).
//!
// GPU examples compile only with the `cuda` feature (`coalesce::init`).
#![cfg_attr(feature = "cuda", doc = "```no_run")]
#![cfg_attr(not(feature = "cuda"), doc = "```ignore")]
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.stream()?;
//! let shape = MatrixShape::new(1000, 3000)?;
//! let input = gpu.upload(&vec![1.0f32; shape.len()])?;
//! let mut output = gpu.alloc::<f32>(shape.len())?;
//! transpose::padded(&stream, &input, &mut output, shape)?;
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use crate::limits::plan_matrix;
use crate::{GridLimits, LaunchDims, MatrixShape, Result};
pub use coalesce_kernels::transpose::{BLOCK_ROWS, TILE, Variant};

#[cfg(feature = "cuda")]
use crate::{Stream, gpu::launch_matrix};
#[cfg(feature = "cuda")]
use cust::memory::DeviceSlice;

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns the launch geometry, or `None` for an empty matrix (nothing to
/// launch). Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant, shape: MatrixShape, input_len: usize, output_len: usize, limits: &GridLimits,
) -> Result<Option<LaunchDims>> {
    let dims = variant.launch_dims(shape.rows_u32(), shape.cols_u32());
    plan_matrix(variant.entry_point(), dims, shape, (input_len, output_len), limits)
}

/// Transposes the `shape` matrix in `input` into `output` (`shape.t()`),
/// with the given version, queued on `stream`. An empty matrix (0 rows or 0
/// columns) queues nothing and returns `Ok` once the buffers match it.
///
/// Errors: [`crate::Error::LengthMismatch`] if a buffer does not hold exactly
/// `shape.len()` elements, [`crate::Error::GridTooLarge`] if the shape needs
/// more blocks than the device allows, [`crate::Error::Aliased`] when the
/// output overlaps the input, and driver errors from the launch itself.
#[cfg(feature = "cuda")]
pub fn launch(
    stream: &Stream<'_>, variant: Variant, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape,
) -> Result<()> {
    let dims = plan(variant, shape, input.len(), output.len(), &stream.gpu().grid_limits())?;
    launch_matrix(stream, (variant.entry_point(), 1), dims, input, output, shape)
}

#[cfg(feature = "cuda")]
coalesce_kernels::transpose_steps!(
    launchers(input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape)
);
#[cfg(feature = "cuda")]
coalesce_kernels::transpose_steps!(kernel_params);

/// The transposes on the CPU emulator (see [`crate::emu`]): the same checks
/// against [`GridLimits::CUDA`], so shapes a GPU would refuse are refused
/// here too, the same kernel bodies, host slices instead of device buffers.
pub mod emu {
    use super::{Variant, plan};
    use crate::emu::{Report, launch_matrix, launch_matrix_checked};
    use crate::{GridLimits, MatrixShape, Result};

    /// [`super::launch`] on the emulator (an empty matrix launches nothing).
    pub fn launch(variant: Variant, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<()> {
        let dims = plan(variant, shape, input.len(), output.len(), &GridLimits::CUDA)?;
        // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
        launch_matrix((dims, 1), input, output, shape, |ctx, i, o, r, c| unsafe { variant.run(ctx, i, o, r, c) })
    }

    /// [`launch`] with the memory counters: returns the [`Report`] (the
    /// checker's findings are in it, not an error). The buffers are staged in
    /// 256-byte aligned copies, as `cuMemAlloc` aligns device buffers, so the
    /// sectors are those a GPU's request would touch. An empty matrix
    /// launches nothing: an empty report.
    ///
    /// ```
    /// use coalesce::{MatrixShape, emu::Op, transpose::{Variant, emu}};
    /// # fn main() -> coalesce::Result<()> {
    /// let shape = MatrixShape::new(64, 64)?;
    /// let input = vec![1.0f32; shape.len()];
    /// let mut output = vec![0.0f32; shape.len()];
    /// let report = emu::launch_checked(Variant::Tiled, &input, &mut output, shape)?;
    /// assert!(report.findings.is_empty());
    /// // Step 3 reads its tile down a column: 32 lanes, one bank, 32 wavefronts.
    /// assert_eq!(report.counters.total(Op::SharedLoad).per_request(), 32.0);
    /// # Ok(()) }
    /// ```
    pub fn launch_checked(variant: Variant, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<Report> {
        let dims = plan(variant, shape, input.len(), output.len(), &GridLimits::CUDA)?;
        // SAFETY: lengths checked by `plan`; the staged copies are distinct.
        launch_matrix_checked((dims, 1), (input, 0), (output, 0), shape, |ctx, i, o, r, c| unsafe {
            variant.run(ctx, i, o, r, c)
        })
    }
}
