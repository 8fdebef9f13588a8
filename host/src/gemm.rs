//! Typed launchers for the GEMM ladder (see `coalesce_kernels::gemm`):
//! `C = alpha * A * B + beta * C`, f32, row-major, any `M, N, K`.
//!
//! ```no_run
//! # fn main() -> coalesce_host::Result<()> {
//! # let ptx = "";
//! use coalesce_host::gemm::{self, AlphaBeta, GemmShape};
//! use coalesce_host::Gpu;
//! let gpu = Gpu::load(ptx)?;
//! let stream = gpu.stream()?;
//! let shape = GemmShape::new(1000, 3000, 777)?; // M, N, K
//! let a = gpu.upload(&vec![1.0f32; shape.a().len()])?;
//! let b = gpu.upload(&vec![1.0f32; shape.b().len()])?;
//! let mut c = gpu.alloc::<f32>(shape.c().len())?;
//! gemm::sgemm(&stream, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)?; // C = A * B
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use crate::gpu::arg;
use crate::{Gpu, GridLimits, LaunchDims, MatrixShape, Result, Stream};
pub use coalesce_kernels::gemm::{DB, Problem, Variant, WT, WarpTiling};
use cust::memory::DeviceSlice;
use std::fmt;

/// The shape of one GEMM: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    a: MatrixShape,
    b: MatrixShape,
    c: MatrixShape,
}

impl GemmShape {
    /// Checks that every dimension is nonzero and that each of the three
    /// matrices fits the kernels' `u32` dimensions and the address space
    /// ([`crate::Error::ZeroDimension`], [`crate::Error::ShapeTooLarge`], reported for the
    /// first matrix that fails, `A` then `B` then `C`).
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self> {
        Ok(GemmShape { a: MatrixShape::new(m, k)?, b: MatrixShape::new(k, n)?, c: MatrixShape::new(m, n)? })
    }
    pub fn m(self) -> usize {
        self.c.rows()
    }
    pub fn n(self) -> usize {
        self.c.cols()
    }
    pub fn k(self) -> usize {
        self.a.cols()
    }
    /// Shape of `A`, `m x k`.
    pub fn a(self) -> MatrixShape {
        self.a
    }
    /// Shape of `B`, `k x n`.
    pub fn b(self) -> MatrixShape {
        self.b
    }
    /// Shape of `C`, `m x n`.
    pub fn c(self) -> MatrixShape {
        self.c
    }
    /// Floating-point operations of the product, `2 m n k` (one FMA = 2).
    pub fn flops(self) -> u64 {
        2 * self.m() as u64 * self.n() as u64 * self.k() as u64
    }
    fn problem(self, s: AlphaBeta) -> Problem {
        Problem { m: self.m() as u32, n: self.n() as u32, k: self.k() as u32, alpha: s.alpha, beta: s.beta }
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

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns the launch geometry. Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant,
    shape: GemmShape,
    lens: (usize, usize, usize),
    limits: &GridLimits,
) -> Result<LaunchDims> {
    shape.a.check_len("A", lens.0)?;
    shape.b.check_len("B", lens.1)?;
    shape.c.check_len("C", lens.2)?;
    let dims = variant.launch_dims(shape.m() as u32, shape.n() as u32);
    limits.check(variant.entry_point(), &shape, dims)?;
    Ok(dims)
}

/// `C = alpha * A * B + beta * C` with the given version, queued on `stream`.
///
/// Errors: [`crate::Error::LengthMismatch`] if a buffer does not hold exactly its
/// matrix, [`crate::Error::GridTooLarge`] if `m` needs more block rows than the
/// device allows, [`crate::Error::Aliased`] if `C` overlaps `A` or `B` (`A` and `B`
/// may overlap: both are only read), and driver errors from the launch itself.
pub fn launch(
    stream: &Stream<'_>,
    variant: Variant,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    let dims = plan(variant, shape, (a.len(), b.len(), c.len()), &stream.gpu().grid_limits())?;
    crate::alias::disjoint(variant.entry_point(), a, c)?;
    crate::alias::disjoint(variant.entry_point(), b, c)?;
    let (mut pa, mut pb, mut pc) = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
    let p = shape.problem(scalars);
    let (mut m, mut n, mut k, mut alpha, mut beta) = (p.m, p.n, p.k, p.alpha, p.beta);
    let args = [
        arg(&mut pa),
        arg(&mut pb),
        arg(&mut pc),
        arg(&mut m),
        arg(&mut n),
        arg(&mut k),
        arg(&mut alpha),
        arg(&mut beta),
    ];
    // SAFETY: the kernel takes (const f32* a, const f32* b, f32* c, u32 m,
    // u32 n, u32 k, f32 alpha, f32 beta); the buffers hold m*k, k*n and m*n
    // floats and C overlaps neither A nor B (checked above).
    unsafe { stream.launch_raw(variant.entry_point(), dims, &args) }
}

/// `C = alpha * A * B + beta * C` in FP32 with the fastest FP32-accurate
/// version for the loaded module and this product ([`sgemm_variant`]): on an
/// H100 (the `sm_90a` module), step 11, 3xTF32 on the tensor cores with its
/// partial sums promoted into f32 registers, measured faster than cuBLAS
/// SGEMM and more accurate (docs/gemm.md), where `N` and `K` are multiples
/// of 4 and `A` and `B` 16-byte aligned; elsewhere step 7
/// ([`Variant::BEST`]), FMA units only. Errors as [`launch`].
pub fn sgemm(
    stream: &Stream<'_>,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    launch(stream, sgemm_variant(stream.gpu(), shape, a, b), a, b, c, shape, scalars)
}

/// The version [`sgemm`] launches on `gpu` for `shape` and these buffers:
/// [`Variant::sgemm_for`] of its loaded module; step 7 for a module loaded as
/// text, which may lack step 11.
pub fn sgemm_variant(gpu: &Gpu, shape: GemmShape, a: &DeviceSlice<f32>, b: &DeviceSlice<f32>) -> Variant {
    let vector = (a.as_device_ptr().as_raw() | b.as_device_ptr().as_raw()).is_multiple_of(16);
    gpu.module_name().map_or(Variant::BEST, |m| Variant::sgemm_for(m, shape.n() as u32, shape.k() as u32, vector))
}

coalesce_kernels::gemm_steps!(launchers(
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: GemmShape,
    scalars: AlphaBeta
));

/// The GEMM launchers on the CPU emulator: same checks, same kernel bodies,
/// host slices. Slow (one OS thread per CUDA thread): small shapes only.
pub mod emu {
    use super::{AlphaBeta, GemmShape, Variant, plan};
    use crate::emu::{Report, staged};
    use crate::{GridLimits, Result};
    use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};

