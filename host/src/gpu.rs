//! The device, its context, the loaded kernel module, and streams.

use crate::error::{Context as _, check};
use crate::limits::dram_spec_gb_per_s;
use crate::{Dim3, Error, GridLimits, LaunchDims, Result};
use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::StreamFlags;
use cust::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::Mutex;

/// One PTX module of the kernels, built for one GPU architecture.
///
/// PTX built for `sm_XY` is JIT-compiled by the driver for any GPU of compute
/// capability X.Y or later, and refused by earlier ones. PTX built for
/// `sm_XYa` uses architecture-specific instructions (`wgmma` on `sm_90a`) and
/// runs on compute capability X.Y only. A crate ships one module per
/// architecture it supports, and [`Gpu`] loads the newest one the device can
/// run ([`Ptx::pick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ptx {
    /// The architecture, as compute capability `major * 10 + minor`: 90 for
    /// `sm_90` and `sm_90a`.
    pub arch: u32,
    /// `sm_90a` rather than `sm_90`: runs on compute capability `arch` only.
    pub arch_specific: bool,
    /// The module's PTX text.
    pub text: &'static str,
}

impl Ptx {
    /// The module's target, as PTX names it: `sm_90`, `sm_90a`.
    pub fn name(&self) -> String {
        format!("sm_{}{}", self.arch, if self.arch_specific { "a" } else { "" })
    }

