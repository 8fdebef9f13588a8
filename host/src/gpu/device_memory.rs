//! Device memory: allocating it, copying host data in and out on a stream,
//! copies on the device, and the pool the TMA steps' workspaces come from.

use super::{Gpu, Stream};
use crate::error::{Context as _, check};
use crate::{Error, Result};
use cust::error::CudaError;
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::sys;

impl Gpu {
    /// Allocates `len` uninitialised elements of device memory.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.bind()?;
        let bytes = len.saturating_mul(size_of::<T>());
        // SAFETY: the contents are uninitialised device memory; `T: DeviceCopy`
        // is plain data, so any bit pattern is a valid value.
        unsafe { DeviceBuffer::uninitialized(len) }.map_err(|e| match e {
            CudaError::OutOfMemory | CudaError::InvalidMemoryAllocation => Error::OutOfMemory { bytes },
            source => Error::Cuda { op: "cuMemAlloc", source },
        })
    }

    /// Copies a host slice into new device memory. The copy has landed when
    /// this returns, so any stream may use the buffer at once. It runs on a
    /// private non-blocking stream, never on the legacy default stream.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(host.len())?;
        // SAFETY: `buf` holds host.len() elements; the copy stream is waited
        // on before `host` can be released.
        unsafe { copy_h2d(&self.copies, host, &mut buf) }?;
        Ok(buf)
    }

    /// The pool the TMA steps' workspaces come from ([`crate::gemm::tma`]).
    pub(crate) fn workspace_pool(&self) -> Result<&crate::gemm::tma::Pool> {
        if let Some(pool) = self.pool.get() {
            return Ok(pool);
        }
        self.bind()?;
        let pool = crate::gemm::tma::Pool::new(self.ordinal())?;
        // Another thread may have made one meanwhile: its pool is kept and
        // this one destroyed.
        Ok(self.pool.get_or_init(|| pool))
    }
}

impl Stream<'_> {
    /// Copies a host slice into new device memory, queued after this
    /// stream's work; returns once the copy has landed.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.gpu().alloc(host.len())?;
        // SAFETY: `buf` holds host.len() elements.
        unsafe { copy_h2d(self.as_cust(), host, &mut buf) }?;
        Ok(buf)
    }

    /// Copies `src` into `dst`, queued after this stream's work (the kernels
    /// that write `src`); returns once `dst` holds the data.
    pub fn download<T: DeviceCopy>(&self, src: &DeviceSlice<T>, dst: &mut [T]) -> Result<()> {
        crate::error::same_len("download destination", src.len(), dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        self.gpu().bind()?;
        let (from, bytes) = (src.as_device_ptr().as_raw(), std::mem::size_of_val(dst));
        // SAFETY: equal lengths; `dst` is borrowed mutably until the stream
        // is synchronised, so nothing reads it or frees it under the DMA.
        let queued = unsafe { sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), from, bytes, self.raw()) };
        queued_then_wait("cuMemcpyDtoHAsync", queued, self.raw())
    }

    /// Copies `src` into `dst` on the device (`cuMemcpyDtoDAsync`), queued on
    /// this stream: the bandwidth roof every memory-bound kernel is measured against.
    ///
    /// Errors: [`Error::LengthMismatch`], and [`Error::Aliased`] when the two
    /// ranges overlap.
    pub fn copy(&self, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>) -> Result<()> {
        crate::error::same_len("copy destination", src.len(), dst.len())?;
        crate::alias::disjoint("cuMemcpyDtoDAsync", src, dst)?;
        self.gpu().bind()?;
        // SAFETY: both slices are live device memory of equal length that do
        // not overlap; the copy is ordered on this stream like any kernel.
        unsafe { dst.async_copy_from(src, self.as_cust()) }.during("cuMemcpyDtoDAsync")
    }
}

/// Copies `host` into `dst` on `stream` and waits for it.
///
/// # Safety
/// `dst` holds at least `host.len()` elements.
unsafe fn copy_h2d<T: DeviceCopy>(stream: &cust::stream::Stream, host: &[T], dst: &mut DeviceSlice<T>) -> Result<()> {
    if host.is_empty() {
        return Ok(());
    }
    let (to, bytes) = (dst.as_device_ptr().as_raw(), std::mem::size_of_val(host));
    // SAFETY: the caller vouches for the size of `dst`; `host` is borrowed
    // until the stream is synchronised, so a page-locked source that the DMA
    // reads late is still alive.
    let queued = unsafe { sys::cuMemcpyHtoDAsync_v2(to, host.as_ptr().cast(), bytes, stream.as_inner()) };
    queued_then_wait("cuMemcpyHtoDAsync", queued, stream.as_inner())
}

/// The result of queueing a copy on `stream`, then the wait for it.
fn queued_then_wait(op: &'static str, queued: sys::CUresult, stream: sys::CUstream) -> Result<()> {
    check(op, queued)?;
    // SAFETY: a live stream.
    check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream) })
}
