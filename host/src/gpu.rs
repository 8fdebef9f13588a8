//! The device, its context, the loaded kernel module, and streams.

use crate::error::Context as _;
use crate::{Dim3, Error, LaunchDims, Result};
use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::StreamFlags;
use std::ffi::c_void;

/// The largest grid a launch may use. CUDA's limits since compute capability
/// 3.0; [`Gpu::grid_limits`] reads the device's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridLimits {
    pub max_grid: Dim3,
    pub max_threads_per_block: u32,
    /// Dynamic shared memory a block may have without opting in (48 KiB).
    pub max_shared_bytes_per_block: u32,
    /// Dynamic shared memory a block may opt in to
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: 227 KiB on
    /// an H100). [`Gpu::load`] opts in the kernels of
    /// `coalesce_kernels::OPT_IN_SHARED`.
    pub max_shared_bytes_optin: u32,
}

impl GridLimits {
    /// The limits every CUDA GPU of compute capability 3.0 or later has,
    /// with the opt-in shared memory of sm_90 (the default build target): the
    /// emulator enforces these, so that CPU tests reject what an H100 would.
    pub const CUDA: GridLimits = GridLimits {
        max_grid: Dim3::new(i32::MAX as u32, 65_535, 65_535),
        max_threads_per_block: 1024,
        max_shared_bytes_per_block: 48 * 1024,
        max_shared_bytes_optin: 227 * 1024,
    };

    /// Checks a launch against these limits.
    pub(crate) fn check(&self, kernel: &'static str, shape: &dyn std::fmt::Display, dims: LaunchDims) -> Result<()> {
        let (g, m) = (dims.grid, self.max_grid);
        if g.x > m.x || g.y > m.y || g.z > m.z {
            return Err(Error::GridTooLarge { kernel, shape: shape.to_string(), grid: g, limit: m });
        }
        debug_assert!(dims.block.count() <= self.max_threads_per_block as u64);
        // The opt-in list is consulted only past 48 KiB: every launch passes
        // here, and almost none asks for that much.
        if dims.shared_bytes <= self.max_shared_bytes_per_block {
            return Ok(());
        }
        let limit = if coalesce_kernels::OPT_IN_SHARED.contains(&kernel) {
            self.max_shared_bytes_optin
        } else {
            self.max_shared_bytes_per_block
        };
        if dims.shared_bytes > limit {
            return Err(Error::SharedMemoryTooLarge {
                kernel,
                shape: shape.to_string(),
                bytes: dims.shared_bytes,
                limit,
            });
        }
        Ok(())
    }
}

/// A CUDA device with a context and the kernel module loaded.
///
/// Create one per process (it owns the context); everything else borrows it.
pub struct Gpu {
    // Field order is drop order: the module must go before its context.
    module: Module,
    /// Every kernel of the module, looked up once at load.
    functions: std::collections::HashMap<&'static str, KernelHandle>,
    device: Device,
    limits: GridLimits,
    name: String,
    sm_count: u32,
    _context: Context,
}

/// Whether a driver error means "there is no GPU here" rather than a fault.
fn means_no_device(e: CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDevice | CudaError::InvalidDevice | CudaError::NotInitialized | CudaError::UnknownError
    ) || e as u32 == 34 // CUDA_ERROR_STUB_LIBRARY: linked against the toolkit's stub
        || e as u32 == 35 // CUDA_ERROR_INSUFFICIENT_DRIVER
}

impl Gpu {
    /// Initialises the driver, makes a context on device 0 and loads `ptx`
    /// (for this crate's kernels: `coalesce::PTX`).
    ///
    /// Returns [`Error::NoDevice`] on a machine without a usable GPU.
    pub fn load(ptx: &str) -> Result<Gpu> {
        let no_device = |e: CudaError| {
            if means_no_device(e) {
                Error::NoDevice { reason: e.to_string() }
            } else {
                Error::Cuda { op: "cuInit", source: e }
            }
        };
        cust::init(cust::CudaFlags::empty()).map_err(no_device)?;
        if Device::num_devices().map_err(no_device)? == 0 {
            return Err(Error::NoDevice { reason: "the driver reports 0 devices".into() });
        }
        let device = Device::get_device(0).during("cuDeviceGet")?;
        let context = Context::new(device).during("cuCtxCreate")?;
        let attr = |a| device.get_attribute(a).during("cuDeviceGetAttribute").map(|v| v as u32);
        let limits = GridLimits {
            max_grid: Dim3::new(
                attr(DeviceAttribute::MaxGridDimX)?,
                attr(DeviceAttribute::MaxGridDimY)?,
                attr(DeviceAttribute::MaxGridDimZ)?,
            ),
            max_threads_per_block: attr(DeviceAttribute::MaxThreadsPerBlock)?,
            max_shared_bytes_per_block: attr(DeviceAttribute::MaxSharedMemoryPerBlock)?,
            max_shared_bytes_optin: {
                let mut v = 0i32;
                // SAFETY: an out-pointer to a local and a valid device.
                crate::error::check("cuDeviceGetAttribute", unsafe {
                    cust::sys::cuDeviceGetAttribute(
                        &mut v,
                        cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                        device.as_raw(),
                    )
                })?;
                v as u32
            },
        };
        let sm_count = attr(DeviceAttribute::MultiprocessorCount)?;
        let name = device.name().during("cuDeviceGetName")?;
        let module = Module::from_ptx(ptx, &[]).during("cuModuleLoadData (PTX JIT)")?;
        // Look every kernel up once: a launch then costs no
        // cuModuleGetFunction (part of the per-launch overhead measured in
        // examples/04_launch_overhead.rs).
        let functions = coalesce_kernels::entry_points()
            .map(|name| {
                let f = module.get_function(name).map_err(|_| Error::MissingKernel { name })?;
                Ok((name, KernelHandle(f.to_raw())))
            })
            .collect::<Result<std::collections::HashMap<_, _>>>()?;
        // Kernels that may use more than 48 KiB of dynamic shared memory must
        // say so once (CUDA's opt-in); the launch checks then enforce the
        // device's opt-in limit.
        for &name in coalesce_kernels::OPT_IN_SHARED {
            let f = functions.get(name).ok_or(Error::MissingKernel { name })?;
            // SAFETY: a live function handle of the module we own.
            crate::error::check("cuFuncSetAttribute", unsafe {
                cust::sys::cuFuncSetAttribute(
                    f.0,
                    cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    limits.max_shared_bytes_optin as i32,
                )
            })?;
        }
        Ok(Gpu { module, functions, device, limits, name, sm_count, _context: context })
    }

