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
//!   run as fibers on a few OS threads, with a real barrier and per-block
//!   shared memory, so the very same body is tested on machines without a GPU.
//!
//! Kernels read and write memory through the typed views of [`mem`]
//! (`ctx.global(ptr, len)`, `ctx.shared::<f32>(len)`): one `ld`/`st` each on
//! the GPU, checked and counted per source line on the emulator, where
//! each line also keeps one warp's request for the pictures of
//! `coalesce::emu::picture`.
//!
//! Launch geometry (tile sizes, threads per block, shared bytes) is defined
//! here, next to the code that depends on it, and the host reads it from here.
//!
//! Every kernel is one entry of the [`registry`]: the op modules'
//! enums, `.entry` lists, dispatch and docs tables, the host's launchers and
//! `docs/registry.json` all come from it.
//!
//! | op | its ladder |
//! | --- | --- |
//! | [`transpose`] | [`transpose::Variant`] |
//! | [`nested_sin`] | [`nested_sin::Variant`] |
//! | [`softmax`] | [`softmax::Kernel`] |
//! | [`gemm`] | [`gemm::Variant`] |
//! | [`copy`], [`probe`] | [`copy::STEPS`], [`probe::STEPS`] |
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_gpu_kernel,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

/// Repeats `$body` with `$i` bound to each literal of the list that is
/// below `$n`, as straight-line code:
///
/// - `unroll!(i < n, [0, 1, 2, 3], { .. })`: the list is the largest count
///   the caller allows (the caller asserts that bound), and `n` (a constant
///   or a runtime value) prunes it;
/// - `unroll!(i < N, { .. })`: the list `0 ..= 31`, for `N` a constant,
///   checked at compile time to be at most 32.
///
/// LLVM fully unrolls only small loops (a cost threshold of a few hundred
/// instructions, and not a 32-iteration loop with a branch in it), and a loop
/// it leaves rolled that indexes a per-thread array (`acc[i]`) puts the whole
/// array in local memory: a stack frame, and `ld.local`/`st.local` around
/// every use. Written out, every index is a constant and the array lives in
/// registers.
macro_rules! unroll {
    ($i:ident < $n:expr, [$($k:literal),* $(,)?], $body:block) => {
        $(
            #[allow(clippy::reversed_empty_ranges, unused_comparisons)]
            if $k < $n {
                let $i: usize = $k;
                $body
            }
        )*
    };
    ($i:ident < $n:expr, $body:block) => {
        const { assert!($n <= 32, "unroll! writes out at most 32 iterations") };
        unroll!($i < $n, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31], $body)
    };
}

mod ctx;
pub use ctx::{Dim3, LaunchDims, TensorMap, ThreadCtx};

pub mod mem;
#[cfg(not(target_arch = "nvptx64"))]
pub use mem::{Checked, Plain};
pub use mem::{Extent, Global, GlobalMut, Load, Shared, Space, Store, Strided};

#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
#[cfg(target_arch = "nvptx64")]
pub mod gpu;

pub mod copy;
pub mod copy_bulk;
pub mod gemm;
pub mod math;
pub mod nested_sin;
pub mod ops;
pub mod probe;
pub mod registry;
pub mod softmax;
pub mod transpose;
pub mod vector;

/// The kernels that may use more than 48 KiB of dynamic shared memory per
/// block, from the [`registry`] (each step's geometry says): a host must opt
/// each in (`cuFuncSetAttribute` with
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`) before launching it so.
pub const OPT_IN_SHARED: &[&str] = &ops::OPT_IN_SHARED;

/// Every `.entry` kernel of every PTX module, from the [`registry`].
pub fn entry_points() -> impl Iterator<Item = &'static str> {
    ops::steps().map(|s| s.entry)
}

/// The `.entry` kernels of the module built for `module` (`"sm_80"`,
/// `"sm_90"`, `"sm_90a"`): every kernel but those that need another
/// architecture ([`registry::Step::needs`]).
pub fn entry_points_in(module: &str) -> impl Iterator<Item = &'static str> {
    ops::steps().filter(move |s| s.in_module(module)).map(|s| s.entry)
}
