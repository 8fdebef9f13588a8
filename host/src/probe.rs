//! Launchers for `coalesce_kernels::probe`: the machine's own numbers.

use crate::{Error, GridLimits, Result, Stream};
use coalesce_kernels::probe::{
    fma_peak_dims, fma_peak_flops, increment_dims, int8_peak_ops, tf32_peak_dims, tf32_peak_flops,
};
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};

/// `x[i] += 1` on every element: the smallest useful launch.
pub fn increment(stream: &Stream<'_>, x: &mut DeviceSlice<f32>) -> Result<()> {
    let len = u32::try_from(x.len()).ok().filter(|&n| n > 0).ok_or(Error::ShapeTooLarge {
        rows: x.len(),
        cols: 1,
        why: "increment takes 1..=u32::MAX elements".into(),
    })?;
    let dims = increment_dims(len);
    GridLimits::CUDA.check("probe_increment", &format_args!("{len} elements"), dims)?;
    let args: (DevicePointer<f32>, u32) = (x.as_device_ptr(), len);
    // SAFETY: probe_increment(f32*, u32): `x` holds `len` floats.
    unsafe { stream.launch("probe_increment", dims, args) }
}

/// The FP32 roof: a launch of independent FMA chains. Returns the number of
/// floating-point operations the launch performs; `out` must hold one float
/// per thread (see [`fma_peak_out_len`]).
pub fn fma_peak(stream: &Stream<'_>, out: &mut DeviceBuffer<f32>, blocks: u32, iters: u32) -> Result<u64> {
    let dims = fma_peak_dims(blocks);
    if out.len() as u64 != dims.grid.count() * dims.block.count() {
        return Err(Error::LengthMismatch {
            buffer: "fma_peak output",
            shape: format!("a launch of {blocks} blocks"),
            expected: fma_peak_out_len(blocks),
            actual: out.len(),
        });
    }
    GridLimits::CUDA.check("probe_fma_peak", &format_args!("{blocks} blocks"), dims)?;
    let args: (DevicePointer<f32>, u32, f32) = (out.as_device_ptr(), iters, 1.0);
    // SAFETY: probe_fma_peak(f32*, u32, f32): one output float per thread.
    unsafe { stream.launch("probe_fma_peak", dims, args)? };
    Ok(fma_peak_flops(blocks, iters))
}

/// Output length [`fma_peak`] needs for `blocks` blocks.
pub fn fma_peak_out_len(blocks: u32) -> usize {
    let d = fma_peak_dims(blocks);
    (d.grid.count() * d.block.count()) as usize
}

/// Seed of [`tf32_peak`]'s operands
/// ([`coalesce_kernels::probe::tf32_peak_operand`]): a test recomputes what
/// each thread stores from it ([`coalesce_kernels::probe::tf32_peak_expected`]).
pub const TF32_PEAK_SEED: u32 = 0x5eed;

/// The TF32 tensor-core roof: a launch of `blocks` blocks whose two
/// warpgroups each issue `iters` rounds of 4 `wgmma` `m64n256k8` from shared
/// memory. Returns the number of floating-point operations the launch
/// performs (`2 M N K` per `wgmma`); `out` must hold one float per thread
/// (see [`tf32_peak_out_len`]). `wgmma` is `sm_90a`'s alone: with another
/// module loaded this is [`Error::ArchitectureRequired`], and nothing is
/// launched.
pub fn tf32_peak(stream: &Stream<'_>, out: &mut DeviceBuffer<f32>, blocks: u32, iters: u32) -> Result<u64> {
    tensor_peak(stream, "probe_tf32_peak", out, blocks, iters)?;
    Ok(tf32_peak_flops(blocks, iters))
}

/// The INT8 tensor-core roof: [`tf32_peak`]'s launch with `wgmma`
/// `m64n256k32` of signed bytes (four times the products a round). Returns
/// the integer operations it performs (`2 M N K` per `wgmma`); `out` holds
/// one `i32` per thread ([`tf32_peak_out_len`]). `sm_90a`'s alone, as
/// [`tf32_peak`].
pub fn int8_peak(stream: &Stream<'_>, out: &mut DeviceBuffer<i32>, blocks: u32, iters: u32) -> Result<u64> {
    tensor_peak(stream, "probe_int8_peak", out, blocks, iters)?;
    Ok(int8_peak_ops(blocks, iters))
}

/// Launches the tensor-core probe `name` (`(out, iters, seed)`, the
/// geometry of [`tf32_peak_dims`]) after checking its module, `out`'s
/// length and the grid.
fn tensor_peak<T: cust::memory::DeviceCopy>(
    stream: &Stream<'_>, name: &'static str, out: &mut DeviceBuffer<T>, blocks: u32, iters: u32,
) -> Result<()> {
    stream.gpu().require(name)?;
    let dims = tf32_peak_dims(blocks);
    if out.len() != tf32_peak_out_len(blocks) {
        return Err(Error::LengthMismatch {
            buffer: "tensor-core probe output",
            shape: format!("a launch of {blocks} blocks"),
            expected: tf32_peak_out_len(blocks),
            actual: out.len(),
        });
    }
    GridLimits::CUDA.check(name, &format_args!("{blocks} blocks"), dims)?;
    let args: (DevicePointer<T>, u32, u32) = (out.as_device_ptr(), iters, TF32_PEAK_SEED);
    // SAFETY: probe_tf32_peak(f32*, u32, u32) and probe_int8_peak(i32*,
    // u32, u32): one output element per thread, their own launch geometry
    // (shared memory opted in when the Gpu opened).
    unsafe { stream.launch(name, dims, args) }
}

/// Output length [`tf32_peak`] needs for `blocks` blocks.
pub fn tf32_peak_out_len(blocks: u32) -> usize {
    let d = tf32_peak_dims(blocks);
    (d.grid.count() * d.block.count()) as usize
}
