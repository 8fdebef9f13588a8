//! Kernel bodies of `coalesce`, written once and run in two places.
//!
//! Every kernel here is a plain `unsafe fn` generic over [`ThreadCtx`], the
//! handful of things a CUDA thread can ask about itself (its indices, a block
//! barrier, the block's shared memory, warp shuffles).
//!
//! - Built for `nvptx64-nvidia-cuda`, the context is [`gpu::Gpu`]: each method is
//!   one PTX instruction, inlined away, and the `extern "gpu-kernel"` entry
//!   points in each op's files become the PTX module's `.entry` kernels.
//! - Built for the host, the context is [`emu`]'s emulator: a block's threads
//!   run as real OS threads with a real barrier and per-block shared memory, so
//!   the very same body is tested on machines without a GPU.
//!
//! Launch geometry (tile sizes, threads per block, shared bytes) is defined
//! here, next to the code that depends on it, and the host reads it from here.
//!
//! | op | versions |
//! | --- | --- |
//! | [`transpose`] | `naive`, `naive_cols`, `tiled` (bank conflicts on purpose), `padded`, `swizzled`, `vec4` |
//! | [`copy`] | `copy` (the roof), `copy_strided` (one column per launch) |
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_gpu_kernel,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

mod ctx;
pub use ctx::{Dim3, LaunchDims, ThreadCtx};

#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
#[cfg(target_arch = "nvptx64")]
pub mod gpu;

pub mod copy;
pub mod transpose;

/// Every `.entry` kernel in the PTX module. The host's launcher registry and
/// the PTX checks both test themselves against this list.
pub const ENTRY_POINTS: &[&str] = &[
    "copy_f32",
    "copy_strided_f32",
    transpose::Variant::ALL[0].entry_point(),
    transpose::Variant::ALL[1].entry_point(),
    transpose::Variant::ALL[2].entry_point(),
    transpose::Variant::ALL[3].entry_point(),
    transpose::Variant::ALL[4].entry_point(),
    transpose::Variant::ALL[5].entry_point(),
];

// A new transpose version must be added to ENTRY_POINTS above.
const _: () = assert!(transpose::Variant::ALL.len() == 6);