    /// The device's marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    /// The device's grid and block limits.
    pub fn grid_limits(&self) -> GridLimits {
        self.limits
    }
    /// The underlying `cust` device.
    pub fn device(&self) -> Device {
        self.device
    }
    /// The loaded module, for launching kernels by hand with `cust`.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// A new stream. It synchronises with the legacy default stream, so a
    /// plain (synchronous) `copy_to` after a launch sees the kernel's result.
    pub fn stream(&self) -> Result<Stream<'_>> {
        let inner = cust::stream::Stream::new(StreamFlags::DEFAULT, None).during("cuStreamCreate")?;
        Ok(Stream { inner, gpu: self })
    }

    /// A stream that does not synchronise with the legacy default stream
    /// (`CU_STREAM_NON_BLOCKING`). Launches on it skip the driver's
    /// implicit dependency on the default stream (cheaper per launch, see
    /// examples/04_launch_overhead.rs), but cust's synchronous copies
    /// (`copy_to`, `copy_from`) no longer wait for its kernels:
    /// [`Stream::synchronize`] first.
    pub fn nonblocking_stream(&self) -> Result<Stream<'_>> {
        let inner = cust::stream::Stream::new(StreamFlags::NON_BLOCKING, None).during("cuStreamCreate")?;
        Ok(Stream { inner, gpu: self })
    }

    /// Allocates `len` uninitialised elements of device memory.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = len.saturating_mul(size_of::<T>());
        // SAFETY: the contents are uninitialised device memory; `T: DeviceCopy`
        // is plain data, so any bit pattern is a valid value.
        unsafe { DeviceBuffer::uninitialized(len) }.map_err(|e| match e {
            CudaError::OutOfMemory | CudaError::InvalidMemoryAllocation => Error::OutOfMemory { bytes },
            source => Error::Cuda { op: "cuMemAlloc", source },
        })
    }

    /// Copies a host slice into new device memory.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(host.len())?;
        buf.copy_from(host).during("cuMemcpyHtoD")?;
        Ok(buf)
    }

    fn function(&self, name: &'static str) -> Result<cust::sys::CUfunction> {
        self.functions.get(name).map(|f| f.0).ok_or(Error::MissingKernel { name })
    }
}

/// A kernel's driver handle. CUDA function handles may be used from any
/// thread of the process for as long as their module is loaded.
#[derive(Clone, Copy)]
struct KernelHandle(cust::sys::CUfunction);
// SAFETY: see above; the Gpu that holds these keeps the module loaded.
unsafe impl Send for KernelHandle {}
// SAFETY: as above: launching reads the handle only.
unsafe impl Sync for KernelHandle {}

/// A CUDA stream tied to the [`Gpu`] whose kernels it launches.
pub struct Stream<'g> {
    inner: cust::stream::Stream,
    gpu: &'g Gpu,
}

impl<'g> Stream<'g> {
    /// The GPU this stream belongs to.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }
    /// The underlying `cust` stream (for events, copies, `launch!`).
    pub fn as_cust(&self) -> &cust::stream::Stream {
        &self.inner
    }
    /// Blocks until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize().during("cuStreamSynchronize")
    }

    /// Copies `src` into `dst` on the device (`cuMemcpyDtoDAsync`), queued on
    /// this stream: the bandwidth roof every memory-bound kernel is measured against.
    pub fn copy(&self, src: &DeviceSlice<f32>, dst: &mut DeviceSlice<f32>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch {
                buffer: "copy destination",
                shape: format!("{}-element", src.len()),
                expected: src.len(),
                actual: dst.len(),
            });
        }
        // SAFETY: both slices are live device memory of equal length; the
        // copy is ordered on this stream like any kernel that uses them.
        unsafe { dst.async_copy_from(src, &self.inner) }.during("cuMemcpyDtoDAsync")
    }

    /// The one raw launch of the crate. Callers are the typed launchers,
    /// which have checked buffer lengths and shapes.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in number, order and type,
    /// and every pointer among them must be valid for what the kernel touches.
    pub(crate) unsafe fn launch_raw(&self, name: &'static str, dims: LaunchDims, args: &[*mut c_void]) -> Result<()> {
        let f = self.gpu.function(name)?;
        let (g, b) = (dims.grid, dims.block);
        // SAFETY: `f` belongs to the module the Gpu keeps alive; the
        // arguments are the caller's contract.
        crate::error::check("cuLaunchKernel", unsafe {
            cust::sys::cuLaunchKernel(
                f,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                dims.shared_bytes,
                self.inner.as_inner(),
                args.as_ptr() as *mut *mut c_void,
                std::ptr::null_mut(),
            )
        })
    }
}

/// A kernel argument for `cuLaunchKernel`: the address of the value.
pub(crate) fn arg<T>(value: &mut T) -> *mut c_void {
    (value as *mut T).cast()
}
