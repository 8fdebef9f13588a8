//! Opening a device: the driver, the device's primary context, its
//! properties, and the [`Gpu`] that holds them with the loaded module
//! ([`Ptx`] picks which one).

use super::Ptx;
use super::module::KernelHandle;
use super::stream::new_cust_stream;
use crate::error::{Context as _, check};
use crate::limits::dram_spec_gb_per_s;
use crate::{Dim3, Error, GridLimits, Result};
use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::module::Module;
use cust::stream::StreamFlags;
use cust::sys;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Mutex;

/// A CUDA device, a retained reference to its primary context, and the
/// kernel module loaded into that context.
///
/// # Threads
///
/// `Gpu` is `Send` and `Sync`: share one between threads (`&Gpu`, `Arc<Gpu>`)
/// or make one per thread; both are sound. Every method that calls the
/// driver first makes the `Gpu`'s context current on the calling thread
/// (CUDA's current context is per thread), so a `Gpu` made in one thread
/// works in any other, and several `Gpu` values for different devices can be
/// used in turn from one thread. All `Gpu`s of one device share its primary
/// context, as every `cust` program and the CUDA runtime do.
///
/// Streams: [`Gpu::stream`] gives a stream that synchronises with the legacy
/// default stream, so `cust`'s synchronous copies (`copy_to`, `copy_from`)
/// stay ordered with its kernels. [`Gpu::nonblocking_stream`] gives one that
/// does not; it is the only kind [`crate::graph::capture`] accepts, because a
/// capture on a blocking stream is broken by any legacy-stream call (such as a
/// synchronous copy) that another thread makes in the same context.
pub struct Gpu {
    // The module and the copy stream go before the context (see `Drop`).
    pub(super) module: ManuallyDrop<Module>,
    pub(super) copies: ManuallyDrop<cust::stream::Stream>,
    /// Every kernel of the module, looked up once at load.
    pub(super) functions: HashMap<&'static str, KernelHandle>,
    device: Device,
    ordinal: u32,
    compute_capability: (u32, u32),
    ptx_arch: Option<u32>,
    /// The loaded module's target (`sm_90a`), or `None` for a module given as text.
    module_name: Option<String>,
    limits: GridLimits,
    name: String,
    sm_count: u32,
    /// The DRAM bandwidth the memory's clock and bus width give, if the driver reports both.
    dram_spec_gb_per_s: Option<f64>,
    /// The TMA steps' workspace pool, made at their first launch.
    pub(super) pool: std::sync::OnceLock<super::device_memory::Pool>,
    context: Context,
}

/// Whether a driver error means "there is no GPU here" rather than a fault.
fn means_no_device(e: CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDevice | CudaError::InvalidDevice | CudaError::NotInitialized | CudaError::UnknownError
    ) || e as u32 == 34 // CUDA_ERROR_STUB_LIBRARY: linked against the toolkit's stub
        || e as u32 == 35 // CUDA_ERROR_INSUFFICIENT_DRIVER
}

/// Initialises the driver and returns the number of devices, or
/// [`Error::NoDevice`] when there is none.
fn init_driver() -> Result<u32> {
    let no_device = |e: CudaError| {
        if means_no_device(e) {
            // cust's `Display` writes the driver's message with `{:?}`:
            // the reason is the message itself, without its quotes.
            Error::NoDevice { reason: e.to_string().trim_matches('"').to_string() }
        } else {
            Error::Cuda { op: "cuInit", source: e }
        }
    };
    cust::init(cust::CudaFlags::empty()).map_err(no_device)?;
    let count = Device::num_devices().map_err(no_device)?;
    if count == 0 {
        return Err(Error::NoDevice { reason: "the driver reports 0 devices".into() });
    }
    Ok(count)
}

