//! Typed launchers for the nested sine, `y = sin(sin(sin(sin(x))))` (see
//! `coalesce_kernels::nested_sin` for the versions and what each costs).
//!
// GPU examples compile only with the `cuda` feature (`coalesce::init`).
#![cfg_attr(feature = "cuda", doc = "```no_run")]
#![cfg_attr(not(feature = "cuda"), doc = "```ignore")]
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.stream()?;
//! let x = gpu.upload(&vec![0.5f32; 1 << 20])?;
//! let mut y = gpu.alloc::<f32>(1 << 20)?;
//! nested_sin::fused_reduced(&stream, &x, &mut y)?;    // one launch, CUDA-accurate
//! nested_sin::unfused(&stream, &x, &mut y)?;          // four launches, the same bits
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! Every launcher takes any length (an empty slice is a no-op) and any
//! offset into a buffer; a launch's grid is sized to the array, each thread
//! taking `VECTORS_PER_THREAD` 16-byte vectors (see [`launch_dims`]).

use crate::Result;
pub use coalesce_kernels::nested_sin::{BLOCK, Variant, launch_dims, math};

#[cfg(feature = "cuda")]
use crate::{LaunchDims, Stream};
#[cfg(feature = "cuda")]
use cust::memory::{DevicePointer, DeviceSlice};

/// Checks that `output` can hold the result for `input`.
pub(crate) fn check_lengths(input_len: usize, output_len: usize) -> Result<()> {
    crate::error::same_len("output", input_len, output_len)
}

/// The launch geometry for `len` elements on this stream's GPU:
/// [`launch_dims`] up to the device's grid.
#[cfg(feature = "cuda")]
fn plan(stream: &Stream<'_>, entry: &'static str, len: usize) -> Result<LaunchDims> {
    let limits = stream.gpu().grid_limits();
    let dims = launch_dims(len as u64, limits.max_grid.x);
    limits.check(entry, &format_args!("{len}-element"), dims)?;
    Ok(dims)
}

/// One launch of `variant`'s kernel: `dst[i] = f(src[i])`.
///
/// # Safety
/// `src` and `dst` valid for `len` floats, equal or not overlapping.
#[cfg(feature = "cuda")]
unsafe fn launch_one(
    stream: &Stream<'_>, variant: Variant, src: DevicePointer<f32>, dst: DevicePointer<f32>, len: usize,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    let entry = variant.entry_point();
    let dims = plan(stream, entry, len)?;
    let args: KernelParams = (src, dst, len as u64);
    // SAFETY: every nested-sin kernel takes the registry's (const f32* src,
    // f32* dst, u64 len);
    // the caller vouches for the pointers.
    unsafe { stream.launch(entry, dims, args) }
}

/// `output = sin(sin(sin(sin(input))))` with `variant`, queued on `stream`.
/// [`Variant::Unfused`] queues four launches: `sin` into `output`, then
/// `sin` in place three times.
///
/// Errors: [`crate::Error::LengthMismatch`] if the lengths differ,
/// [`crate::Error::Aliased`] if `output` overlaps `input` (in place is
/// [`launch_in_place`]), [`crate::Error::GridTooLarge`] past the device's grid, and
/// driver errors.
#[cfg(feature = "cuda")]
pub fn launch(
    stream: &Stream<'_>, variant: Variant, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>,
) -> Result<()> {
    check_lengths(input.len(), output.len())?;
    crate::alias::disjoint(variant.entry_point(), input, output)?;
    let (src, dst, len) = (input.as_device_ptr(), output.as_device_ptr(), input.len());
    // SAFETY: both slices hold `len` floats and do not overlap (checked above).
    unsafe {
        match variant {
            Variant::Unfused => {
                launch_one(stream, variant, src, dst, len)?;
                for _ in 1..4 {
                    launch_one(stream, variant, dst, dst, len)?;
                }
                Ok(())
            }
            _ => launch_one(stream, variant, src, dst, len),
        }
    }
}

/// `data = sin(sin(sin(sin(data))))` in place with `variant`.
#[cfg(feature = "cuda")]
pub fn launch_in_place(stream: &Stream<'_>, variant: Variant, data: &mut DeviceSlice<f32>) -> Result<()> {
    let (ptr, len) = (data.as_device_ptr(), data.len());
    for _ in 0..variant.launches() {
        // SAFETY: src == dst is allowed: each element is read, then written,
        // by the same thread.
        unsafe { launch_one(stream, variant, ptr, ptr, len)? };
    }
    Ok(())
}

/// `output = sin(input)`: one launch of step 1's kernel (libdevice `sinf`).
#[cfg(feature = "cuda")]
pub fn sin(stream: &Stream<'_>, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>) -> Result<()> {
    check_lengths(input.len(), output.len())?;
    crate::alias::disjoint(Variant::Unfused.entry_point(), input, output)?;
    // SAFETY: both hold `len` floats and do not overlap (checked above).
    unsafe { launch_one(stream, Variant::Unfused, input.as_device_ptr(), output.as_device_ptr(), input.len()) }
}

/// `data = sin(data)` in place: one launch of step 1's kernel.
#[cfg(feature = "cuda")]
pub fn sin_in_place(stream: &Stream<'_>, data: &mut DeviceSlice<f32>) -> Result<()> {
    let ptr = data.as_device_ptr();
    // SAFETY: in place is allowed (see `launch_in_place`).
    unsafe { launch_one(stream, Variant::Unfused, ptr, ptr, data.len()) }
}

