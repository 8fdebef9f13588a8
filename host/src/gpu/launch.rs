//! Launching a kernel: its arguments as one typed tuple ([`KernelArgs`]),
//! and the crate's one raw launch: `cuLaunchKernel`, or `cuLaunchKernelEx`
//! for a launch in thread-block clusters.

use super::Stream;
use crate::error::check;
use crate::{LaunchDims, Result};
use coalesce_kernels::TensorMap;
use coalesce_kernels::gemm::pack::MapParam;
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};
use cust::sys;
use std::ffi::{CStr, c_void};
use std::sync::OnceLock;

/// What the host passes for a kernel parameter of this type: a device
/// pointer for a pointer, the value itself for a scalar.
pub(crate) trait HostParam {
    type Host: DeviceCopy;
}

/// What a device pointer to this type points at, as `cust` plain data.
pub(crate) trait Pointee {
    type Host: DeviceCopy;
}

impl<T: Pointee> HostParam for *const T {
    type Host = DevicePointer<T::Host>;
}

impl<T: Pointee> HostParam for *mut T {
    type Host = DevicePointer<T::Host>;
}

macro_rules! scalar_params {
    ($($t:ty),*) => {$(
        impl HostParam for $t {
            type Host = $t;
        }
        impl Pointee for $t {
            type Host = $t;
        }
    )*};
}
scalar_params!(u32, u64, i32, f32);

/// A tensor map's 128 bytes as `cust` plain data: a kernel's by-value
/// [`MapParam`] (8-byte aligned), and what a `*mut TensorMap` points at.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct MapBytes(pub(crate) MapParam);
// SAFETY: sixteen integers: no pointer, no host resource.
unsafe impl DeviceCopy for MapBytes {}

impl HostParam for MapParam {
    type Host = MapBytes;
}

impl Pointee for TensorMap {
    type Host = MapBytes;
}

/// The host's argument tuple for a kernel whose parameter types are the
/// tuple `Self` (a `*Params` type of `coalesce_kernels`).
pub(crate) trait HostParams {
    type Host;
}

/// A kernel's arguments: a tuple of plain values in the order of the
/// kernel's parameters, such as `(input.as_device_ptr(),
/// output.as_device_ptr(), rows, cols)` for a kernel of `(const f32*, f32*,
/// u32, u32)`. `cuLaunchKernel` copies each value's bytes into the
/// parameter of the same position, so each element has its parameter's
/// layout: a [`DevicePointer<T>`] for a `T*`, `u32`, `u64` and `f32` for
/// themselves, a `#[repr(C)]` value for a struct passed by value.
///
/// Implemented for tuples of 1 to 16 [`DeviceCopy`] values, so that an
/// argument list is a type a launcher can name and check against its
/// kernel's signature.
///
/// # Safety
/// [`KernelArgs::pointers`] returns one pointer per element, in order, each
/// to the element itself, so that they stay valid while `self` is neither
/// moved nor dropped.
pub(crate) unsafe trait KernelArgs {
    /// `[*mut c_void; N]` for a tuple of `N` values.
    type Pointers: AsRef<[*mut c_void]>;
    /// The address of each value: what `cuLaunchKernel` takes as
    /// `kernelParams`.
    fn pointers(&mut self) -> Self::Pointers;
}

/// `KernelArgs` and `HostParams` for the tuples of the listed arities: `N => (T index, ..)`.
macro_rules! kernel_args {
    ($($n:literal => ($($T:ident $i:tt),+);)+) => {$(
        // SAFETY: one pointer per element, in order, each to the element.
        unsafe impl<$($T: DeviceCopy),+> KernelArgs for ($($T,)+) {
            type Pointers = [*mut c_void; $n];
            fn pointers(&mut self) -> Self::Pointers {
                [$(std::ptr::from_mut(&mut self.$i).cast::<c_void>()),+]
            }
        }
        impl<$($T: HostParam),+> HostParams for ($($T,)+) {
            type Host = ($($T::Host,)+);
        }
    )+};
}

