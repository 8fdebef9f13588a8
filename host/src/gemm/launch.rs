//! The GEMM's kernels on a stream: each kernel's argument tuple in the
//! order of its parameters, and the stream as the [`Device`] that carries
//! out a TMA step's sequence ([`super::run`]).

use super::run::{Device, Launch, Tensor2d};
use super::tma::{Workspace, encode};
use super::{AlphaBeta, Feed, GemmShape, Problem, Variant};
use crate::{LaunchDims, Result, Stream};
use coalesce_kernels::TensorMap;
use coalesce_kernels::gemm::pack::MapParam;
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};

/// `A`, `B` and `C` as a step reads them; for a TMA step, `A` and `B` are
/// the addresses of its tensor maps, which the kernel takes as `a` and `b`.
type Operands = (DevicePointer<f32>, DevicePointer<f32>, DevicePointer<f32>);

/// The parameters of every GEMM step, from the registry (`kernel(..)` in
/// `gemm_steps!`): `(a, b, c, m, n, k, alpha, beta)`.
type StepArgs = super::KernelParams;

/// The parameters of `gemm_fixup`: a step's, then `marks: *const u32`.
type FixupArgs =
    (DevicePointer<f32>, DevicePointer<f32>, DevicePointer<f32>, u32, u32, u32, f32, f32, DevicePointer<u32>);

/// The parameters of `gemm_sum_splits`: `(parts, c, m, n, k, alpha, beta,
/// splits)`.
type SumArgs = (DevicePointer<f32>, DevicePointer<f32>, u32, u32, u32, f32, f32, u32);

/// A tensor map's 128 bytes as `cust` plain data: `gemm_pack`'s `map0` and
/// `map1`, passed by value as the kernels' [`MapParam`] (8-byte aligned),
/// and the pointee of its `maps`.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct MapBytes(MapParam);
// SAFETY: sixteen integers: no pointer, no host resource.
unsafe impl DeviceCopy for MapBytes {}

/// The parameters of `gemm_pack`, in order.
type PackArgs = (
    DevicePointer<f32>,      // src: *const f32
    DevicePointer<f32>,      // hi: *mut f32
    DevicePointer<f32>,      // lo: *mut f32
    u32,                     // rows
    u32,                     // cols
    u32,                     // stride
    u32,                     // flags
    DevicePointer<MapBytes>, // maps: *mut TensorMap
    MapBytes,                // map0: MapParam
    MapBytes,                // map1: MapParam
    DevicePointer<u32>,      // any: *mut u32
    DevicePointer<u32>,      // lines: *mut u32
    DevicePointer<u32>,      // peaks: *const u32
);

/// The parameters of `gemm_maxima`: `(src, rows, cols, out, by_rows)`.
type MaximaArgs = (DevicePointer<f32>, u32, u32, DevicePointer<u32>, u32);

fn step_args((a, b, c): Operands, p: Problem) -> StepArgs {
    (a, b, c, p.m, p.n, p.k, p.alpha, p.beta)
}

/// Queues `entry`, a GEMM step, on `stream`.
///
/// # Safety
/// `a` and `b` are what the kernel reads (the matrices, or for a TMA step
/// its tensor maps), `c` holds `m * n` floats and overlaps neither.
pub(super) unsafe fn step(
    stream: &Stream<'_>, entry: &'static str, dims: LaunchDims, operands: Operands, p: Problem,
) -> Result<()> {
    // SAFETY: every step takes `StepArgs` (`gemm_entry!`); the caller's
    // contract.
    unsafe { stream.launch(entry, dims, step_args(operands, p)) }
}

