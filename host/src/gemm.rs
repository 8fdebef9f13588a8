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

use crate::{GridLimits, LaunchDims, MatrixShape, Result};
pub use coalesce_kernels::gemm::{DB, Precision, Problem, Variant, WT, WarpTiling};
use std::fmt;

#[cfg(feature = "cuda")]
use crate::{Gpu, Stream, gpu::arg};
#[cfg(feature = "cuda")]
use cust::memory::DeviceSlice;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OperandShape {
    rows: usize,
    cols: usize,
}

impl OperandShape {
    pub fn rows(self) -> usize {
        self.rows
    }
    pub fn cols(self) -> usize {
        self.cols
    }
    /// Number of elements.
    pub fn len(self) -> usize {
        self.rows * self.cols
    }
    /// Whether the matrix has no elements.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// Checks that a buffer of `actual` elements holds exactly this matrix.
    fn check_len(self, buffer: &'static str, actual: usize) -> Result<()> {
        if actual != self.len() {
            return Err(crate::Error::LengthMismatch { buffer, shape: self.to_string(), expected: self.len(), actual });
        }
        Ok(())
    }
}

impl fmt::Display for OperandShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

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
        OperandShape { rows: self.m(), cols: self.k() }
    }
    /// Shape of `B`, `k x n`.
    pub fn b(self) -> OperandShape {
        OperandShape { rows: self.k(), cols: self.n() }
    }
    /// Shape of `C`, `m x n`.
    pub fn c(self) -> OperandShape {
        OperandShape { rows: self.m(), cols: self.n() }
    }
    /// Floating-point operations of the product, `2 m n k` (one FMA = 2).
    pub fn flops(self) -> u64 {
        2 * self.m() as u64 * self.n() as u64 * self.k() as u64
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

/// What a GEMM launch runs, once its buffers are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// `m = 0` or `n = 0` (`C` has no element), or `k = 0` with `beta ==
    /// 1` (`C = C`): nothing.
    Nothing,
    /// `k = 0`: `C = beta * C`, step 1 with `alpha = 0` and no terms (its
    /// epilogue writes `0` where `beta == 0`, without reading `C`). Every
    /// module has step 1, and the TMA steps cannot describe a 0-wide operand.
    Scale(LaunchDims),
    /// The version itself.
    Product(LaunchDims),
}

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns what to launch. Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant,
    shape: GemmShape,
    lens: (usize, usize, usize),
    scalars: AlphaBeta,
    limits: &GridLimits,
) -> Result<Plan> {
    shape.a().check_len("A", lens.0)?;
    shape.b().check_len("B", lens.1)?;
    shape.c().check_len("C", lens.2)?;
    if shape.c().is_empty() || (shape.k() == 0 && scalars.beta == 1.0) {
        return Ok(Plan::Nothing);
    }
    let (m, n) = (shape.m() as u32, shape.n() as u32);
    if shape.k() == 0 {
        let dims = Variant::Naive.launch_dims(m, n);
        limits.check(Variant::Naive.entry_point(), &shape, dims)?;
        return Ok(Plan::Scale(dims));
    }
    let dims = variant.launch_dims(m, n);
    limits.check(variant.entry_point(), &shape, dims)?;
    Ok(Plan::Product(dims))
}

/// The scalars of [`Plan::Scale`]: `alpha = 0`, so that the (empty) product
/// adds `+0` whatever `alpha` is, as BLAS's `C = beta * C`.
fn scale_only(s: AlphaBeta) -> AlphaBeta {
    AlphaBeta { alpha: 0.0, beta: s.beta }
}

