//! The `cust` side of `coalesce`: one context, the kernel module, typed
//! launchers that check every shape before anything reaches the driver, and
//! the same launchers on the CPU emulator.
//!
//! | layer | what | where |
//! | --- | --- | --- |
//! | kernels | bodies generic over `ThreadCtx`, compiled to PTX | `coalesce-kernels` |
//! | runtime | [`Gpu`] (context + module), [`Stream`] | [`gpu`] |
//! | launchers | [`transpose::launch`] and one function per version; [`copy::copy`], a transpose as one launch per column | [`transpose`], [`copy`] |
//! | views | [`MatrixView`]: O(1) `.t()` by strides, `.contiguous()` runs the transpose | [`view`] |
//! | host memory | pinned, pageable, [`memory::Registered`] in place | [`memory`] |
//! | pipelines | copy-compute overlap over k streams: [`Pipeline`] | [`pipeline`] |
//! | probes | launch overhead and the FP32 roof | [`probe`] |
//! | emulator | the same launchers on host slices | [`emu`] |
//! | timing | CUDA-event medians: [`time_on_stream`], [`time_sustained`] | [`timing`] |
//! | graphs | capture a closure's launches once, replay them in one call: [`graph::capture`] | [`graph`] |
//! | errors | one [`Error`] for everything that can fail | [`error`] |
//!
//! Library code never panics on bad input and never exits: it returns
//! [`Error`]. `unsafe` appears only at the raw launch, with its reason.

/// One named launcher per step of an op's registry list (handed over by
/// `coalesce_kernels::<op>_steps!`): `fn <name>(stream, <params>)` calls the
/// op's `launch(stream, Variant::<step>, <params>)`, documented with the
/// step's idea. Named shortcuts to a constant of the op's enum may follow the
/// parameters in brackets: `launchers((params) [/// doc
/// sgemm => BEST])`.
#[cfg(feature = "cuda")]
macro_rules! launchers {
    (
        $params:tt
        $([ $( $(#[$adoc:meta])* $alias:ident => $target:ident ),* $(,)? ])?
        op: $op:literal;
        $(#[$meta:meta])*
        pub enum $Variant:ident, geometry $Geometry:ty;
        unsafe fn run<$C:ident> $run:tt;
        $(kernel $kparams:tt => $kcall:tt;)?
        $( #[doc = $idea:literal] $V:ident => $name:ident: $step:literal in $file:literal $({ $($over:tt)* })?; )*
    ) => {
        $( launchers!(@fn [#[doc = concat!("Step ", $step, ", [`", stringify!($Variant), "::", stringify!($V), "`]:", $idea, ".")]]
            $name, $Variant::$V, $params); )*
        $($( launchers!(@fn [$(#[$adoc])*] $alias, $Variant::$target, $params); )*)?
    };
    (@fn [$($doc:tt)*] $name:ident, $which:expr, ($($p:ident: $t:ty),*)) => {
        $($doc)*
        pub fn $name(stream: &$crate::Stream<'_>, $($p: $t),*) -> $crate::Result<()> {
            launch(stream, $which, $($p),*)
        }
    };
}

/// The argument tuple of an op's `.entry` kernels, from its registry list
/// (handed over by `coalesce_kernels::<op>_steps!`): the kernel's parameter
/// types in order, each pointer a [`cust::memory::DevicePointer`]
/// ([`gpu::launch::HostParam`]). Launchers build their arguments as this
/// type, so a parameter added, dropped or reordered in the kernels is a
/// compile error here.
#[cfg(feature = "cuda")]
macro_rules! kernel_params {
    // The list's header before `run` (the op, the enum and its docs) says
    // nothing of the parameters: skipped.
    (op: $op:literal; $($header:tt)*) => {
        kernel_params!(@skip $($header)*);
    };
    (@skip unsafe fn run<$C:ident>($ctx:ident $(, $arg:ident: $argty:ty)* $(,)?); $($rest:tt)*) => {
        kernel_params!(@params ($($argty),*) $($rest)*);
    };
    (@skip $skipped:tt $($rest:tt)*) => {
        kernel_params!(@skip $($rest)*);
    };
    // The entry kernels take `kernel(..)`'s parameters where the op gives
    // them, else `run`'s as they are.
    (@params $run:tt kernel($($karg:ident: $kty:ty),* $(,)?) => $kcall:tt; $($steps:tt)*) => {
        kernel_params!(@types $($kty),*);
    };
    (@params ($($ty:ty),*) $($steps:tt)*) => {
        kernel_params!(@types $($ty),*);
    };
    (@types $($ty:ty),*) => {
        /// The kernels' arguments, in their parameter order (from the registry).
        pub(crate) type KernelParams = ($(<$ty as $crate::gpu::launch::HostParam>::Host,)*);
    };
}

#[cfg(feature = "cuda")]
mod alias;
pub mod copy;
pub mod emu;
pub mod error;
pub mod gemm;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(feature = "cuda")]
pub mod graph;
pub mod limits;
#[cfg(feature = "cuda")]
pub mod memory;
pub mod nested_sin;
#[cfg(feature = "cuda")]
pub mod pipeline;
#[cfg(feature = "cuda")]
pub mod probe;
pub mod shape;
pub mod softmax;
/// The untimed time `time_sustained` gives a kernel by default, in ms: a
/// tensor-core GEMM brings an H200 to its power limit, and its clock from
/// 1980 MHz down to 1425-1575 within about 0.4 s, its throughput settling
/// within about 200 ms (`docs/measurements/2026-11-28-h200-gemm-sustained` at commit f58f145).
pub const SUSTAIN_MS: f64 = 500.0;

#[cfg(feature = "cuda")]
pub mod timing;
pub mod transpose;
pub mod view;

pub use coalesce_kernels::{Dim3, LaunchDims};
pub use error::{Error, Result};
#[cfg(feature = "cuda")]
pub use gpu::{Gpu, Ptx, Stream};
pub use limits::GridLimits;
#[cfg(feature = "cuda")]
pub use pipeline::Pipeline;
pub use shape::MatrixShape;
#[cfg(feature = "cuda")]
pub use timing::{Timing, time_on_stream, time_sustained};
pub use view::StridedLayout;
#[cfg(feature = "cuda")]
pub use view::{Contiguous, MatrixView};