/// A TMA step ([`Geometry::tma`]) on `stream`: its sequence
/// ([`super::run::run`]), the workspace from the `Gpu`'s pool, freed in
/// stream order after the last launch that reads it.
pub(super) fn tma(
    stream: &Stream<'_>, (variant, feed): (Variant, Feed), dims: LaunchDims,
    (a, b, c): (&DeviceSlice<f32>, &DeviceSlice<f32>, &mut DeviceSlice<f32>), shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    // Refuse a module without the step before allocating anything.
    stream.gpu().require(variant.entry_point())?;
    let operands = (a.as_device_ptr().as_raw(), b.as_device_ptr().as_raw(), c.as_device_ptr().as_raw());
    let mut device = OnStream { stream, shape, workspace: None };
    super::run::run(&mut device, (variant, feed), shape, scalars, dims, operands)
}

/// A stream as the [`Device`] of one TMA product: `launch` has checked its
/// buffers (lengths, and `C` apart from `A` and `B`), and the sequence
/// places every other array inside `workspace`.
struct OnStream<'s> {
    stream: &'s Stream<'s>,
    shape: GemmShape,
    workspace: Option<Workspace<'s>>,
}

impl Device for OnStream<'_> {
    fn check(&self, entry: &'static str, dims: LaunchDims) -> Result<()> {
        self.stream.gpu().grid_limits().check(entry, &self.shape, dims)
    }

    fn workspace(&mut self, bytes: usize) -> Result<u64> {
        let ws = Workspace::new(self.stream, bytes)?;
        let base = ws.base();
        self.workspace = Some(ws);
        Ok(base)
    }

    fn encode(&self, t: Tensor2d) -> Result<TensorMap> {
        encode(t)
    }

    fn zero(&mut self, at: u64, words: usize) -> Result<()> {
        // A memset in stream order (a node of its own in a graph capture).
        self.stream.gpu().bind()?;
        // SAFETY: `at` and its words lie inside the workspace; a live stream.
        let r = unsafe { cust::sys::cuMemsetD32Async(at, 0, words, self.stream.raw()) };
        crate::error::check("cuMemsetD32Async", r)
    }

    fn run(&mut self, launch: Launch) -> Result<()> {
        fn ptr<T: DeviceCopy>(address: u64) -> DevicePointer<T> {
            DevicePointer::from_raw(address)
        }
        let (stream, (entry, dims)) = (self.stream, launch.kernel());
        // SAFETY (each launch): each kernel takes the argument tuple named
        // for it (in the order of its parameters); the sequence's addresses
        // are `A`, `B` and `C` (m x k, k x n and m x n floats, `C` apart
        // from both: checked by `launch`) or lie inside the workspace, laid
        // out for this shape (`super::run`), which nothing else uses; each kernel is queued after the
        // launches that write what it reads; a live stream.
        match launch {
            Launch::Maxima { src, rows, cols, out, by_rows } => {
                let args: MaximaArgs = (ptr(src), rows, cols, ptr(out), u32::from(by_rows));
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Pack { src, shape: s, hi, lo, maps, words, any, lines, peaks } => {
                let [map0, map1] = words.map(|w| MapBytes(MapParam(w.0)));
                let (src, hi, lo, maps) = (ptr(src), ptr(hi), ptr(lo), ptr(maps));
                let args: PackArgs = (
                    src,
                    hi,
                    lo,
                    s.rows,
                    s.cols,
                    s.stride,
                    s.flags,
                    maps,
                    map0,
                    map1,
                    ptr(any),
                    ptr(lines),
                    ptr(peaks),
                );
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Product { a, b, c, p, .. } => unsafe { step(stream, entry, dims, (ptr(a), ptr(b), ptr(c)), p) },
            Launch::SumSplits { parts, c, p, splits } => {
                let args: SumArgs = (ptr(parts), ptr(c), p.m, p.n, p.k, p.alpha, p.beta, splits);
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Fixup { a, b, c, p, marks } => {
                let (a, b, c, m, n, k, alpha, beta) = step_args((ptr(a), ptr(b), ptr(c)), p);
                let args: FixupArgs = (a, b, c, m, n, k, alpha, beta, ptr(marks));
                unsafe { stream.launch(entry, dims, args) }
            }
        }
    }
}