/// `C = alpha * A * B + beta * C` with the given version, queued on `stream`.
///
/// Errors: [`crate::Error::LengthMismatch`] if a buffer does not hold exactly its
/// matrix, [`crate::Error::GridTooLarge`] if `m` needs more block rows than the
/// device allows, [`crate::Error::Aliased`] if `C` overlaps `A` or `B` (`A` and `B`
/// may overlap: both are only read), and driver errors from the launch itself.
#[cfg(feature = "cuda")]
pub fn launch(
    stream: &Stream<'_>,
    variant: Variant,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    let plan = plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &stream.gpu().grid_limits())?;
    crate::alias::disjoint(variant.entry_point(), a, c)?;
    crate::alias::disjoint(variant.entry_point(), b, c)?;
    let operands = (a.as_device_ptr().as_raw(), b.as_device_ptr().as_raw(), c.as_device_ptr().as_raw());
    match plan {
        Plan::Nothing => Ok(()),
        // SAFETY: C holds m*n floats; k = 0: A and B are not read.
        Plan::Scale(dims) => unsafe {
            launch_gemm_kernel(
                stream,
                Variant::Naive.entry_point(),
                dims,
                operands,
                shape.problem(scale_only(scalars)),
                None,
            )
        },
        Plan::Product(dims) if variant.geometry().tma => launch_tma(stream, variant, dims, (a, b, c), shape, scalars),
        // SAFETY: the buffers hold m*k, k*n and m*n floats and C overlaps
        // neither A nor B (checked above).
        Plan::Product(dims) => unsafe {
            launch_gemm_kernel(stream, variant.entry_point(), dims, operands, shape.problem(scalars), None)
        },
    }
}

/// Queues `entry`, a kernel of `(a, b, c, m, n, k, alpha, beta)`, with
/// `marks` after them when given: every GEMM step, and `gemm_fixup`.
///
/// # Safety
/// `a` and `b` are what the kernel reads (the matrices, or for a TMA step
/// its tensor maps), `c` holds `m * n` floats and overlaps neither; `marks`
/// is given exactly when `entry` takes it (`gemm_fixup`: `1 + m + n` words).
#[cfg(feature = "cuda")]
unsafe fn launch_gemm_kernel(
    stream: &Stream<'_>,
    entry: &'static str,
    dims: LaunchDims,
    (a, b, c): (u64, u64, u64),
    p: Problem,
    marks: Option<u64>,
) -> Result<()> {
    let (mut pa, mut pb, mut pc, mut pm) = (a, b, c, marks.unwrap_or(0));
    let (mut m, mut n, mut k, mut alpha, mut beta) = (p.m, p.n, p.k, p.alpha, p.beta);
    let mut args = vec![
        arg(&mut pa),
        arg(&mut pb),
        arg(&mut pc),
        arg(&mut m),
        arg(&mut n),
        arg(&mut k),
        arg(&mut alpha),
        arg(&mut beta),
    ];
    if marks.is_some() {
        args.push(arg(&mut pm));
    }
    // SAFETY: the kernel takes (a, b, c: 64-bit addresses, u32 m, u32 n,
    // u32 k, f32 alpha, f32 beta[, u32* marks]); the caller's contract.
    unsafe { stream.launch_raw(entry, dims, &args) }
}

/// A 2D f32 tensor as a TMA step reads it: `rows` rows of `cols` values,
/// `row_bytes` apart, at device address `base`; copied `box_rows x
/// box_cols` at a time into shared memory with the 128-byte swizzle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tensor2d {
    pub base: u64,
    pub cols: u64,
    pub rows: u64,
    pub row_bytes: u64,
    pub box_cols: u32,
    pub box_rows: u32,
}

/// Where a TMA step's operands live in its workspace: its tensor maps at
/// the start (`A`'s, then `B^T`'s), then `A` (`m` rows of `kp` floats) and
/// `B^T` (`n` rows of `kp`): rounded to TF32, or, for 3xTF32, each as two
/// TF32 halves (`hi`, then `lo`), followed by the marks of the non-finite
/// inputs (`1 + m + n` words, see `gemm::fixup`). `kp` is `k` rounded up to 32: a tensor
/// map needs rows 16-byte aligned, and rows 128-byte aligned make each
/// 128-byte row of a box one L2 line instead of two (at 4097^3, rounding to
/// 4 measured 64 TFLOP/s against 99 at 4095^3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TmaLayout {
    pub(crate) kp: usize,
    /// Arrays per operand: 1, or 2 (the halves).
    pub(crate) halves: usize,
    /// Byte offsets of `A`'s and `B^T`'s first array, of the marks (3xTF32
    /// only: none, `None`), and the total.
    pub(crate) a: usize,
    pub(crate) bt: usize,
    pub(crate) marks: Option<usize>,
    pub(crate) bytes: usize,
}