    /// Whether a GPU of compute capability `major.minor` runs this module.
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        let cc = major * 10 + minor;
        if self.arch_specific { self.arch == cc } else { self.arch <= cc }
    }

    /// The newest module of `modules` that a GPU of compute capability
    /// `major.minor` can run (an architecture-specific one before the
    /// generic one of the same number), or `None` if every one needs
    /// another GPU.
    pub fn pick(modules: &[Ptx], major: u32, minor: u32) -> Option<Ptx> {
        modules.iter().filter(|m| m.runs_on(major, minor)).max_by_key(|m| (m.arch, m.arch_specific)).copied()
    }
}

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
    module: ManuallyDrop<Module>,
    copies: ManuallyDrop<cust::stream::Stream>,
    /// Every kernel of the module, looked up once at load.
    functions: HashMap<&'static str, KernelHandle>,
    /// Resident blocks per SM of a kernel at a block size, asked of the
    /// driver once per `Gpu` (the grid-stride kernels size their grids by it).
    occupancy: Mutex<Vec<(&'static str, u32, u32)>>,
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
    pool: std::sync::OnceLock<crate::tma::Pool>,
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
            Error::NoDevice { reason: e.to_string() }
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
            occupancy: Mutex::new(Vec::new()),
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
        // Look every kernel up once: a launch then costs no
        // cuModuleGetFunction (part of the per-launch overhead measured in
        // examples/04_launch_overhead.rs).
        // A kernel that only one architecture's module has (`wgmma`:
        // sm_90a) is absent from the others: its launcher then says so
        // ([`Error::ArchitectureRequired`]).
        for step in coalesce_kernels::registry::steps() {
            let name = step.entry;
            // Not even asked for where the registry says the module lacks it
            // (a failed cuModuleGetFunction is an error to compute-sanitizer).
            if gpu.module_name.as_deref().is_some_and(|m| !step.in_module(m)) {
                continue;
            }
            match gpu.module.get_function(name) {
                Ok(f) => {
                    gpu.functions.insert(name, KernelHandle(f.to_raw()));
                }
                Err(_) if step.needs.is_some() => {}
                Err(_) => return Err(Error::MissingKernel { name }),
            }
        }
        // Kernels that may use more than 48 KiB of dynamic shared memory must
        // say so once (CUDA's opt-in); the launch checks then enforce the
        // device's opt-in limit.
        for &name in coalesce_kernels::OPT_IN_SHARED {
            let Some(f) = gpu.functions.get(name).map(|f| f.0) else { continue };
            // SAFETY: a live function handle of the module we own.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    f,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    limits.max_shared_bytes_optin as i32,
                )
            })?;
        }
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
    /// Whether the loaded module has kernel `entry`: every kernel but those
    /// of another architecture ([`coalesce_kernels::registry::Step::needs`]).
    pub fn has_kernel(&self, entry: &str) -> bool {
        self.functions.contains_key(entry)
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

    /// A new stream. It synchronises with the legacy default stream, so a
    /// plain (synchronous) `copy_to` after a launch sees the kernel's result.
    /// Graphs cannot be captured on it ([`Gpu::nonblocking_stream`]).
    pub fn stream(&self) -> Result<Stream<'_>> {
        self.new_stream(StreamFlags::DEFAULT)
    }

    /// A stream that does not synchronise with the legacy default stream
    /// (`CU_STREAM_NON_BLOCKING`). Launches on it skip the driver's
    /// implicit dependency on the default stream (cheaper per launch, see
    /// examples/04_launch_overhead.rs), and it can capture graphs. `cust`'s
    /// synchronous copies (`copy_to`, `copy_from`) are not ordered with its
    /// kernels: use [`Stream::upload`] and [`Stream::download`], or
    /// [`Stream::synchronize`] first.
    pub fn nonblocking_stream(&self) -> Result<Stream<'_>> {
        self.new_stream(StreamFlags::NON_BLOCKING)
    }

    fn new_stream(&self, flags: StreamFlags) -> Result<Stream<'_>> {
        self.bind()?;
        let inner = new_cust_stream(flags)?;
        Ok(Stream { inner: StreamRef::Owned(inner), gpu: self })
    }

    /// A program's own `cust` stream, for this crate's launchers. Checked
    /// once here: the stream must belong to this `Gpu`'s context
    /// ([`Error::WrongContext`] otherwise).
    pub fn borrow_stream<'s>(&'s self, stream: &'s cust::stream::Stream) -> Result<Stream<'s>> {
        let mut ctx = ptr::null_mut();
        // SAFETY: a live stream handle owned by `stream`; an out-pointer.
        check("cuStreamGetCtx", unsafe { sys::cuStreamGetCtx(stream.as_inner(), &mut ctx) })?;
        if ctx != self.context.as_raw() {
            return Err(Error::WrongContext { what: "the stream belongs to another context" });
        }
        Ok(Stream { inner: StreamRef::Borrowed(stream), gpu: self })
    }

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

    /// The pool the TMA steps' workspaces come from ([`crate::tma`]).
    pub(crate) fn workspace_pool(&self) -> Result<&crate::tma::Pool> {
        if let Some(pool) = self.pool.get() {
            return Ok(pool);
        }
        self.bind()?;
        let pool = crate::tma::Pool::new(self.ordinal)?;
        // Another thread may have made one meanwhile: its pool is kept and
        // this one destroyed.
        Ok(self.pool.get_or_init(|| pool))
    }

    /// [`Error::ArchitectureRequired`] (or [`Error::MissingKernel`]) unless
    /// the loaded module has the kernel `name`.
    pub(crate) fn require(&self, name: &'static str) -> Result<()> {
        self.function(name).map(|_| ())
    }

    pub(crate) fn function(&self, name: &'static str) -> Result<sys::CUfunction> {
        if let Some(f) = self.functions.get(name) {
            return Ok(f.0);
        }
        let needs = coalesce_kernels::registry::steps().find(|s| s.entry == name).and_then(|s| s.needs);
        Err(match needs {
            Some(needs) => Error::ArchitectureRequired {
                kernel: name,
                needs,
                device: self.name.clone(),
                major: self.compute_capability.0,
                minor: self.compute_capability.1,
                loaded: self.module_name.clone().unwrap_or_else(|| "a module given as text".into()),
            },
            None => Error::MissingKernel { name },
        })
    }

    /// Resident blocks per SM of `entry` at `block` threads and no dynamic
    /// shared memory, asked of the driver once per `Gpu`.
    pub(crate) fn blocks_per_sm(&self, entry: &'static str, block: u32) -> Result<u32> {
        let mut cache = self.occupancy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, _, n)) = cache.iter().find(|(e, b, _)| *e == entry && *b == block) {
            return Ok(n);
        }
        let f = self.function(entry)?;
        let mut n = 0i32;
        // SAFETY: a live function of our module; an out-pointer.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, block as i32, 0)
        })?;
        let n = (n as u32).max(1);
        cache.push((entry, block, n));
        Ok(n)
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

/// A `cust` stream with exactly `flags`, on the current context.
///
/// `cust::stream::Stream::new` (0.3.2) drops `NON_BLOCKING` from its flags
/// (Rust-CUDA issue 15), so every stream it makes synchronises with the
/// legacy default stream. This calls `cuStreamCreate` itself and hands the
/// handle to a `cust` stream, which destroys it when dropped.
fn new_cust_stream(flags: StreamFlags) -> Result<cust::stream::Stream> {
    let mut raw: sys::CUstream = ptr::null_mut();
    // SAFETY: an out-pointer to a local; flags are CU_STREAM_* bits.
    check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut raw, flags.bits()) })?;
    // SAFETY: cust 0.3's `Stream` is a struct whose one field is the
    // `CUstream` handle; `transmute` refuses to compile unless the two have
    // the same size, so the handle is the struct's whole content at offset 0.
    // The stream is new and owned by nothing else; cust's `Drop` destroys it.
    // tests/threads.rs reads the flags back through cust (`get_flags`).
    Ok(unsafe { std::mem::transmute::<sys::CUstream, cust::stream::Stream>(raw) })
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

