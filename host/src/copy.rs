//! Typed launchers for the copy kernels (see `coalesce_kernels::copy`).

use crate::{Error, GridLimits, Result};
use coalesce_kernels::LaunchDims;
use coalesce_kernels::copy::copy_strided_dims;

#[cfg(feature = "cuda")]
use crate::{MatrixShape, Stream};
#[cfg(feature = "cuda")]
use coalesce_kernels::copy::copy_dims;
#[cfg(feature = "cuda")]
use coalesce_kernels::copy_bulk::copy_bulk_dims;
#[cfg(feature = "cuda")]
use cust::memory::{DevicePointer, DeviceSlice};

/// Checks that `dst` holds as many elements as `src`; `false` when both are
/// empty, and there is nothing to launch.
fn check_same_len(src: usize, dst: usize) -> Result<bool> {
    crate::error::same_len("copy destination", src, dst)?;
    Ok(src > 0)
}

/// `dst = src` with our own copy kernel (one 16-byte vector a thread): the
/// bandwidth roof a kernel can reach, to compare with `cuMemcpyDtoD`
/// ([`Stream::copy`]). Empty slices queue nothing.
///
/// Errors: [`Error::LengthMismatch`] if the lengths differ,
/// [`Error::Aliased`] if the slices overlap, and driver errors.
#[cfg(feature = "cuda")]
pub fn copy(stream: &Stream<'_>, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>) -> Result<()> {
    let max_blocks = stream.gpu().grid_limits().max_grid.x;
    launch_copy(stream, "copy_f32", copy_dims(src.len() as u64, max_blocks), src, dst)
}

/// One launch of a copy kernel `entry(const f32* src, f32* dst, u64 len)`
/// on the grid `dims`, once the lengths and the overlap are checked.
#[cfg(feature = "cuda")]
fn launch_copy(
    stream: &Stream<'_>, entry: &'static str, dims: LaunchDims, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>,
) -> Result<()> {
    if !check_same_len(src.len(), dst.len())? {
        return Ok(());
    }
    crate::alias::disjoint(entry, src, dst)?;
    stream.gpu().grid_limits().check(entry, &format_args!("{}-element", src.len()), dims)?;
    let args: (DevicePointer<f32>, DevicePointer<f32>, u64) =
        (src.as_device_ptr(), dst.as_device_ptr(), src.len() as u64);
    // SAFETY: both copy kernels take (const f32*, f32*, u64 len); both
    // buffers hold len floats and do not overlap (checked above); `dims`
    // carries the kernel's shared memory.
    unsafe { stream.launch(entry, dims, args) }
}

/// `dst = src` by the bulk copy engine ([`coalesce_kernels::copy_bulk`]):
/// one thread a block hands 16 KiB runs to `cp.async.bulk`, through four
/// shared buffers: 93-96% of `cuMemcpyDtoD` on an H100, 89-92% on an
/// H200, below [`copy`]'s one vector a thread (`docs/measurements/2026-11-28-copy-order` at commit f58f145).
/// The `sm_90a` module alone has it. Empty slices queue nothing.
///
/// Errors: as [`copy`], and [`Error::ArchitectureRequired`] where the loaded
/// module is not `sm_90a`.
#[cfg(feature = "cuda")]
pub fn copy_bulk(stream: &Stream<'_>, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>) -> Result<()> {
    launch_copy(stream, "copy_bulk_f32", copy_bulk_dims(src.len() as u64, stream.gpu().sm_count()), src, dst)
}

/// A strided run of `len` elements in a buffer: `offset + i * stride`. A
/// run of no elements touches nothing, so it fits any buffer (as an empty
/// PyTorch view needs no storage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub offset: usize,
    pub stride: usize,
    pub len: usize,
}