kernel_args! {
    1 => (A 0);
    2 => (A 0, B 1);
    3 => (A 0, B 1, C 2);
    4 => (A 0, B 1, C 2, D 3);
    5 => (A 0, B 1, C 2, D 3, E 4);
    6 => (A 0, B 1, C 2, D 3, E 4, F 5);
    7 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    8 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
    9 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
    10 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
    11 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
    12 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
    13 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
    14 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
    15 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
    16 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
}

impl Stream<'_> {
    /// Queues kernel `entry` of the loaded module over `dims` with `args`.
    /// Callers are the typed launchers, which have checked buffer lengths
    /// and shapes.
    ///
    /// # Safety
    /// `args` matches the kernel's parameters in number, order and type
    /// (each element of its parameter's size and layout), and every pointer
    /// among them is valid for what the kernel touches.
    pub(crate) unsafe fn launch(&self, entry: &'static str, dims: LaunchDims, args: impl KernelArgs) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_in_clusters(entry, dims, 1, args) }
    }

    /// [`Stream::launch`] in thread-block clusters of `cluster` blocks,
    /// consecutive in `x` (1: no clusters).
    ///
    /// # Safety
    /// As [`Stream::launch`]; `dims.grid.x` a multiple of `cluster`.
    pub(crate) unsafe fn launch_in_clusters(
        &self, entry: &'static str, dims: LaunchDims, cluster: u32, mut args: impl KernelArgs,
    ) -> Result<()> {
        let pointers = args.pointers();
        // SAFETY: the caller's contract; `args` stays in place until the
        // launch returns, and the driver copies the values at the launch.
        unsafe { self.launch_raw(entry, dims, cluster, pointers.as_ref()) }
    }

    /// The one raw launch of the crate, its arguments as `cuLaunchKernel`
    /// takes them.
    ///
    /// # Safety
    /// As [`Stream::launch_in_clusters`]; `args` points at the values.
    unsafe fn launch_raw(
        &self, name: &'static str, dims: LaunchDims, cluster: u32, args: &[*mut c_void],
    ) -> Result<()> {
        let f = self.gpu().function(name)?;
        self.gpu().bind()?;
        let (g, b) = (dims.grid, dims.block);
        if cluster > 1 {
            let mut attr = LaunchAttribute { id: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, pad: 0, value: [0; 16] };
            attr.value[..3].copy_from_slice(&[cluster, 1, 1]);
            let config = LaunchConfig {
                grid: [g.x, g.y, g.z],
                block: [b.x, b.y, b.z],
                shared_bytes: dims.shared_bytes,
                stream: self.raw(),
                attrs: &mut attr,
                num_attrs: 1,
            };
            // SAFETY: as below; the config and its attribute live until the
            // call returns (the driver copies them).
            return check("cuLaunchKernelEx", unsafe {
                launch_kernel_ex()?(&config, f, args.as_ptr() as *mut *mut c_void, std::ptr::null_mut())
            });
        }
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

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` (`cuda.h`, CUDA 12.0).
const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;

/// `CUlaunchAttribute`: the id, padding to 8 bytes, and the 64-byte union
/// of values (a cluster dimension is its first three words).
#[repr(C, align(8))]
struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// `CUlaunchConfig` (`cuda.h`, CUDA 12.0).
#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: sys::CUstream,
    attrs: *mut LaunchAttribute,
    num_attrs: u32,
}

/// `cuLaunchKernelEx`'s signature (CUDA 12.0, `cuda.h`).
type LaunchKernelEx = unsafe extern "C" fn(
    config: *const LaunchConfig,
    f: sys::CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> sys::CUresult;

/// The driver's `cuLaunchKernelEx`, looked up once per process: it appeared
/// in CUDA 12.0, after the driver API that `cust` 0.3 binds.
fn launch_kernel_ex() -> Result<LaunchKernelEx> {
    static FOUND: OnceLock<(sys::CUresult, usize)> = OnceLock::new();
    let pfn = driver_entry(&FOUND, c"cuLaunchKernelEx", "cluster launches need CUDA 12.0 or later")?;
    // SAFETY: the driver's entry point of that name has this signature.
    Ok(unsafe { std::mem::transmute::<usize, LaunchKernelEx>(pfn) })
}

/// The address of the driver's entry point `name` in its CUDA 12.0 version,
/// looked up once (`found` caches the answer), or [`crate::Error::Driver`]
/// saying what needs it (`needs`) when the driver has none.
pub(crate) fn driver_entry(
    found: &'static OnceLock<(sys::CUresult, usize)>, name: &'static CStr, needs: &'static str,
) -> Result<usize> {
    let &(r, pfn) = found.get_or_init(|| {
        let mut pfn: *mut c_void = std::ptr::null_mut();
        // SAFETY: a NUL-terminated name and an out-pointer; 12000 asks for
        // the CUDA 12.0 version of the entry point.
        let r = unsafe { sys::cuGetProcAddress(name.as_ptr(), &mut pfn, 12000, 0) };
        (r, pfn as usize)
    });
    let op = "cuGetProcAddress";
    check(op, r)?;
    if pfn == 0 {
        return Err(crate::Error::Driver {
            op,
            code: 500,
            name: "CUDA_ERROR_NOT_FOUND".into(),
            message: format!("this driver has no {} ({needs})", name.to_string_lossy()),
        });
    }
    Ok(pfn)
}

/// Queues `entry`, a kernel of `(const f32* input, f32* output, u32 rows,
/// u32 cols)` over a `shape` matrix (transposes, softmaxes), in clusters of
/// `cluster` blocks (1: none), once its plan checked the lengths and the
/// launch (`dims`, `None` for an empty matrix: nothing to queue): refuses
/// overlapping buffers ([`crate::Error::Aliased`]).
pub(crate) fn launch_matrix(
    stream: &Stream<'_>, (entry, cluster): (&'static str, u32), dims: Option<LaunchDims>, input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>, shape: crate::MatrixShape,
) -> Result<()> {
    let Some(dims) = dims else { return Ok(()) };
    crate::alias::disjoint(entry, input, output)?;
    // Transpose and softmax kernels share one parameter list (the
    // registry's; softmax checks that it is transpose's).
    let args: crate::transpose::KernelParams =
        (input.as_device_ptr(), output.as_device_ptr(), shape.rows_u32(), shape.cols_u32());
    // SAFETY: the kernel takes (const f32*, f32*, u32 rows, u32 cols); the
    // caller's plan checked that both buffers hold rows*cols floats and the
    // kernel's limits, and they do not overlap (checked above).
    unsafe { stream.launch_in_clusters(entry, dims, cluster, args) }
}

#[cfg(test)]
mod tests {
    use super::KernelArgs;

    #[test]
    fn each_pointer_is_its_elements_address_in_order() {
        let mut args = (1u32, 2u64, 3.0f32, [4u64; 16], 5u32);
        let p = args.pointers();
        // SAFETY: each pointer is to the element of that position and type.
        unsafe {
            assert_eq!(*p[0].cast::<u32>(), 1);
            assert_eq!(*p[1].cast::<u64>(), 2);
            assert_eq!(*p[2].cast::<f32>(), 3.0);
            assert_eq!(*p[3].cast::<[u64; 16]>(), [4; 16]);
            assert_eq!(*p[4].cast::<u32>(), 5);
        }
        assert_eq!(p.len(), 5);
        let twelve = (0u32, 1u32, 2u32, 3u32, 4u32, 5u32, 6u32, 7u32, 8u32, 9u32, 10u32, 11u32).pointers();
        assert_eq!(twelve.len(), 12);
    }
}