/// A kernel's driver handle. CUDA function handles may be used from any
/// thread of the process for as long as their module is loaded.
#[derive(Clone, Copy)]
struct KernelHandle(sys::CUfunction);
// SAFETY: see above; the Gpu that holds these keeps the module loaded.
unsafe impl Send for KernelHandle {}
// SAFETY: as above: launching reads the handle only.
unsafe impl Sync for KernelHandle {}

/// A stream made by [`Gpu::stream`], or a program's own borrowed through
/// [`Gpu::borrow_stream`].
enum StreamRef<'g> {
    Owned(cust::stream::Stream),
    Borrowed(&'g cust::stream::Stream),
}

/// A CUDA stream tied to the [`Gpu`] whose kernels it launches.
///
/// `Send` and `Sync`: launches from several threads onto one stream are
/// sound, and run in the order the driver receives them.
pub struct Stream<'g> {
    inner: StreamRef<'g>,
    gpu: &'g Gpu,
}

impl<'g> Stream<'g> {
    /// The GPU this stream belongs to.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }
    /// The underlying `cust` stream (for events, copies, `launch!`).
    pub fn as_cust(&self) -> &cust::stream::Stream {
        match &self.inner {
            StreamRef::Owned(s) => s,
            StreamRef::Borrowed(s) => s,
        }
    }
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.as_cust().as_inner()
    }
    /// Whether the stream synchronises with the legacy default stream
    /// (made without `CU_STREAM_NON_BLOCKING`).
    pub fn is_blocking(&self) -> Result<bool> {
        let flags = self.as_cust().get_flags().during("cuStreamGetFlags")?;
        Ok(!flags.contains(StreamFlags::NON_BLOCKING))
    }
    /// Blocks until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.as_cust().synchronize().during("cuStreamSynchronize")
    }

    /// Copies a host slice into new device memory, queued after this
    /// stream's work; returns once the copy has landed.
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.gpu.alloc(host.len())?;
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
        self.gpu.bind()?;
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
        self.gpu.bind()?;
        // SAFETY: both slices are live device memory of equal length that do
        // not overlap; the copy is ordered on this stream like any kernel.
        unsafe { dst.async_copy_from(src, self.as_cust()) }.during("cuMemcpyDtoDAsync")
    }

    /// The one raw launch of the crate. Callers are the typed launchers,
    /// which have checked buffer lengths and shapes.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in number, order and type,
    /// and every pointer among them must be valid for what the kernel touches.
    pub(crate) unsafe fn launch_raw(&self, name: &'static str, dims: LaunchDims, args: &[*mut c_void]) -> Result<()> {
        let f = self.gpu.function(name)?;
        self.gpu.bind()?;
        let (g, b) = (dims.grid, dims.block);
        // SAFETY: `f` belongs to the module the Gpu keeps alive, and the
        // stream to its context; the arguments are the caller's contract.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                f,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                dims.shared_bytes,
                self.raw(),
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

/// Queues `entry`, a kernel of `(const f32* input, f32* output, u32 rows,
/// u32 cols)` over a `shape` matrix (transposes, softmaxes), once its plan
/// checked the lengths and the launch: refuses overlapping buffers
/// ([`crate::Error::Aliased`]).
pub(crate) fn launch_matrix(
    stream: &Stream<'_>,
    entry: &'static str,
    dims: LaunchDims,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    shape: crate::MatrixShape,
) -> Result<()> {
    crate::alias::disjoint(entry, input, output)?;
    let (mut inp, mut out) = (input.as_device_ptr(), output.as_device_ptr());
    let (mut rows, mut cols) = (shape.rows_u32(), shape.cols_u32());
    let args = [arg(&mut inp), arg(&mut out), arg(&mut rows), arg(&mut cols)];
    // SAFETY: the kernel takes (const f32*, f32*, u32 rows, u32 cols); the
    // caller's plan checked that both buffers hold rows*cols floats and the
    // kernel's limits, and they do not overlap (checked above).
    unsafe { stream.launch_raw(entry, dims, &args) }
}