impl Strided {
    /// The device bytes from the run's first element to its last, in `buffer`
    /// (the run must have been checked against the buffer, and not be empty).
    #[cfg(feature = "cuda")]
    fn span(self, buffer: &DeviceSlice<f32>) -> (u64, u64) {
        let start = buffer.as_device_ptr().as_raw() + 4 * self.offset as u64;
        (start, start + 4 * ((self.len as u64 - 1) * self.stride as u64 + 1))
    }

    fn check(self, buffer: &'static str, buffer_len: usize) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let last = (self.len.max(1) - 1).checked_mul(self.stride).and_then(|x| x.checked_add(self.offset));
        match last {
            Some(last) if last < buffer_len => Ok(()),
            // Past usize (an offset or stride near usize::MAX): more than
            // any buffer holds.
            _ => Err(Error::LengthMismatch {
                buffer,
                shape: format!("the run {self:?}"),
                expected: last.map_or(usize::MAX, |l| l.saturating_add(1)),
                actual: buffer_len,
            }),
        }
    }
}

/// Plans [`copy_strided`] (shared with the emulator): `None` for runs of no
/// elements, once checked, as there is nothing to launch.
pub(crate) fn plan_strided(src: Strided, src_len: usize, dst: Strided, dst_len: usize) -> Result<Option<LaunchDims>> {
    if src.len != dst.len {
        return Err(Error::LengthMismatch {
            buffer: "strided destination",
            shape: format!("a run as long as the source run {src:?}"),
            expected: src.len,
            actual: dst.len,
        });
    }
    src.check("strided source", src_len)?;
    dst.check("strided destination", dst_len)?;
    // A stride of 0 writes one element from every thread: a race. (A source
    // run may repeat an element: it is only read.)
    if dst.stride == 0 && dst.len > 1 {
        return Err(Error::OverlappingOutput { kernel: "copy_strided_f32", run: format!("{dst:?}") });
    }
    if src.len == 0 {
        return Ok(None);
    }
    let len = u32::try_from(src.len).map_err(|_| Error::ShapeTooLarge {
        rows: src.len,
        cols: 1,
        why: "a strided copy is limited to u32::MAX elements".into(),
    })?;
    let dims = copy_strided_dims(len);
    GridLimits::CUDA.check("copy_strided_f32", &format_args!("{} elements", src.len), dims)?;
    Ok(Some(dims))
}

/// `dst[dst.offset + i*dst.stride] = src[src.offset + i*src.stride]`, one
/// launch. Checked: both runs stay inside their buffers, and the spans they
/// cover (first to last element) do not overlap ([`Error::Aliased`]). Runs
/// of no elements queue nothing.
#[cfg(feature = "cuda")]
pub fn copy_strided(
    stream: &Stream<'_>, src: &DeviceSlice<f32>, src_run: Strided, dst: &mut DeviceSlice<f32>, dst_run: Strided,
) -> Result<()> {
    let Some(dims) = plan_strided(src_run, src.len(), dst_run, dst.len())? else {
        return Ok(());
    };
    crate::alias::disjoint_spans("copy_strided_f32", src_run.span(src), dst_run.span(dst))?;
    let (s, d) = (src.as_device_ptr(), dst.as_device_ptr());
    // SAFETY (pointer arithmetic only): offsets checked to be inside the buffers.
    let (s, d) = unsafe { (s.add(src_run.offset), d.add(dst_run.offset)) };
    let args: (DevicePointer<f32>, u64, DevicePointer<f32>, u64, u32) =
        (s, src_run.stride as u64, d, dst_run.stride as u64, src_run.len as u32);
    // SAFETY: copy_strided_f32(const f32*, u64, f32*, u64, u32); both runs
    // checked in bounds, and the spans they cover do not overlap.
    unsafe { stream.launch("copy_strided_f32", dims, args) }
}