    /// [`super::launch`] on the emulator. The grid is checked against
    /// [`GridLimits::CUDA`], so shapes a GPU would refuse are refused here too.
    pub fn gemm(
        variant: Variant,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: GemmShape,
        scalars: AlphaBeta,
    ) -> Result<()> {
        let dims = plan(variant, shape, (a.len(), b.len(), c.len()), &GridLimits::CUDA)?;
        let (pa, pb, pc) = (SyncPtr::new(a), SyncPtr::new(b), SyncMutPtr::new(c));
        let p = shape.problem(scalars);
        // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
        emu::launch(dims, |ctx| unsafe { variant.run(ctx, pa.get(), pb.get(), pc.get(), p) })?;
        Ok(())
    }

    /// [`gemm`] with the memory counters: returns the [`Report`] (the
    /// checker's findings are in it, not an error). `A`, `B` and `C` are
    /// staged in 256-byte aligned copies, as `cuMemAlloc` aligns device
    /// buffers, so the sectors are those a GPU's request would touch.
    ///
    /// ```
    /// # fn main() -> coalesce_host::Result<()> {
    /// use coalesce_host::emu::Op;
    /// use coalesce_host::gemm::{AlphaBeta, GemmShape, Variant, emu};
    /// let shape = GemmShape::new(32, 32, 32)?;
    /// let (a, b) = (vec![1.0f32; shape.a().len()], vec![1.0f32; shape.b().len()]);
    /// let mut c = vec![0.0f32; shape.c().len()];
    /// let report = emu::gemm_checked(Variant::SmemTiled, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)?;
    /// assert!(report.findings.is_empty());
    /// assert!(c.iter().all(|&x| x == 32.0));
    /// // The tile loads: a warp reads 32 consecutive floats of a row, 4 sectors.
    /// assert_eq!(report.counters.total(Op::GlobalLoad).per_request(), 4.0);
    /// # Ok(()) }
    /// ```
    pub fn gemm_checked(
        variant: Variant,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: GemmShape,
        scalars: AlphaBeta,
    ) -> Result<Report> {
        let dims = plan(variant, shape, (a.len(), b.len(), c.len()), &GridLimits::CUDA)?;
        let p = shape.problem(scalars);
        staged(dims, [a, b], c, |ctx, [a, b], c| {
            // SAFETY: lengths checked by `plan`; the staged copies are distinct.
            unsafe { variant.run(ctx, a, b, c, p) }
        })
    }
}