#[cfg(feature = "cuda")]
coalesce_kernels::nested_sin_steps!(launchers(input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>));
#[cfg(feature = "cuda")]
coalesce_kernels::nested_sin_steps!(kernel_params);

/// The same launchers on the CPU emulator (host slices, the same kernel
/// bodies and indexing). `sin` there is libdevice's algorithm ported bit for
/// bit, so results equal the GPU's except for [`Variant::Fast`], whose SFU
/// instruction the host replaces with `f32::sin`.
///
/// Every launch runs under the emulator's checker;
/// [`launch_checked`](emu::launch_checked) also returns the memory counters
/// (see [`crate::emu`]).
pub mod emu {
    use super::{Variant, check_lengths};
    use crate::Result;
    use crate::emu::{Aligned, Report, misalignment};
    use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};
    use coalesce_kernels::nested_sin::launch_dims;

    /// The emulated grid's cap: 2 blocks of 256 threads, so the loop past
    /// the grid wraps around on anything past 2048 elements.
    const MAX_BLOCKS: u32 = 2;

    fn launch_ptrs(variant: Variant, src: *const f32, dst: SyncMutPtr<f32>, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let dims = launch_dims(len as u64, MAX_BLOCKS);
        let src = src as usize; // Send + Sync; turned back into a pointer per thread.
        // SAFETY: the callers pass `len`-element slices, equal or disjoint.
        emu::launch(dims, |ctx| unsafe { variant.run(ctx, src as *const f32, dst.get(), len as u64) })?;
        Ok(())
    }

    /// [`super::launch`] on the emulator.
    pub fn launch(variant: Variant, input: &[f32], output: &mut [f32]) -> Result<()> {
        check_lengths(input.len(), output.len())?;
        let len = input.len();
        let out = SyncMutPtr::new(output);
        launch_ptrs(variant, input.as_ptr(), out, len)?;
        for _ in 1..variant.launches() {
            launch_ptrs(variant, out.get(), out, len)?;
        }
        Ok(())
    }

    /// [`launch`] with the memory counters: the [`Report`] of its launches
    /// (the checker's findings are in it, not an error), their counters
    /// summed line by line: four launches for [`Variant::Unfused`], none for
    /// an empty input. [`launches_checked`] keeps one report per launch.
    ///
    /// ```
    /// use coalesce::{emu::Op, nested_sin::{Variant, emu}};
    /// # fn main() -> coalesce::Result<()> {
    /// let input = vec![0.5f32; 4096];
    /// let mut output = vec![0.0f32; 4096];
    /// let report = emu::launch_checked(Variant::Fast, &input, &mut output)?;
    /// assert!(report.findings.is_empty());
    /// // 16-byte loads: a warp reads 512 contiguous bytes, 16 sectors.
    /// assert_eq!(report.counters.total(Op::GlobalLoad).per_request(), 16.0);
    /// # Ok(()) }
    /// ```
    pub fn launch_checked(variant: Variant, input: &[f32], output: &mut [f32]) -> Result<Report> {
        let mut all = launches_checked(variant, input, output)?.into_iter();
        let mut report = all.next().unwrap_or_default();
        all.for_each(|later| report.merge(later));
        Ok(report)
    }

    /// [`launch_checked`], one [`Report`] per kernel launch, four for
    /// [`Variant::Unfused`] (the first into `output`, the others in place),
    /// none for an empty input. The buffers are staged in copies placed as
    /// device buffers would be: 256-byte aligned, or as far past that as
    /// `input` and `output` are off 16-byte alignment, so the kernel takes
    /// the same head, vector and tail loops and counts the sectors a GPU would
    /// touch.
    pub fn launches_checked(variant: Variant, input: &[f32], output: &mut [f32]) -> Result<Vec<Report>> {
        check_lengths(input.len(), output.len())?;
        let len = input.len();
        if len == 0 {
            return Ok(Vec::new());
        }
        let dims = launch_dims(len as u64, MAX_BLOCKS);
        let mut inp = Aligned::copy_at(input, misalignment(input));
        let mut out = Aligned::copy_at(output, misalignment(output));
        let (src, dst) = (SyncPtr::new(inp.as_mut_slice()), SyncMutPtr::new(out.as_mut_slice()));
        let mut reports = Vec::with_capacity(variant.launches() as usize);
        // SAFETY: both staged copies hold `len` floats and are distinct.
        reports.push(emu::launch_checked(dims, |ctx| unsafe { variant.run(ctx, src.get(), dst.get(), len as u64) })?);
        for _ in 1..variant.launches() {
            // SAFETY: in place: each element is read, then written, by the same thread.
            let report = emu::launch_checked(dims, |ctx| unsafe {
                variant.run(ctx, dst.get().cast_const(), dst.get(), len as u64)
            })?;
            reports.push(report);
        }
        output.copy_from_slice(out.as_mut_slice());
        Ok(reports)
    }

    /// [`super::launch_in_place`] on the emulator.
    pub fn launch_in_place(variant: Variant, data: &mut [f32]) -> Result<()> {
        let len = data.len();
        let ptr = SyncMutPtr::new(data);
        for _ in 0..variant.launches() {
            launch_ptrs(variant, ptr.get(), ptr, len)?;
        }
        Ok(())
    }
}
