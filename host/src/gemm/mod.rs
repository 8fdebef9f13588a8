//! Typed launchers for the GEMM ladder (see `coalesce_kernels::gemm`):
//! `C = alpha * A * B + beta * C`, f32, row-major, any `M, N, K`.
//!
// GPU examples compile only with the `cuda` feature (`coalesce::init`).
#![cfg_attr(feature = "cuda", doc = "```no_run")]
#![cfg_attr(not(feature = "cuda"), doc = "```ignore")]
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.stream()?;
//! let shape = GemmShape::new(1000, 3000, 777)?; // M, N, K
//! let a = gpu.upload(&vec![1.0f32; shape.a().len()])?;
//! let b = gpu.upload(&vec![1.0f32; shape.b().len()])?;
//! let mut c = gpu.alloc::<f32>(shape.c().len())?;
//! gemm::sgemm(&stream, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)?; // C = A * B
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use crate::{MatrixShape, Result};
pub use coalesce_kernels::gemm::{DB, Feed, Operand, Precision, Problem, Split, Variant, WT, WarpTiling};
use std::fmt;

#[cfg(feature = "cuda")]
use crate::{Gpu, Stream};
#[cfg(feature = "cuda")]
use cust::memory::DeviceSlice;
#[cfg(feature = "cuda")]
use plan::{Plan, plan};

pub mod emu;
#[cfg(feature = "cuda")]
mod launch;
mod plan;
mod run;

/// The shape of one GEMM: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`.
/// Any dimension may be 0, as in BLAS: with `m = 0` or `n = 0` the product
/// does nothing, with `k = 0` it is `C = beta * C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    m: u32,
    n: u32,
    k: u32,
}

/// The shape of one of a GEMM's matrices, `rows x cols` row-major (either
/// may be 0).
pub type OperandShape = MatrixShape;

impl GemmShape {
    /// Checks that each of the three matrices fits the kernels' `u32`
    /// dimensions and the address space ([`crate::Error::ShapeTooLarge`],
    /// reported for the first matrix that fails, `A` then `B` then `C`).
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self> {
        let (m32, k32) = MatrixShape::fits(m, k)?;
        let (_, n32) = MatrixShape::fits(k, n)?;
        MatrixShape::fits(m, n)?;
        Ok(GemmShape { m: m32, n: n32, k: k32 })
    }
    pub fn m(self) -> usize {
        self.m as usize
    }
    pub fn n(self) -> usize {
        self.n as usize
    }
    pub fn k(self) -> usize {
        self.k as usize
    }
    /// Shape of `A`, `m x k`.
    pub fn a(self) -> OperandShape {
        MatrixShape::of(self.m, self.k)
    }
    /// Shape of `B`, `k x n`.
    pub fn b(self) -> OperandShape {
        MatrixShape::of(self.k, self.n)
    }
    /// Shape of `C`, `m x n`.
    pub fn c(self) -> OperandShape {
        MatrixShape::of(self.m, self.n)
    }
    /// Floating-point operations of the product, `2 m n k` (one FMA = 2),
    /// saturating at `u64::MAX`: three `u32` dimensions can pass it (2^64
    /// FLOPs is 2^21 on each side, operands of 16 TiB each), which no GPU's
    /// memory holds.
    pub fn flops(self) -> u64 {
        let f = 2 * u128::from(self.m) * u128::from(self.n) * u128::from(self.k);
        u64::try_from(f).unwrap_or(u64::MAX)
    }
    fn problem(self, s: AlphaBeta) -> Problem {
        Problem { m: self.m, n: self.n, k: self.k, alpha: s.alpha, beta: s.beta }
    }
}

impl fmt::Display for GemmShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m(), self.n(), self.k())
    }
}

/// The scalars of `C = alpha * A * B + beta * C`. With `beta == 0`, `C` is
/// only written (as in BLAS: its old contents, NaNs included, are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaBeta {
    pub alpha: f32,
    pub beta: f32,
}