impl TmaLayout {
    pub(crate) fn new(variant: Variant, shape: GemmShape) -> TmaLayout {
        let kp = shape.k().next_multiple_of(32);
        let halves = if variant.geometry().precision == Precision::Split3xTf32 { 2 } else { 1 };
        let a = 2 * halves * size_of::<coalesce_kernels::TensorMap>();
        let bt = a + 4 * halves * shape.m() * kp;
        let end = bt + 4 * halves * shape.n() * kp;
        if halves == 2 {
            TmaLayout { kp, halves, a, bt, marks: Some(end), bytes: end + 4 * (1 + shape.m() + shape.n()) }
        } else {
            TmaLayout { kp, halves, a, bt, marks: None, bytes: end }
        }
    }
    /// The marks' three parts with the workspace at `base`: the word raised
    /// for any non-finite input, `A`'s rows, `B`'s columns (0s without marks).
    pub(crate) fn marks_at(&self, base: u64, shape: GemmShape) -> (u64, u64, u64) {
        self.marks.map_or((0, 0, 0), |at| {
            let any = base + at as u64;
            (any, any + 4, any + 4 + 4 * shape.m() as u64)
        })
    }
    /// The addresses of `A`'s maps and of `B^T`'s, with the workspace at
    /// `base`: what the product takes as `a` and `b`.
    pub(crate) fn maps_at(&self, base: u64) -> (u64, u64) {
        (base, base + (self.halves * size_of::<coalesce_kernels::TensorMap>()) as u64)
    }
    /// Byte offset of array `half` of the operand whose first is at `at`,
    /// `rows` rows long.
    fn half(&self, at: usize, rows: usize, half: usize) -> usize {
        at + 4 * half * rows * self.kp
    }
    /// The arrays' shapes with the workspace at `base`, in the maps' order
    /// (`A`'s halves, then `B^T`'s): boxes of 32 of `K` by the step's tile.
    pub(crate) fn tensors(&self, variant: Variant, shape: GemmShape, base: u64) -> Vec<Tensor2d> {
        let (bm, bn) = variant.block_tile();
        let tensor = |at: usize, rows: usize, box_rows: u32| Tensor2d {
            base: base + at as u64,
            cols: shape.k() as u64,
            rows: rows as u64,
            row_bytes: 4 * self.kp as u64,
            box_cols: coalesce_kernels::gemm::TMA_BK,
            box_rows,
        };
        let (m, n) = (shape.m(), shape.n());
        let a = (0..self.halves).map(|h| tensor(self.half(self.a, m, h), m, bm));
        a.chain((0..self.halves).map(|h| tensor(self.half(self.bt, n, h), n, bn))).collect()
    }
}

