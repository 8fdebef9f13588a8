//! Device memory: allocating it, copying host data in and out on a stream,
//! copies on the device, and the pool the TMA steps' workspaces come from.
//!
//! A workspace comes from a memory pool of the `Gpu`'s own, allocated and
//! freed in stream order (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`): a
//! launch's workspace is free again once the product that reads it has run,
//! without a host synchronisation, and inside a CUDA graph capture it
//! becomes the graph's own allocation, so two graphs, or a graph and direct
//! launches, never share one. The pool keeps freed memory for reuse
//! (release threshold: all of it) instead of returning it to the driver at
//! every synchronisation, which the device's default pool does; that would
//! remap a product's workspace on every call.

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

    /// The pool the TMA steps' workspaces come from ([`Workspace`]).
    pub(crate) fn workspace_pool(&self) -> Result<&Pool> {
        if let Some(pool) = self.pool.get() {
            return Ok(pool);
        }
        self.bind()?;
        let pool = Pool::new(self.ordinal())?;
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

/// The `Gpu`'s workspace pool (see the module doc).
pub(crate) struct Pool(sys::CUmemoryPool);
// SAFETY: a driver handle, usable from any thread of the process.
unsafe impl Send for Pool {}
// SAFETY: as above; the driver serialises its own pool operations.
unsafe impl Sync for Pool {}

impl Pool {
    pub(crate) fn new(ordinal: u32) -> Result<Pool> {
        // SAFETY: a zeroed struct is the documented default for the fields
        // not set below.
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ordinal as i32;
        let mut pool = std::ptr::null_mut();
        // SAFETY: out-pointer and filled properties.
        check("cuMemPoolCreate", unsafe { sys::cuMemPoolCreate(&mut pool, &props) })?;
        let pool = Pool(pool);
        let mut keep = u64::MAX;
        // SAFETY: a live pool; the attribute takes a u64.
        check("cuMemPoolSetAttribute", unsafe {
            sys::cuMemPoolSetAttribute(
                pool.0,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast(),
            )
        })?;
        Ok(pool)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: our pool; the driver defers the destruction until the
        // allocations still queued for freeing are freed.
        let _ = unsafe { sys::cuMemPoolDestroy(self.0) };
    }
}

/// Device memory from the `Gpu`'s pool, allocated on a stream and freed on
/// it when dropped, after the work queued before the drop.
pub(crate) struct Workspace<'s> {
    base: sys::CUdeviceptr,
    stream: &'s Stream<'s>,
}

impl<'s> Workspace<'s> {
    /// `bytes` bytes (256-byte aligned) in stream order on `stream`.
    pub(crate) fn new(stream: &'s Stream<'s>, bytes: usize) -> Result<Self> {
        let pool = stream.gpu().workspace_pool()?;
        stream.gpu().bind()?;
        let mut base = 0;
        // SAFETY: out-pointer, our pool, a live stream.
        let r = unsafe { sys::cuMemAllocFromPoolAsync(&mut base, bytes, pool.0, stream.raw()) };
        check("cuMemAllocFromPoolAsync", r).map_err(|e| match e {
            Error::OutOfMemory { .. } => Error::OutOfMemory { bytes },
            e => e,
        })?;
        Ok(Workspace { base, stream })
    }
    pub(crate) fn base(&self) -> u64 {
        self.base
    }
}

impl Drop for Workspace<'_> {
    fn drop(&mut self) {
        // SAFETY: our allocation, freed once, in order after the work that
        // uses it (queued on this stream before the drop).
        let _ = unsafe { sys::cuMemFreeAsync(self.base, self.stream.raw()) };
    }
}
