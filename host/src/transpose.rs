//! Typed launchers for the transpose kernels (see `coalesce_kernels::transpose`).
//!
//! ```no_run
//! # fn main() -> coalesce_host::Result<()> {
//! # let ptx = "";
//! use coalesce_host::{Gpu, MatrixShape, transpose};
//! let gpu = Gpu::load(ptx)?;
//! let stream = gpu.stream()?;
//! let shape = MatrixShape::new(1000, 3000)?;
//! let input = gpu.upload(&vec![1.0f32; shape.len()])?;
//! let mut output = gpu.alloc::<f32>(shape.len())?;
//! transpose::padded(&stream, &input, &mut output, shape)?;
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use crate::gpu::{launch_matrix, plan_matrix};
use crate::{GridLimits, LaunchDims, MatrixShape, Result, Stream};
pub use coalesce_kernels::transpose::{BLOCK_ROWS, TILE, Variant};

use cust::memory::DeviceSlice;

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns the launch geometry. Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant,
    shape: MatrixShape,
    input_len: usize,
    output_len: usize,
    limits: &GridLimits,
) -> Result<LaunchDims> {
    let dims = variant.launch_dims(shape.rows_u32(), shape.cols_u32());
    plan_matrix(variant.entry_point(), dims, shape, (input_len, output_len), limits)
}

/// Transposes the `shape` matrix in `input` into `output` (`shape.t()`),
/// with the given version, queued on `stream`.
///
/// Errors: [`crate::Error::LengthMismatch`] if a buffer does not hold exactly
/// `shape.len()` elements, [`crate::Error::GridTooLarge`] if the shape needs
/// more blocks than the device allows, [`crate::Error::Aliased`] when the
/// output overlaps the input, and driver errors from the launch itself.
pub fn launch(
    stream: &Stream<'_>,
    variant: Variant,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    shape: MatrixShape,
) -> Result<()> {
    let dims = plan(variant, shape, input.len(), output.len(), &stream.gpu().grid_limits())?;
    launch_matrix(stream, variant.entry_point(), dims, input, output, shape)
}

coalesce_kernels::transpose_steps!(
    launchers(input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape)
);