/// A TMA step ([`Geometry::tma`]): `A` and `B^T` made in the workspace by
/// `gemm_pack` (rounded to TF32 or split, rows padded; the passes also
/// write the tensor maps), then the product, all on `stream`; the workspace
/// is freed in stream order after it.
#[cfg(feature = "cuda")]
fn launch_tma(
    stream: &Stream<'_>,
    variant: Variant,
    dims: LaunchDims,
    (a, b, c): (&DeviceSlice<f32>, &DeviceSlice<f32>, &mut DeviceSlice<f32>),
    shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    use coalesce_kernels::gemm::fixup::fixup_dims;
    use coalesce_kernels::gemm::pack::pack_dims;
    let gpu = stream.gpu();
    // Refuse a module without the step before allocating anything.
    gpu.require(variant.entry_point())?;
    let (m, n, k) = (shape.m(), shape.n(), shape.k());
    let limits = gpu.grid_limits();
    limits.check(PACK, &shape, pack_dims(m as u32, k as u32))?;
    limits.check(PACK, &shape, pack_dims(k as u32, n as u32))?;
    let layout = TmaLayout::new(variant, shape);
    let fix = layout.marks.is_some().then(|| fixup_dims(m as u32, n as u32));
    if let Some(fix) = fix {
        limits.check(FIXUP, &shape, fix)?;
    }
    let ws = crate::tma::Workspace::new(stream, layout.bytes)?;
    let base = ws.base();
    let maps = layout
        .tensors(variant, shape, base)
        .into_iter()
        .map(|t| Ok((t.base, crate::tma::encode(t)?)))
        .collect::<Result<Vec<_>>>()?;
    let (any, _, _) = layout.marks_at(base, shape);
    if fix.is_some() {
        stream.gpu().bind()?;
        // SAFETY: the 1 + m + n words of marks lie inside the workspace; a
        // memset in stream order (a node of its own in a graph capture).
        let r = unsafe { cust::sys::cuMemsetD32Async(any, 0, 1 + m + n, stream.raw()) };
        crate::error::check("cuMemsetD32Async", r)?;
    }
    let (ap, bp, cp) = (a.as_device_ptr().as_raw(), b.as_device_ptr().as_raw(), c.as_device_ptr().as_raw());
    for pass in passes(&layout, shape, base, (ap, bp), &maps) {
        // SAFETY: A holds m x k floats, B k x n; the destinations, the maps
        // and the marks lie inside the workspace, which nothing else uses.
        unsafe { pack_raw(stream, pass) }?;
    }
    let (a_maps, b_maps) = layout.maps_at(base);
    // SAFETY: the maps describe A's and B^T's arrays, written by the passes
    // queued before it; C holds m*n floats and overlaps neither A nor B
    // (checked by `launch`).
    unsafe {
        launch_gemm_kernel(stream, variant.entry_point(), dims, (a_maps, b_maps, cp), shape.problem(scalars), None)
    }?;
    match fix {
        // SAFETY: A, B and C hold their matrices, C overlaps neither; the
        // marks (1 + m + n words) were written by the passes before it.
        Some(fix) => unsafe { launch_gemm_kernel(stream, FIXUP, fix, (ap, bp, cp), shape.problem(scalars), Some(any)) },
        None => Ok(()),
    }
}

/// The fix-up's entry point.
#[cfg(feature = "cuda")]
const FIXUP: &str = "gemm_fixup";

/// One `gemm_pack` launch: the source, its shape, the destination arrays,
/// the flags, and where the two maps `words` go (0: nowhere).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pass {
    pub(crate) src: u64,
    pub(crate) shape: coalesce_kernels::gemm::pack::PackShape,
    pub(crate) hi: u64,
    pub(crate) lo: u64,
    pub(crate) maps: u64,
    pub(crate) words: [coalesce_kernels::TensorMap; 2],
    /// Where a split pass marks non-finite values (`Marks`): the word for
    /// any, and the operand's lines (0, 0 when not split).
    pub(crate) any: u64,
    pub(crate) lines: u64,
}

