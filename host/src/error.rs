//! The one error type of the library.

use crate::Dim3;
#[cfg(feature = "cuda")]
use cust::error::CudaError;

/// Everything that can go wrong, as a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA device or driver on this machine.
    #[error("no CUDA device available ({reason}); GPU work needs an NVIDIA GPU and its driver")]
    NoDevice { reason: String },

    /// A device allocation did not fit.
    #[error("out of device memory allocating {bytes} bytes")]
    OutOfMemory { bytes: usize },

    /// A buffer's length does not match the shape it is used with.
    #[error("{buffer} holds {actual} elements but {shape} needs {expected}")]
    LengthMismatch { buffer: &'static str, shape: String, expected: usize, actual: usize },

    /// A size is zero where nothing sensible can be made of it: a
    /// `Pipeline` of no streams or of empty batches, a host registration
    /// or a stream-ordered allocation of nothing. Empty matrices and slices
    /// are not errors: every launcher checks their buffers, then launches
    /// nothing.
    #[error("shape {rows}x{cols} has a zero dimension; every dimension must be at least 1")]
    ZeroDimension { rows: usize, cols: usize },

    /// The shape cannot be expressed to this kernel (a dimension past `u32`,
    /// or more elements than memory can address).
    #[error("shape {rows}x{cols} is too large: {why}")]
    ShapeTooLarge { rows: usize, cols: usize, why: std::borrow::Cow<'static, str> },

    /// The launch would need a grid past the device's limits.
    #[error("{kernel} on {shape} needs grid {grid:?}, past the device limit {limit:?}")]
    GridTooLarge { kernel: &'static str, shape: String, grid: Dim3, limit: Dim3 },

    /// The launch needs more shared memory per block than the device allows.
    #[error("{kernel} on {shape} needs {bytes} bytes of shared memory per block; this GPU allows {limit}")]
    SharedMemoryTooLarge { kernel: &'static str, shape: String, bytes: u32, limit: u32 },

    /// The output overlaps an input in device memory (out-of-place
    /// launchers only; in-place work has its own entry points).
    #[error("{kernel}: the output overlaps an input in device memory; out-of-place launches need disjoint buffers")]
    Aliased { kernel: &'static str },

    /// An output run that names one element more than once (a stride of 0
    /// over several elements): its writes would race, and which one lands
    /// is unspecified.
    #[error(
        "{kernel}: the output run {run} writes one element more than once; each output element must be written once"
    )]
    OverlappingOutput { kernel: &'static str, run: String },

    /// No device has this ordinal.
    #[error("no CUDA device {ordinal}: this machine has {count}")]
    DeviceNotFound { ordinal: u32, count: u32 },

    /// None of the PTX modules can run on this GPU (each needs a newer one).
    #[error("{device} (compute capability {major}.{minor}) runs none of the PTX modules shipped ({shipped})")]
    UnsupportedArchitecture { device: String, major: u32, minor: u32, shipped: String },

    /// The kernel exists only in one architecture's module (`wgmma` needs
    /// `sm_90a`: compute capability 9.0, H100/H200), and this `Gpu` loaded
    /// another. Nothing was launched; the other versions of the op run.
    #[error(
        "{kernel} needs the {needs} module (compute capability 9.0: H100, H200); {device} (compute capability \
         {major}.{minor}) loaded {loaded}"
    )]
    ArchitectureRequired {
        kernel: &'static str,
        needs: &'static str,
        device: String,
        major: u32,
        minor: u32,
        loaded: String,
    },

    /// A stream or context from elsewhere was given to a `Gpu`.
    #[error("wrong CUDA context: {what}")]
    WrongContext { what: &'static str },

    /// Graph capture was asked of a stream that synchronises with the legacy
    /// default stream.
    #[error(
        "graph capture needs a non-blocking stream (Gpu::nonblocking_stream; cust 0.3.2's Stream::new makes \
         only blocking ones): on a blocking stream, any synchronous copy or legacy-stream call made by another \
         thread in the same context breaks the capture"
    )]
    CaptureNeedsNonBlockingStream,

    /// The kernel module lacks an expected entry point (PTX built from other sources).
    #[error("kernel `{name}` is not in the loaded module")]
    MissingKernel { name: &'static str },

    /// The emulator refused or aborted a launch.
    #[error("emulated launch failed: {0}")]
    Emulator(#[from] coalesce_kernels::emu::EmuError),

    /// A driver call made through `cust::sys` directly (the calls `cust`
    /// 0.3.2 does not wrap: host registration, the stream-ordered pool,
    /// stream capture and graphs) failed with this `CUresult`.
    #[error("CUDA driver error in {op}: {name} ({code}): {message}")]
    Driver { op: &'static str, code: u32, name: String, message: String },

    /// Any other driver error, with the operation that got it.
    #[cfg(feature = "cuda")]
    #[error("CUDA driver error in {op}: {source}")]
    Cuda {
        op: &'static str,
        #[source]
        source: CudaError,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::LengthMismatch`] unless `buffer` holds as many elements as the
/// `expected`-element source it pairs with.
pub(crate) fn same_len(buffer: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::LengthMismatch { buffer, shape: format!("a copy of a {expected}-element source"), expected, actual })
    }
}

/// Attaches the name of the failing operation to a driver result.
#[cfg(feature = "cuda")]
pub(crate) trait Context<T> {
    fn during(self, op: &'static str) -> Result<T>;
}

#[cfg(feature = "cuda")]
impl<T> Context<T> for cust::error::CudaResult<T> {
    fn during(self, op: &'static str) -> Result<T> {
        self.map_err(|source| Error::Cuda { op, source })
    }
}

/// Turns a raw `CUresult` from `cust::sys` into a `Result`, with the
/// driver's own name and description of the error: for programs that call
/// the driver API directly beside this crate.
#[cfg(feature = "cuda")]
pub fn check(op: &'static str, result: cust::sys::CUresult) -> Result<()> {
    use cust::sys::{cuGetErrorName, cuGetErrorString, cudaError_enum};
    if result == cudaError_enum::CUDA_SUCCESS {
        return Ok(());
    }
    let text = |f: unsafe extern "C" fn(cudaError_enum, *mut *const std::ffi::c_char) -> cudaError_enum| {
        let mut p = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static C string, or fails.
        if unsafe { f(result, &mut p) } == cudaError_enum::CUDA_SUCCESS && !p.is_null() {
            // SAFETY: non-null, NUL-terminated, static (driver-owned).
            unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            "unknown".to_owned()
        }
    };
    let code = result as u32;
    if result == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::OutOfMemory { bytes: 0 });
    }
    Err(Error::Driver { op, code, name: text(cuGetErrorName), message: text(cuGetErrorString) })
}
