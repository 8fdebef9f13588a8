//! Typed launchers for the copy kernels (see `coalesce_kernels::copy`).

use crate::gpu::arg;
use crate::{Error, GridLimits, MatrixShape, Result, Stream};
use coalesce_kernels::LaunchDims;
use coalesce_kernels::copy::{copy_dims, copy_strided_dims};
use cust::memory::DeviceSlice;

fn check_same_len(src: usize, dst: usize) -> Result<()> {
    crate::error::same_len("copy destination", src, dst)?;
    if src == 0 {
        return Err(Error::ZeroDimension { rows: 0, cols: 0 });
    }
    Ok(())
}

/// `dst = src` with our own copy kernel (16-byte accesses, grid-stride): the
/// bandwidth roof a kernel can reach, to compare with `cuMemcpyDtoD`
/// ([`Stream::copy`]).
pub fn copy(stream: &Stream<'_>, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>) -> Result<()> {
    check_same_len(src.len(), dst.len())?;
    crate::alias::disjoint("copy_f32", src, dst)?;
    let dims = copy_dims(src.len() as u64, stream.gpu().sm_count());
    let (mut s, mut d, mut len) = (src.as_device_ptr(), dst.as_device_ptr(), src.len() as u64);
    let args = [arg(&mut s), arg(&mut d), arg(&mut len)];
    // SAFETY: copy_f32(const f32*, f32*, u64 len); both hold len floats and
    // do not overlap (checked above).
    unsafe { stream.launch_raw("copy_f32", dims, &args) }
}

/// A strided run of `len` elements in a buffer: `offset + i * stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub offset: usize,
    pub stride: usize,
    pub len: usize,
}

impl Strided {
    /// The device bytes from the run's first element to its last, in `buffer`
    /// (the run must have been checked against the buffer).
    fn span(self, buffer: &DeviceSlice<f32>) -> (u64, u64) {
        let start = buffer.as_device_ptr().as_raw() + 4 * self.offset as u64;
        (start, start + 4 * ((self.len as u64 - 1) * self.stride as u64 + 1))
    }

    fn check(self, buffer: &'static str, buffer_len: usize) -> Result<()> {
        let last = (self.len.max(1) - 1).checked_mul(self.stride).and_then(|x| x.checked_add(self.offset));
        match last {
            Some(last) if self.len > 0 && last < buffer_len => Ok(()),
            _ => Err(Error::LengthMismatch {
                buffer,
                shape: format!("{self:?}"),
                expected: last.map_or(usize::MAX, |l| l + 1),
                actual: buffer_len,
            }),
        }
    }
}

/// Plans [`copy_strided`] (shared with the emulator).
pub(crate) fn plan_strided(src: Strided, src_len: usize, dst: Strided, dst_len: usize) -> Result<LaunchDims> {
    if src.len != dst.len {
        return Err(Error::LengthMismatch {
            buffer: "strided destination",
            shape: format!("{src:?}"),
            expected: src.len,
            actual: dst.len,
        });
    }
    src.check("strided source", src_len)?;
    dst.check("strided destination", dst_len)?;
    let len = u32::try_from(src.len).map_err(|_| Error::ShapeTooLarge {
        rows: src.len,
        cols: 1,
        why: "a strided copy is limited to u32::MAX elements",
    })?;
    let dims = copy_strided_dims(len);
    GridLimits::CUDA.check("copy_strided_f32", &format_args!("{} elements", src.len), dims)?;
    Ok(dims)
}

/// `dst[dst.offset + i*dst.stride] = src[src.offset + i*src.stride]`, one
/// launch. Checked: both runs stay inside their buffers, and the spans they
/// cover (first to last element) do not overlap ([`Error::Aliased`]).
pub fn copy_strided(
    stream: &Stream<'_>,
    src: &DeviceSlice<f32>,
    src_run: Strided,
    dst: &mut DeviceSlice<f32>,
    dst_run: Strided,
) -> Result<()> {
    let dims = plan_strided(src_run, src.len(), dst_run, dst.len())?;
    crate::alias::disjoint_spans("copy_strided_f32", src_run.span(src), dst_run.span(dst))?;
    let (s, d) = (src.as_device_ptr(), dst.as_device_ptr());
    // SAFETY (pointer arithmetic only): offsets checked to be inside the buffers.
    let (mut s, mut d) = unsafe { (s.add(src_run.offset), d.add(dst_run.offset)) };
    let (mut ss, mut ds, mut len) = (src_run.stride as u64, dst_run.stride as u64, src_run.len as u32);
    let args = [arg(&mut s), arg(&mut ss), arg(&mut d), arg(&mut ds), arg(&mut len)];
    // SAFETY: copy_strided_f32(const f32*, u64, f32*, u64, u32); both runs
    // checked in bounds, and the spans they cover do not overlap.
    unsafe { stream.launch_raw("copy_strided_f32", dims, &args) }
}

/// A transpose done as one [`copy_strided`] launch per
/// input column (`cols` launches), to make launch overhead visible against
/// one transpose kernel. Correct, and slow on purpose.
pub fn transpose_by_column_copies(
    stream: &Stream<'_>,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    shape: MatrixShape,
) -> Result<()> {
    shape.check_len("input", input.len())?;
    shape.check_len("output", output.len())?;
    let (rows, cols) = (shape.rows(), shape.cols());
    for c in 0..cols {
        let column = Strided { offset: c, stride: cols, len: rows };
        let out_row = Strided { offset: c * rows, stride: 1, len: rows };
        copy_strided(stream, input, column, output, out_row)?;
    }
    Ok(())
}