/// The two passes of a TMA step, `A` then `B`, from the arrays and maps of
/// `layout` (`maps`: each array's address and tensor map, in the maps'
/// order). With one array per operand, `A`'s pass writes both maps; with
/// halves, each pass writes its operand's two.
pub(crate) fn passes(
    layout: &TmaLayout,
    shape: GemmShape,
    base: u64,
    (a, b): (u64, u64),
    maps: &[(u64, coalesce_kernels::TensorMap)],
) -> [Pass; 2] {
    use coalesce_kernels::gemm::pack::{PACK_SPLIT, PACK_TRANSPOSE, PackShape};
    let (m, n, k, kp) = (shape.m() as u32, shape.n() as u32, shape.k() as u32, layout.kp as u32);
    let split = if layout.halves == 2 { PACK_SPLIT } else { 0 };
    let h = layout.halves;
    let (a_arrays, b_arrays) = (&maps[..h], &maps[h..]);
    let lo = |arrays: &[(u64, coalesce_kernels::TensorMap)]| arrays.get(1).map_or(0, |x| x.0);
    let words = |i: usize, j: usize| [maps[i].1, maps[j].1];
    let (a_maps, b_maps) = layout.maps_at(base);
    let (a_words, b_words, b_maps) =
        if h == 2 { (words(0, 1), words(2, 3), b_maps) } else { (words(0, 1), words(0, 1), 0) };
    let (any, a_lines, b_lines) = layout.marks_at(base, shape);
    [
        Pass {
            src: a,
            shape: PackShape { rows: m, cols: k, stride: kp, flags: split },
            hi: a_arrays[0].0,
            lo: lo(a_arrays),
            maps: a_maps,
            words: a_words,
            any,
            lines: a_lines,
        },
        Pass {
            src: b,
            shape: PackShape { rows: k, cols: n, stride: kp, flags: split | PACK_TRANSPOSE },
            hi: b_arrays[0].0,
            lo: lo(b_arrays),
            maps: b_maps,
            words: b_words,
            any,
            lines: b_lines,
        },
    ]
}

/// The operand pass's entry point.
#[cfg(feature = "cuda")]
const PACK: &str = "gemm_pack";

/// Queues the pass on `stream`.
///
/// # Safety
/// `src` holds the source's floats; `hi` (and `lo`, unless 0) its
/// destination (`PackShape::dst_len`), `maps` 256 bytes or is 0, and for a
/// split pass `any` one word and `lines` one per destination row; none
/// overlaps `src`.
#[cfg(feature = "cuda")]
unsafe fn pack_raw(stream: &Stream<'_>, pass: Pass) -> Result<()> {
    use coalesce_kernels::gemm::pack::{MapParam, pack_dims};
    let s = pass.shape;
    let dims = pack_dims(s.rows, s.cols);
    let (mut src, mut hi, mut lo, mut maps) = (pass.src, pass.hi, pass.lo, pass.maps);
    let (mut any, mut lines) = (pass.any, pass.lines);
    let (mut rows, mut cols, mut stride, mut flags) = (s.rows, s.cols, s.stride, s.flags);
    let [mut w0, mut w1] = pass.words.map(|w| MapParam(w.0));
    let args = [
        arg(&mut src),
        arg(&mut hi),
        arg(&mut lo),
        arg(&mut rows),
        arg(&mut cols),
        arg(&mut stride),
        arg(&mut flags),
        arg(&mut maps),
        arg(&mut w0),
        arg(&mut w1),
        arg(&mut any),
        arg(&mut lines),
    ];
    // SAFETY: the parameters of `gemm_pack`, in order; the caller's contract.
    unsafe { stream.launch_raw(PACK, dims, &args) }
}

/// `C = alpha * A * B + beta * C` in FP32 with the fastest FP32-accurate
/// version for the loaded module ([`sgemm_variant`]): on an H100 (the
/// `sm_90a` module), step 13, 3xTF32 on the tensor cores fed by the TMA,
/// its partial sums promoted into f32 registers, measured faster than
/// cuBLAS SGEMM and more accurate (docs/gemm.md); elsewhere step 7
/// ([`Variant::BEST`]), FMA units only. Both have FP32 semantics for any
/// input: inf, NaN and `FLT_MAX` give what an FP32 FMA GEMM gives (step 13
/// recomputes the rows and columns of `C` whose inputs hold an inf or NaN
/// with `gemm_fixup`, see docs/gemm.md, which also says what subnormals
/// cost). An empty product is BLAS's: nothing for `m = 0` or `n = 0`, `C =
/// beta * C` for `k = 0`. Errors as [`launch`]; step 13 also
/// allocates a workspace on `stream` (four TF32 halves of the operands:
/// `8 (m + n) k` bytes, about), which may fail with
/// [`crate::Error::OutOfMemory`].
#[cfg(feature = "cuda")]
pub fn sgemm(
    stream: &Stream<'_>,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: GemmShape,
    scalars: AlphaBeta,
) -> Result<()> {
    launch(stream, sgemm_variant(stream.gpu()), a, b, c, shape, scalars)
}

