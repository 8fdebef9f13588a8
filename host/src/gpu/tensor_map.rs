//! TMA tensor maps, encoded by the driver (the GEMM's TMA steps read
//! their operands through them).
//!
//! `cuTensorMapEncodeTiled` appeared in CUDA 12.0, after the driver API
//! that `cust` 0.3 binds, so it is looked up at run time
//! (`cuGetProcAddress`); a driver without it gives [`crate::Error::Driver`]
//! naming it, before anything is launched.

use super::driver_entry;
use crate::Result;
use crate::error::check;
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

/// The driver's tensor map of a 2D f32 tensor: `dims` `[cols, rows]`, rows
/// `row_bytes` apart, at device address `base`; copied in boxes of `boxes`
/// `[cols, rows]` into shared memory with the 128-byte swizzle, and rounded
/// to TF32 by the copy where `tf32` (element type TF32).
pub(crate) fn encode_tiled_2d(
    base: u64, dims: [u64; 2], row_bytes: u64, boxes: [u32; 2], tf32: bool,
) -> Result<TensorMap> {
    let encode = encode_tiled()?;
    let mut map = TensorMap([0; 16]);
    let (strides, steps) = ([row_bytes], [1u32, 1]);
    // SAFETY: out-pointer to a 64-byte aligned map; arrays of the rank's
    // length (strides: rank - 1); the driver checks the values themselves
    // (alignment, sizes) and fails with CUDA_ERROR_INVALID_VALUE.
    let r = unsafe {
        encode(
            &mut map,
            if tf32 { CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 } else { CU_TENSOR_MAP_DATA_TYPE_FLOAT32 },
            2,
            base as *mut c_void,
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