impl AlphaBeta {
    /// `C = A * B`.
    pub const PRODUCT: AlphaBeta = AlphaBeta { alpha: 1.0, beta: 0.0 };
    pub const fn new(alpha: f32, beta: f32) -> Self {
        AlphaBeta { alpha, beta }
    }
}

/// `C = alpha * A * B + beta * C` with the given version, queued on `stream`.
///
/// Errors: [`crate::Error::LengthMismatch`] if a buffer does not hold exactly its
/// matrix, [`crate::Error::GridTooLarge`] if `m` needs more block rows than the
/// device allows, [`crate::Error::Aliased`] if `C` overlaps `A` or `B` (`A` and `B`
/// may overlap: both are only read), and driver errors from the launch itself;
/// a TMA step's workspace may fail with [`crate::Error::OutOfMemory`].
#[cfg(feature = "cuda")]
pub fn launch(
    stream: &Stream<'_>, variant: Variant, a: &DeviceSlice<f32>, b: &DeviceSlice<f32>, c: &mut DeviceSlice<f32>,
    shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    let gpu = stream.gpu();
    let plan = plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &gpu.grid_limits(), gpu.sm_count())?;
    crate::alias::disjoint(variant.entry_point(), a, c)?;
    crate::alias::disjoint(variant.entry_point(), b, c)?;
    let operands = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
    match plan {
        Plan::Nothing => Ok(()),
        Plan::Tma(variant, feed, dims) => launch::tma(stream, (variant, feed), dims, (a, b, c), shape, scalars),
        // SAFETY: the buffers hold m*k, k*n and m*n floats and C overlaps
        // neither A nor B (checked above); with k = 0 neither is read.
        Plan::Product(variant, dims, scalars) => unsafe {
            launch::step(stream, variant.entry_point(), dims, operands, shape.problem(scalars))
        },
    }
}

/// `C = alpha * A * B + beta * C` in FP32 with the fastest FP32-accurate
/// version for the loaded module and the shape ([`sgemm_variant`]): step
/// 16 (3xTF32 on the tensor cores, fed by the TMA) in the `sm_90a` module,
/// measured faster than cuBLAS SGEMM and more accurate (docs/gemm.md);
/// step 7 ([`Variant::BEST`], FMA units only) elsewhere. Both have FP32
/// semantics for any input: inf, NaN, `FLT_MAX` and subnormals give what an
/// FP32 FMA GEMM gives (docs/gemm.md says how). An empty product is BLAS's:
/// nothing for `m = 0` or `n = 0`, `C = beta * C` for `k = 0`. Errors as
/// [`launch`]; step 16 allocates a workspace on `stream` (the TF32 halves
/// of `A`, `8 m k` bytes, about; for a split `K` its partial products, `4 S
/// m n` bytes for `S` runs), which may fail with [`crate::Error::OutOfMemory`].
#[cfg(feature = "cuda")]
pub fn sgemm(
    stream: &Stream<'_>, a: &DeviceSlice<f32>, b: &DeviceSlice<f32>, c: &mut DeviceSlice<f32>, shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    launch(stream, sgemm_variant(stream.gpu(), shape), a, b, c, shape, scalars)
}

/// The version [`sgemm`] launches on `gpu` for `shape`: [`Variant::sgemm_for`]
/// of its loaded module; step 7 for a module loaded as text, which may lack
/// step 16.
#[cfg(feature = "cuda")]
pub fn sgemm_variant(gpu: &Gpu, shape: GemmShape) -> Variant {
    gpu.module_name().map_or(Variant::BEST, |m| Variant::sgemm_for(m, (shape.m(), shape.n(), shape.k())))
}

#[cfg(feature = "cuda")]
coalesce_kernels::gemm_steps!(launchers(
    a: &DeviceSlice<f32>, b: &DeviceSlice<f32>, c: &mut DeviceSlice<f32>, shape: GemmShape, scalars: AlphaBeta
));
#[cfg(feature = "cuda")]
coalesce_kernels::gemm_steps!(kernel_params);
