//! Host memory the GPU can copy from, three ways.
//!
//! | kind | how | cost |
//! | --- | --- | --- |
//! | pageable | a plain `Vec<f32>` | the driver stages every copy through its own pinned bounce buffer: slower, and never truly asynchronous |
//! | pinned at allocation | [`Gpu::pinned`] (`cuMemHostAlloc`, cust's `LockedBuffer`) | fast DMA; the memory is locked for its whole life |
//! | registered in place | [`Registered`] (`cuMemHostRegister` on memory you already have) | fast DMA without a second copy of the data |
//!
//! PyTorch's `tensor.pin_memory()` is "pin later by copying": it allocates a
//! pinned buffer and copies the pageable tensor into it, so for a moment the
//! process holds the data twice. Registering in place pins the pages where
//! they are: no copy, no second buffer (`examples/01_host_memory.rs`
//! measures both).

use crate::error::{Context as _, check};
use crate::{Error, Gpu, Result};
use cust::memory::{DeviceCopy, LockedBuffer};
use std::ffi::c_void;

impl Gpu {
    /// `len` elements of page-locked host memory, filled with `value`.
    pub fn pinned<T: DeviceCopy>(&self, len: usize, value: T) -> Result<LockedBuffer<T>> {
        self.bind()?;
        LockedBuffer::new(&value, len).map_err(|e| match e {
            cust::error::CudaError::OutOfMemory | cust::error::CudaError::InvalidMemoryAllocation => {
                Error::OutOfMemory { bytes: len.saturating_mul(size_of::<T>()) }
            }
            source => Error::Cuda { op: "cuMemHostAlloc", source },
        })
    }

    /// Page-locked host memory holding a copy of `data` (pin later by copying,
    /// as PyTorch's `pin_memory()` does: twice the memory while both exist).
    pub fn pinned_copy_of<T: DeviceCopy>(&self, data: &[T]) -> Result<LockedBuffer<T>> {
        self.bind()?;
        LockedBuffer::from_slice(data).during("cuMemHostAlloc + copy")
    }
}

/// A host slice page-locked in place with `cuMemHostRegister`, unregistered
/// when dropped. While it lives, the slice is borrowed mutably, so nothing
/// else can free or move it under a DMA.
///
/// ```no_run
/// use coalesce::memory::Registered;
/// # fn main() -> coalesce::Result<()> {
/// let gpu = coalesce::init()?;
/// let mut data = vec![1.0f32; 1 << 20];
/// let pinned = Registered::new(&gpu, &mut data)?;
/// let on_device = gpu.upload(pinned.as_slice())?; // DMA straight from `data`
/// # Ok(()) }
/// ```
pub struct Registered<'a, T> {
    data: &'a mut [T],
}

impl<'a, T: DeviceCopy> Registered<'a, T> {
    /// Page-locks `data` where it is, for `gpu`'s context.
    pub fn new(gpu: &Gpu, data: &'a mut [T]) -> Result<Self> {
        if data.is_empty() {
            return Err(Error::ZeroDimension { rows: 0, cols: 0 });
        }
        gpu.bind()?;
        let bytes = std::mem::size_of_val(data);
        // SAFETY: `data` is a live allocation of `bytes` bytes, borrowed
        // mutably for as long as the registration lasts (until drop).
        check("cuMemHostRegister", unsafe {
            cust::sys::cuMemHostRegister_v2(data.as_mut_ptr().cast::<c_void>(), bytes, 0)
        })?;
        Ok(Registered { data })
    }
    pub fn as_slice(&self) -> &[T] {
        self.data
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T> Drop for Registered<'_, T> {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; copies from it were synchronous or
        // synchronised by their owner (an async copy borrows the slice).
        // A failure here cannot be returned from drop; the pages simply stay
        // locked until the process ends.
        let _ = unsafe { cust::sys::cuMemHostUnregister(self.data.as_mut_ptr().cast::<c_void>()) };
    }
}

/// Device memory from the stream-ordered pool (`cuMemAllocAsync`), freed
/// with `cuMemFreeAsync` on the same stream when dropped.
///
/// Because allocation and free are queued on the stream like kernels, work
/// queued before the drop finishes before the memory is reused: dropping it
/// while a kernel still reads it is safe by construction, unlike `cuMemFree`
/// on memory another stream is using. Reused pool memory costs no driver
/// round trip, which is why a loop of alloc/free through the pool costs
/// about as little as reusing one buffer (examples/03_allocation.rs).
pub struct StreamBuffer<'s> {
    slice: cust::memory::DeviceSlice<f32>,
    stream: &'s crate::Stream<'s>,
}

impl<'s> StreamBuffer<'s> {
    /// `len` uninitialised floats, allocated in stream order on `stream`.
    pub fn new(stream: &'s crate::Stream<'s>, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::ZeroDimension { rows: 0, cols: 0 });
        }
        let bytes = len.checked_mul(4).ok_or(Error::OutOfMemory { bytes: usize::MAX })?;
        stream.gpu().bind()?;
        let mut ptr: cust::sys::CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; the stream handle is live.
        check("cuMemAllocAsync", unsafe { cust::sys::cuMemAllocAsync(&mut ptr, bytes, stream.as_cust().as_inner()) })
            .map_err(|e| match e {
            Error::OutOfMemory { .. } => Error::OutOfMemory { bytes },
            e => e,
        })?;
        // SAFETY: `ptr` is a fresh allocation of `len` floats, owned by self.
        let slice =
            unsafe { cust::memory::DeviceSlice::from_raw_parts_mut(cust::memory::DevicePointer::from_raw(ptr), len) };
        Ok(StreamBuffer { slice, stream })
    }
}

impl std::ops::Deref for StreamBuffer<'_> {
    type Target = cust::memory::DeviceSlice<f32>;
    fn deref(&self) -> &Self::Target {
        &self.slice
    }
}
impl std::ops::DerefMut for StreamBuffer<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.slice
    }
}

impl Drop for StreamBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAllocAsync; freed once, in stream order.
        let _ =
            unsafe { cust::sys::cuMemFreeAsync(self.slice.as_device_ptr().as_raw(), self.stream.as_cust().as_inner()) };
    }
}