/// The version [`sgemm`] launches on `gpu`: [`Variant::sgemm_for`] of its
/// loaded module; step 7 for a module loaded as text, which may lack step 13.
#[cfg(feature = "cuda")]
pub fn sgemm_variant(gpu: &Gpu) -> Variant {
    gpu.module_name().map_or(Variant::BEST, Variant::sgemm_for)
}

#[cfg(feature = "cuda")]
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
    use super::{AlphaBeta, GemmShape, Plan, Variant, plan, scale_only};
    use crate::emu::{Report, staged};
    use crate::{GridLimits, Result};
    use coalesce_kernels::emu::{self, SyncMutPtr, SyncPtr};

    /// [`super::sgemm`] on the emulator: the version an H100 runs
    /// ([`Variant::sgemm_for`] of the `sm_90a` module).
    pub fn sgemm(a: &[f32], b: &[f32], c: &mut [f32], shape: GemmShape, scalars: AlphaBeta) -> Result<()> {
        launch(Variant::sgemm_for("sm_90a"), a, b, c, shape, scalars)
    }

    /// [`super::launch`] on the emulator. The grid is checked against
    /// [`GridLimits::CUDA`], so shapes a GPU would refuse are refused here too.
    pub fn launch(
        variant: Variant,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: GemmShape,
        scalars: AlphaBeta,
    ) -> Result<()> {
        let (variant, dims, scalars) =
            match plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &GridLimits::CUDA)? {
                Plan::Nothing => return Ok(()),
                Plan::Scale(dims) => (Variant::Naive, dims, scale_only(scalars)),
                Plan::Product(dims) if variant.geometry().tma => {
                    return tma(variant, (a, b, c), shape, scalars, dims, false).map(|_| ());
                }
                Plan::Product(dims) => (variant, dims, scalars),
            };
        let (pa, pb, pc) = (SyncPtr::new(a), SyncPtr::new(b), SyncMutPtr::new(c));
        let p = shape.problem(scalars);
        // SAFETY: lengths checked by `plan`; `&` and `&mut` slices cannot alias.
        emu::launch(dims, |ctx| unsafe { variant.run(ctx, pa.get(), pb.get(), pc.get(), p) })?;
        Ok(())
    }

    /// A TMA step on the emulator, laid out as on the GPU ([`TmaLayout`]):
    /// the operand passes into a zeroed host workspace (256-byte aligned, as
    /// the pool's allocations are; the marks zeroed as on the GPU), writing
    /// the emulator's tensor maps ([`TmaMap`]), then the product, then for
    /// 3xTF32 the fix-up. The passes' and the fix-up's findings fail the
    /// launch; the product's are returned in its [`Report`] when `checked`,
    /// else fail it.
    fn tma(
        variant: Variant,
        (a, b, c): (&[f32], &[f32], &mut [f32]),
        shape: GemmShape,
        scalars: AlphaBeta,
        dims: coalesce_kernels::LaunchDims,
        checked: bool,
    ) -> Result<Report> {
        use super::{TmaLayout, passes};
        use coalesce_kernels::TensorMap;
        use coalesce_kernels::emu::{TmaMap, TmaSwizzle};
        use coalesce_kernels::gemm::fixup::{fixup, fixup_dims};
        use coalesce_kernels::gemm::pack::{MapsOut, Marks, pack, pack_dims};
        let layout = TmaLayout::new(variant, shape);
        let mut ws = crate::emu::Aligned::copy_at(&vec![0.0; layout.bytes.div_ceil(4)], 0);
        let base = ws.as_mut_slice().as_mut_ptr() as u64;
        let maps: Vec<(u64, TensorMap)> = layout
            .tensors(variant, shape, base)
            .into_iter()
            .map(|t| {
                let map = TmaMap {
                    base: t.base,
                    cols: t.cols as u32,
                    rows: t.rows as u32,
                    row_stride: t.row_bytes,
                    box_cols: t.box_cols,
                    box_rows: t.box_rows,
                    swizzle: TmaSwizzle::B128,
                };
                (t.base, map.encode())
            })
            .collect();
        for pass in passes(&layout, shape, base, (a.as_ptr() as u64, b.as_ptr() as u64), &maps) {
            let dims = pack_dims(pass.shape.rows, pass.shape.cols);
            // SAFETY: the source holds its rows x cols floats (checked by
            // `plan`); the destinations and the maps lie in the workspace.
            // (The closure takes the addresses as integers: it runs on
            // every emulated thread, and raw pointers are not `Sync`.)
            emu::launch(dims, |ctx| unsafe {
                let out = MapsOut { maps: pass.maps as *mut TensorMap, words: pass.words };
                let marks = Marks { any: pass.any as *mut u32, lines: pass.lines as *mut u32 };
                let (hi, lo) = (pass.hi as *mut f32, pass.lo as *mut f32);
                pack(ctx, pass.src as *const f32, (hi, lo), pass.shape, out, marks)
            })?;
        }
        let (pa, pb) = layout.maps_at(base);
        // C staged 256-byte aligned, as a device buffer is, for the counters.
        let mut staged_c = crate::emu::Aligned::copy_at(c, 0);
        let pc = SyncMutPtr::new(staged_c.as_mut_slice());
        let p = shape.problem(scalars);
        // SAFETY: the maps describe the workspace's arrays, written above; C
        // holds m x n floats (checked by `plan`).
        let report = emu::launch_checked(dims, |ctx| unsafe {
            variant.run(ctx, pa as *const f32, pb as *const f32, pc.get(), p)
        })?;
        if !checked && !report.findings.is_empty() {
            return Err(emu::EmuError::Checker(report.findings).into());
        }
        if layout.marks.is_some() {
            let (any, _, _) = layout.marks_at(base, shape);
            let (pa, pb) = (SyncPtr::new(a), SyncPtr::new(b));
            let (m, n) = (shape.m() as u32, shape.n() as u32);
            // SAFETY: A, B, C hold their matrices (checked by `plan`), C is
            // staged apart; the marks lie in the workspace, written above.
            emu::launch(fixup_dims(m, n), |ctx| unsafe {
                fixup(ctx, pa.get(), pb.get(), pc.get(), p, any as *const u32)
            })?;
        }
        c.copy_from_slice(staged_c.as_mut_slice());
        Ok(report)
    }

    /// [`launch`] with the memory counters: returns the [`Report`] (the
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
    /// let report = emu::launch_checked(Variant::SmemTiled, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)?;
    /// assert!(report.findings.is_empty());
    /// assert!(c.iter().all(|&x| x == 32.0));
    /// // The tile loads: a warp reads 32 consecutive floats of a row, 4 sectors.
    /// assert_eq!(report.counters.total(Op::GlobalLoad).per_request(), 4.0);
    /// # Ok(()) }
    /// ```
    pub fn launch_checked(
        variant: Variant,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: GemmShape,
        scalars: AlphaBeta,
    ) -> Result<Report> {
        let (variant, dims, scalars) =
            match plan(variant, shape, (a.len(), b.len(), c.len()), scalars, &GridLimits::CUDA)? {
                Plan::Nothing => return Ok(Report::default()),
                Plan::Scale(dims) => (Variant::Naive, dims, scale_only(scalars)),
                Plan::Product(dims) if variant.geometry().tma => {
                    return tma(variant, (a, b, c), shape, scalars, dims, true);
                }
                Plan::Product(dims) => (variant, dims, scalars),
            };
        let p = shape.problem(scalars);
        staged(dims, [a, b], c, |ctx, [a, b], c| {
            // SAFETY: lengths checked by `plan`; the staged copies are distinct.
            unsafe { variant.run(ctx, a, b, c, p) }
        })
    }
}
