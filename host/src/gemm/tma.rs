//! What the TMA steps of the GEMM need from the host: tensor maps, encoded
//! by the driver, and a workspace on the stream for the K-major operands.
//!
//! `cuTensorMapEncodeTiled` appeared in CUDA 12.0, after the driver API
//! that `cust` 0.3 binds, so it is looked up at run time
//! (`cuGetProcAddress`); a driver without it gives [`Error::Driver`] naming
//! it, before anything is launched.
//!
//! The workspace comes from a memory pool of the `Gpu`'s own, allocated and
//! freed in stream order (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`): a
//! launch's workspace is free again once the product that reads it has run,
//! without a host synchronisation, and inside a CUDA graph capture it
//! becomes the graph's own allocation, so two graphs, or a graph and direct
//! launches, never share one. The pool keeps freed memory for reuse
//! (release threshold: all of it) instead of returning it to the driver at
//! every synchronisation, which the device's default pool does; that would
//! remap a product's workspace on every call.

use crate::error::check;
use crate::gpu::driver_entry;
use crate::{Error, Result, Stream};
use coalesce_kernels::TensorMap;
use cust::sys;
use std::ffi::c_void;
use std::sync::OnceLock;

/// `cuTensorMapEncodeTiled`'s signature (CUDA 12.0, `cuda.h`).
type EncodeTiled = unsafe extern "C" fn(
    map: *mut TensorMap,
    data_type: u32,
    rank: u32,
    global_address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) -> sys::CUresult;

const CU_TENSOR_MAP_DATA_TYPE_FLOAT32: u32 = 7;
/// f32 in memory, rounded to TF32 (to nearest even) by each copy.
const CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: u32 = 11;
const CU_TENSOR_MAP_INTERLEAVE_NONE: u32 = 0;
const CU_TENSOR_MAP_SWIZZLE_128B: u32 = 3;
const CU_TENSOR_MAP_L2_PROMOTION_L2_256B: u32 = 3;
/// Elements outside the tensor read as zeros.
const CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: u32 = 0;

/// The driver's `cuTensorMapEncodeTiled`, looked up once per process.
fn encode_tiled() -> Result<EncodeTiled> {
    static FOUND: OnceLock<(sys::CUresult, usize)> = OnceLock::new();
    let pfn = driver_entry(&FOUND, c"cuTensorMapEncodeTiled", "the TMA steps need CUDA 12.0 or later")?;
    // SAFETY: the driver's entry point of that name has this signature.
    Ok(unsafe { std::mem::transmute::<usize, EncodeTiled>(pfn) })
}

use super::run::Tensor2d;

/// The driver's tensor map for `t`.
pub(crate) fn encode(t: Tensor2d) -> Result<TensorMap> {
    let encode = encode_tiled()?;
    let mut map = TensorMap([0; 16]);
    let (dims, strides) = ([t.cols, t.rows], [t.row_bytes]);
    let (boxes, steps) = ([t.box_cols, t.box_rows], [1u32, 1]);
    // SAFETY: out-pointer to a 64-byte aligned map; arrays of the rank's
    // length (strides: rank - 1); the driver checks the values themselves
    // (alignment, sizes) and fails with CUDA_ERROR_INVALID_VALUE.
    let r = unsafe {
        encode(
            &mut map,
            if t.tf32 { CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 } else { CU_TENSOR_MAP_DATA_TYPE_FLOAT32 },
            2,
            t.base as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            steps.as_ptr(),
            CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    check("cuTensorMapEncodeTiled", r)?;
    Ok(map)
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
