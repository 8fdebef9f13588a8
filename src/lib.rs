//! `coalesce`: GPU kernels written in Rust, compiled to PTX by rustc's NVPTX
//! backend, launched through `cust`, and measured against the roofline.
//!
//! ```no_run
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;          // context + the embedded PTX module
//! let stream = gpu.stream()?;
//! let shape = MatrixShape::new(4096, 1000)?;
//! let input = gpu.upload(&vec![1.0f32; shape.len()])?;
//! let mut output = gpu.alloc::<f32>(shape.len())?;
//! transpose::padded(&stream, &input, &mut output, shape)?;
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! Embedding the kernels in another `cust` program: load [`PTX`] with
//! `cust::module::Module::from_ptx` and launch the entries listed in
//! [`kernels::entry_points`]; or use [`Gpu::load`]`(coalesce::PTX)`.

pub use coalesce_host::*;
pub use coalesce_kernels as kernels;

/// The PTX module of every kernel, built for [`CUDA_ARCH`] by `build.rs`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// The GPU architecture [`PTX`] was built for (`COALESCE_CUDA_ARCH`, default `sm_90`).
pub const CUDA_ARCH: &str = env!("COALESCE_CUDA_ARCH");

/// Initialises CUDA on device 0 and loads [`PTX`].
///
/// Returns [`Error::NoDevice`] when the machine has no usable GPU.
pub fn init() -> Result<Gpu> {
    Gpu::load(PTX)
}

/// The names most programs need.
pub mod prelude {
    pub use crate::{
        Error, Gpu, MatrixShape, MatrixView, Pipeline, Result, Stream, gemm, nested_sin, softmax, transpose,
    };
}