/// Retains `device`'s primary context once for the rest of the process, as
/// the CUDA runtime does. `Gpu::alloc` hands out `cust` buffers that do not
/// borrow the `Gpu`, so a buffer may outlive every `Gpu` of its device; if
/// the last `Gpu` released the context, the driver would destroy it and the
/// buffer's `cuMemFree` would act on a destroyed context (seen to crash).
fn keep_primary_context(device: Device) -> Result<()> {
    static KEPT: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if !kept.contains(&device.as_raw()) {
        let mut ctx = ptr::null_mut();
        // SAFETY: an out-pointer and a valid device; never released.
        check("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, device.as_raw()) })?;
        kept.push(device.as_raw());
    }
    Ok(())
}

/// The module text a `Gpu` loads: given as is, or picked by architecture.
enum Source<'p> {
    Text(&'p str),
    Pick(&'p [Ptx]),
}

impl Gpu {
    /// Initialises the driver, retains device 0's primary context and loads
    /// `ptx` into it. Programs using this crate's kernels call
    /// `coalesce::init()`, which picks the module for the device.
    ///
    /// Returns [`Error::NoDevice`] on a machine without a usable GPU.
    pub fn load(ptx: &str) -> Result<Gpu> {
        init_driver()?;
        let device = Device::get_device(0).during("cuDeviceGet")?;
        Gpu::build(device, 0, Source::Text(ptx))
    }

    /// Device `ordinal` (0-based, in the driver's order), with the newest
    /// module of `modules` that it can run.
    ///
    /// Errors: [`Error::NoDevice`] without a GPU, [`Error::DeviceNotFound`]
    /// past the last device, [`Error::UnsupportedArchitecture`] when every
    /// module needs a newer GPU.
    pub fn open(ordinal: u32, modules: &[Ptx]) -> Result<Gpu> {
        let count = init_driver()?;
        if ordinal >= count {
            return Err(Error::DeviceNotFound { ordinal, count });
        }
        let device = Device::get_device(ordinal).during("cuDeviceGet")?;
        Gpu::build(device, ordinal, Source::Pick(modules))
    }

    /// The kernels loaded into a context the program already has (on any
    /// device), picking the newest of `modules` the device can run. The
    /// `Gpu` holds its own reference to the context, so the program may drop
    /// its `Context` first; streams the program made in that context can be
    /// used for launches through [`Gpu::borrow_stream`].
    ///
    /// Leaves `context` current on the calling thread.
    pub fn in_context(context: &Context, modules: &[Ptx]) -> Result<Gpu> {
        init_driver()?;
        let raw = context.as_raw();
        // SAFETY: a live context handle, owned by `context`.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(raw) })?;
        let mut dev: sys::CUdevice = 0;
        // SAFETY: an out-pointer to a local; the context is current.
        check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut dev) })?;
        let ordinal = dev as u32;
        let device = Device::get_device(ordinal).during("cuDeviceGet")?;
        let gpu = Gpu::build(device, ordinal, Source::Pick(modules))?;
        if gpu.context.as_raw() != raw {
            // cust's `Context` is the device's primary context, so this does
            // not happen with it; say so rather than load elsewhere.
            return Err(Error::WrongContext { what: "the given context is not its device's primary context" });
        }
        Ok(gpu)
    }

    fn build(device: Device, ordinal: u32, source: Source<'_>) -> Result<Gpu> {
        keep_primary_context(device)?;
        let context = Context::new(device).during("cuDevicePrimaryCtxRetain")?;
        // SAFETY: the context just retained.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(context.as_raw()) })?;
        let attr = |a| device.get_attribute(a).during("cuDeviceGetAttribute").map(|v| v as u32);
        let compute_capability =
            (attr(DeviceAttribute::ComputeCapabilityMajor)?, attr(DeviceAttribute::ComputeCapabilityMinor)?);
        let name = device.name().during("cuDeviceGetName")?;
        let (text, ptx_arch, module_name) = match source {
            Source::Text(text) => (text, None, None),
            Source::Pick(modules) => {
                let (major, minor) = compute_capability;
                let m = Ptx::pick(modules, major, minor).ok_or_else(|| Error::UnsupportedArchitecture {
                    device: name.clone(),
                    major,
                    minor,
                    shipped: modules.iter().map(Ptx::name).collect::<Vec<_>>().join(", "),
                })?;
                (m.text, Some(m.arch), Some(m.name()))
            }
        };
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
                check("cuDeviceGetAttribute", unsafe {
                    sys::cuDeviceGetAttribute(
                        &mut v,
                        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                        device.as_raw(),
                    )
                })?;
                v as u32
            },
        };
        let sm_count = attr(DeviceAttribute::MultiprocessorCount)?;
        // A device that does not report its memory (a zero, or a driver that
        // no longer answers) has no specified figure: None, not an error.
        let dram_spec_gb_per_s =
            match (attr(DeviceAttribute::MemoryClockRate), attr(DeviceAttribute::GlobalMemoryBusWidth)) {
                (Ok(khz), Ok(bits)) if khz > 0 && bits > 0 => Some(dram_spec_gb_per_s(khz, bits)),
                _ => None,
            };
        let module = ManuallyDrop::new(Module::from_ptx(text, &[]).during("cuModuleLoadData (PTX JIT)")?);
        let copies = ManuallyDrop::new(new_cust_stream(StreamFlags::NON_BLOCKING)?);
        // From here on `Drop` unloads the module and destroys the stream.
        let mut gpu = Gpu {
            module,
            copies,
            functions: HashMap::new(),
            device,
            ordinal,
            compute_capability,
            ptx_arch,
            module_name,
            limits,
            name,
            sm_count,
            dram_spec_gb_per_s,
            pool: std::sync::OnceLock::new(),
            context,
        };
        gpu.look_up_kernels()?;
        Ok(gpu)
    }

    /// Makes this `Gpu`'s context current on the calling thread, if it is not.
    pub(crate) fn bind(&self) -> Result<()> {
        let ours = self.context.as_raw();
        let mut current = ptr::null_mut();
        // SAFETY: an out-pointer to a local.
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut current) })?;
        if current != ours {
            // SAFETY: our context is retained for as long as `self` lives.
            check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ours) })?;
        }
        Ok(())
    }

    /// The device's marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The device's ordinal: what [`Gpu::open`] takes.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }
    /// Compute capability `(major, minor)`, e.g. `(9, 0)` for an H100.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }
    /// The architecture of the loaded module (90 for `sm_90` and `sm_90a`),
    /// or `None` when the module was given as text ([`Gpu::load`]).
    pub fn ptx_arch(&self) -> Option<u32> {
        self.ptx_arch
    }
    /// The loaded module's target (`"sm_90a"` on an H100), or `None` when
    /// the module was given as text ([`Gpu::load`]).
    pub fn module_name(&self) -> Option<&str> {
        self.module_name.as_deref()
    }
    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    /// The DRAM bandwidth the device's specification gives, in GB/s (bytes
    /// read plus written, decimal units), from its memory clock and bus
    /// width ([`dram_spec_gb_per_s`]): 3352 on an H100 SXM (2619 MHz, 5120
    /// bits). `None` when the driver reports neither. A ceiling no copy
    /// reaches: `cuMemcpyDtoD` measures about 90% of it.
    pub fn dram_spec_gb_per_s(&self) -> Option<f64> {
        self.dram_spec_gb_per_s
    }
    /// The device's grid and block limits.
    pub fn grid_limits(&self) -> GridLimits {
        self.limits
    }
    /// The underlying `cust` device.
    pub fn device(&self) -> Device {
        self.device
    }
    /// The context's raw handle (the device's primary context).
    pub fn context_handle(&self) -> sys::CUcontext {
        self.context.as_raw()
    }
    /// The loaded module, for launching kernels by hand with `cust`.
    pub fn module(&self) -> &Module {
        &self.module
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // cuModuleUnload acts on the current context: make ours current for
        // it. A thread that had another context current gets it back; one
        // that had none keeps ours (it stays alive, see
        // `keep_primary_context`), so buffers dropped later still free.
        let mut previous = ptr::null_mut();
        // SAFETY: out-pointer; then our retained context; the fields are
        // dropped once, here, and never used again.
        unsafe {
            let _ = sys::cuCtxGetCurrent(&mut previous);
            let _ = sys::cuCtxSetCurrent(self.context.as_raw());
            ManuallyDrop::drop(&mut self.module);
            ManuallyDrop::drop(&mut self.copies);
            if !previous.is_null() && previous != self.context.as_raw() {
                let _ = sys::cuCtxSetCurrent(previous);
            }
        }
        // `context` drops after this: one release of the primary context.
    }
}
