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
//! Embedding the kernels in another `cust` program: [`load_into`] loads them
//! into the program's context (any device), and [`Gpu::borrow_stream`]
//! launches them on its streams. [`init_on`] opens device N. The raw PTX is
//! [`MODULES`], one per architecture, with the entries listed in
//! [`kernels::entry_points`].
//!
//! # Threads
//! [`Gpu`] and [`Stream`] are `Send` and `Sync`. Each call makes the
//! `Gpu`'s context current on the calling thread first, so one `Gpu` can be
//! shared by threads, or each thread can make its own; all `Gpu`s of one
//! device share its primary context. Graphs are captured on non-blocking
//! streams only ([`graph`] says why), so a capture in one thread is never
//! broken by what other threads do.

pub use coalesce_host::*;
#[doc(inline)]
pub use coalesce_kernels as kernels;

/// Every kernel as PTX, one module per GPU architecture (`sm_80`, `sm_90`,
/// `sm_90a`: the one module with the kernels that need it, such as `wgmma`),
/// lowest first: the modules shipped in `ptx/`, or rebuilt from `kernels/`
/// by the build script, `build/` (`COALESCE_PTX` picks which: docs/ptx.md).
#[cfg(feature = "cuda")]
pub const MODULES: &[coalesce_host::Ptx] = include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The `sm_90` module of [`MODULES`]: every kernel, built for [`CUDA_ARCH`].
#[cfg(feature = "cuda")]
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/sm_90.ptx"));

/// The GPU architecture [`PTX`] was built for.
#[cfg(feature = "cuda")]
pub const CUDA_ARCH: &str = "sm_90";

/// Initialises CUDA on device 0 and loads the newest of [`MODULES`] the
/// device can run.
///
/// Returns [`Error::NoDevice`] when the machine has no usable GPU, and
/// [`Error::UnsupportedArchitecture`] for a GPU older than every module.
#[cfg(feature = "cuda")]
pub fn init() -> Result<Gpu> {
    init_on(0)
}

/// [`init`] on device `ordinal`: one [`Gpu`] per device, as many as the
/// machine has ([`Error::DeviceNotFound`] past the last).
#[cfg(feature = "cuda")]
pub fn init_on(ordinal: u32) -> Result<Gpu> {
    Gpu::open(ordinal, MODULES)
}

/// The kernels loaded into a `cust` program's own context, on whatever
/// device it was made for. Launch them on the program's streams through
/// [`Gpu::borrow_stream`]:
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use cust::prelude::*;
/// let _ctx = cust::quick_init()?; // the program's context and device
/// let stream = Stream::new(StreamFlags::DEFAULT, None)?;
/// let gpu = coalesce::load_into(&_ctx)?;
/// let on_mine = gpu.borrow_stream(&stream)?;
/// let shape = coalesce::MatrixShape::new(1000, 3000)?;
/// let input = DeviceBuffer::from_slice(&vec![1.0f32; shape.len()])?;
/// let mut output = DeviceBuffer::<f32>::zeroed(shape.len())?;
/// coalesce::transpose::vec4(&on_mine, &input, &mut output, shape)?;
/// stream.synchronize()?;
/// # Ok(()) }
/// ```
#[cfg(feature = "cuda")]
pub fn load_into(context: &cust::context::Context) -> Result<Gpu> {
    Gpu::in_context(context, MODULES)
}

/// The Rust examples of README.md, docs/embedding.md and docs/emulator.md,
/// compiled as doctests of this crate (`cargo test --doc`), as a dependent
/// compiles them; the README's program runs (on the emulator where there is
/// no GPU).
#[cfg(all(doctest, feature = "cuda"))]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../docs/embedding.md")]
#[doc = include_str!("../docs/emulator.md")]
pub struct DocumentedExamples;

/// The names most programs need.
pub mod prelude {
    pub use crate::{
        Error, MatrixShape, Result, copy,
        gemm::{self, AlphaBeta, GemmShape},
        nested_sin, softmax, transpose,
    };
    #[cfg(feature = "cuda")]
    pub use crate::{Gpu, MatrixView, Pipeline, Stream, graph};
}
