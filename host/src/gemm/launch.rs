//! The GEMM's kernels on a stream: each kernel's argument tuple in the
//! order of its parameters, and the stream as the [`Device`] that carries
//! out a TMA step's sequence ([`super::run`]).

use super::run::{Device, Launch, Tensor2d};
use super::{AlphaBeta, Feed, GemmShape, Problem, Variant};
use crate::gpu::launch::{HostParams, MapBytes};
use crate::gpu::{Workspace, encode_tiled_2d};
use crate::{GridLimits, LaunchDims, Result, Stream};
use coalesce_kernels::TensorMap;
use coalesce_kernels::gemm::pack::{MapParam, PackParams};
use coalesce_kernels::gemm::{fixup::FixupParams, scale::MaximaParams, split_k::SumSplitsParams};
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};

/// `A`, `B` and `C` as a step reads them (a TMA step's `A`, `B`: its maps).
type Operands = (DevicePointer<f32>, DevicePointer<f32>, DevicePointer<f32>);

/// A utility's argument tuple, from its parameters (`params_and_entry!`).
type Args<Params> = <Params as HostParams>::Host;

/// Queues `entry`, a GEMM step, on `stream`.
///
/// # Safety
/// `a` and `b` are what the kernel reads (the matrices, or for a TMA step
/// its tensor maps), `c` holds `m * n` floats and overlaps neither.
pub(super) unsafe fn step(
    stream: &Stream<'_>, entry: &'static str, dims: LaunchDims, (a, b, c): Operands, p: Problem,
) -> Result<()> {
    let args: super::KernelParams = (a, b, c, p.m, p.n, p.k, p.alpha, p.beta);
    // SAFETY: every step takes these (`kernel(..)` in `gemm_steps!`); the caller's contract.
    unsafe { stream.launch(entry, dims, args) }
}

/// A TMA step on `stream`: its sequence ([`super::run::run`]), the workspace
/// from the `Gpu`'s pool, freed in stream order after its last reader.
pub(super) fn tma(
    stream: &Stream<'_>, (variant, feed): (Variant, Feed), dims: LaunchDims,
    (a, b, c): (&DeviceSlice<f32>, &DeviceSlice<f32>, &mut DeviceSlice<f32>), shape: GemmShape, scalars: AlphaBeta,
) -> Result<()> {
    // Refuse a module without the step before allocating anything.
    stream.gpu().require(variant.entry_point())?;
    let operands = (a.as_device_ptr().as_raw(), b.as_device_ptr().as_raw(), c.as_device_ptr().as_raw());
    let mut device = OnStream { stream, workspace: None };
    super::run::run(&mut device, (variant, feed), shape, scalars, dims, operands)
}

/// A stream as the [`Device`] of one TMA product: `launch` checked its
/// buffers, and the sequence places every other array inside `workspace`.
struct OnStream<'s> {
    stream: &'s Stream<'s>,
    workspace: Option<Workspace<'s>>,
}

impl Device for OnStream<'_> {
    fn limits(&self) -> GridLimits {
        self.stream.gpu().grid_limits()
    }

    fn workspace(&mut self, bytes: usize) -> Result<u64> {
        let ws = Workspace::new(self.stream, bytes)?;
        let base = ws.base();
        self.workspace = Some(ws);
        Ok(base)
    }

    fn encode(&self, t: Tensor2d) -> Result<TensorMap> {
        encode_tiled_2d(t.base, t.dims, t.row_bytes, t.boxed, t.tf32)
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
        // for it; the sequence's addresses are `A`, `B` and `C` (m x k, k x
        // n and m x n floats, `C` apart from both: checked by `launch`) or
        // lie inside the workspace, laid out for this shape, which nothing
        // else uses; each kernel is queued after those that write what it
        // reads; a live stream.
        match launch {
            Launch::Maxima { a, b, p, out } => {
                let args: Args<MaximaParams> = (ptr(a), ptr(b), p.m, p.k, p.n, ptr(out));
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Pack { src, shape: s, to: [hi, lo], maps: (at, words), marks } => {
                let [map0, map1] = words.map(|w| MapBytes(MapParam(w.0)));
                let ([src, hi, lo], maps, [any, lines, peaks]) = ([src, hi, lo].map(ptr), ptr(at), marks.map(ptr));
                let args: Args<PackParams> =
                    (src, hi, lo, s.rows, s.cols, s.stride, s.flags, maps, map0, map1, any, lines, peaks);
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Product { a, b, c, p, .. } => unsafe { step(stream, entry, dims, (ptr(a), ptr(b), ptr(c)), p) },
            Launch::SumSplits { parts, c, p, splits } => {
                let args: Args<SumSplitsParams> = (ptr(parts), ptr(c), p.m, p.n, p.k, p.alpha, p.beta, splits);
                unsafe { stream.launch(entry, dims, args) }
            }
            Launch::Fixup { a, b, c, p, marks } => {
                let args: Args<FixupParams> = (ptr(a), ptr(b), ptr(c), p.m, p.n, p.k, p.alpha, p.beta, ptr(marks));
                unsafe { stream.launch(entry, dims, args) }
            }
        }
    }
}