/// A transpose done as one [`copy_strided`] launch per
/// input column (`cols` launches), to make launch overhead visible against
/// one transpose kernel. Correct, and slow on purpose. An empty matrix
/// queues nothing.
#[cfg(feature = "cuda")]
pub fn transpose_by_column_copies(
    stream: &Stream<'_>, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape,
) -> Result<()> {
    shape.check_len("input", input.len())?;
    shape.check_len("output", output.len())?;
    if shape.is_empty() {
        return Ok(());
    }
    let (rows, cols) = (shape.rows(), shape.cols());
    for c in 0..cols {
        let column = Strided { offset: c, stride: cols, len: rows };
        let out_row = Strided { offset: c * rows, stride: 1, len: rows };
        copy_strided(stream, input, column, output, out_row)?;
    }
    Ok(())
}

/// The copies on the CPU emulator (see [`crate::emu`]).
pub mod emu {
    use super::{Strided, check_same_len, plan_strided};
    use crate::Result;
    use crate::emu::{Report, staged};
    use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};

    /// The grid of [`super::copy`] capped at 8 blocks, so that the loop
    /// past the grid wraps around even on small inputs.
    fn dims(len: usize) -> coalesce_kernels::LaunchDims {
        coalesce_kernels::copy::copy_dims(len as u64, 8)
    }

    /// [`super::copy`] on the emulator (empty slices launch nothing).
    pub fn launch(src: &[f32], dst: &mut [f32]) -> Result<()> {
        if !check_same_len(src.len(), dst.len())? {
            return Ok(());
        }
        let (s, d, len) = (SyncPtr::new(src), SyncMutPtr::new(dst), src.len() as u64);
        // SAFETY: equal lengths; `&` and `&mut` slices cannot alias.
        emu::launch(dims(src.len()), |ctx| unsafe { coalesce_kernels::copy::copy(ctx, s.get(), d.get(), len) })?;
        Ok(())
    }

    /// [`launch`] with the memory counters, on 256-byte aligned copies of the
    /// buffers: see [`crate::transpose::emu::launch_checked`]. Empty slices
    /// launch nothing: an empty report.
    pub fn launch_checked(src: &[f32], dst: &mut [f32]) -> Result<Report> {
        if !check_same_len(src.len(), dst.len())? {
            return Ok(Report::default());
        }
        let len = src.len() as u64;
        staged(dims(src.len()), [src], dst, |ctx, [s], d| {
            // SAFETY: equal lengths; the staged copies are distinct.
            unsafe { coalesce_kernels::copy::copy(ctx, s, d, len) }
        })
    }

    /// [`super::copy_bulk`] on the emulator, on a GPU of one SM (two
    /// blocks, so that each loops over its chunks).
    pub fn bulk(src: &[f32], dst: &mut [f32]) -> Result<()> {
        if !check_same_len(src.len(), dst.len())? {
            return Ok(());
        }
        let (s, d, len) = (SyncPtr::new(src), SyncMutPtr::new(dst), src.len() as u64);
        let dims = coalesce_kernels::copy_bulk::copy_bulk_dims(len, 1);
        // SAFETY: equal lengths; `&` and `&mut` slices cannot alias.
        emu::launch(dims, |ctx| unsafe { coalesce_kernels::copy_bulk::copy_bulk(ctx, s.get(), d.get(), len) })?;
        Ok(())
    }

    /// [`super::copy_strided`] on the emulator.
    pub fn strided(src: &[f32], src_run: Strided, dst: &mut [f32], dst_run: Strided) -> Result<()> {
        let Some(dims) = plan_strided(src_run, src.len(), dst_run, dst.len())? else {
            return Ok(());
        };
        let (s, d) = (SyncPtr::new(&src[src_run.offset..]), SyncMutPtr::new(&mut dst[dst_run.offset..]));
        let (ss, ds, len) = (src_run.stride as u64, dst_run.stride as u64, src_run.len as u32);
        // SAFETY: runs checked in bounds; distinct slices.
        emu::launch(dims, |ctx| unsafe { coalesce_kernels::copy::copy_strided(ctx, s.get(), ss, d.get(), ds, len) })?;
        Ok(())
    }
}
