//! Lesson 2: overlapping copies with compute.
//!
//!     cargo run --release --example 02_pipeline
//!
//! 16 batches of a 2048x2048 f32 matrix: copy in, compute, copy out. The
//! batches run on 1 stream (sequential), then on 2 (the double buffer),
//! 4 and 16 streams. Beside them, each part alone on one stream:
//! all host-to-device copies, all device-to-host copies, all kernels. An
//! H100 has a copy engine for each direction, so the best a pipeline can do
//! is the longest of the three, and
//! overlap efficiency = max(H2D, D2H, compute) / pipelined time
//! says how close it gets to hiding the other two completely.
//! Host memory is pinned (without it nothing overlaps). Every result is
//! checked against the CPU (the matmul on 16 sampled elements per batch).

mod common;

use coalesce::transpose::{self, Variant};
use coalesce::{Gpu, MatrixShape, Pipeline, Result};
use cust::memory::{AsyncCopyDestination, DeviceSlice};

const BATCHES: usize = 16;
const N: usize = 2048;

struct Workload {
    name: &'static str,
    kernel: fn(&coalesce::Stream<'_>, &DeviceSlice<f32>, &mut DeviceSlice<f32>) -> Result<()>,
    check: fn(&[f32], &[f32]) -> bool,
}

fn transpose_kernel(s: &coalesce::Stream<'_>, a: &DeviceSlice<f32>, b: &mut DeviceSlice<f32>) -> Result<()> {
    transpose::launch(s, Variant::BEST, a, b, MatrixShape::new(N, N)?)
}
fn transpose_check(a: &[f32], b: &[f32]) -> bool {
    (0..N * N).all(|i| b[i] == a[(i % N) * N + i / N])
}

/// The workload: `c = g @ g` for each 2048x2048 batch, with our best
/// FP32 GEMM.
fn matmul_kernel(s: &coalesce::Stream<'_>, a: &DeviceSlice<f32>, c: &mut DeviceSlice<f32>) -> Result<()> {
    coalesce::gemm::sgemm(s, a, a, c, coalesce::gemm::GemmShape::new(N, N, N)?, coalesce::gemm::AlphaBeta::PRODUCT)
}
fn matmul_check(a: &[f32], c: &[f32]) -> bool {
    (0..16).all(|t| {
        let (i, j) = ((t * 131) % N, (t * 517 + 3) % N);
        let want: f64 = (0..N).map(|k| a[i * N + k] as f64 * a[k * N + j] as f64).sum();
        let bound: f64 = (0..N).map(|k| (a[i * N + k] as f64 * a[k * N + j] as f64).abs()).sum::<f64>() * 1e-5;
        (c[i * N + j] as f64 - want).abs() <= bound
    })
}

fn main() -> Result<()> {
    let gpu = common::gpu_or_exit("pipeline lesson");
    let workloads = [
        Workload { name: "matmul 2048x2048x2048 (our FP32 GEMM)", kernel: matmul_kernel, check: matmul_check },
        Workload { name: "transpose 2048x2048 (Variant::BEST)", kernel: transpose_kernel, check: transpose_check },
    ];
    for w in &workloads {
        run(&gpu, w)?;
    }
    Ok(())
}

fn run(gpu: &Gpu, w: &Workload) -> Result<()> {
    let len = N * N;
    let inputs: Vec<_> = (0..BATCHES)
        .map(|b| {
            let mut p = gpu.pinned(len, 0.0f32)?;
            p.iter_mut().enumerate().for_each(|(i, x)| *x = ((i * 7 + b * 13) % 1001) as f32 * 1e-3);
            Ok(p)
        })
        .collect::<Result<_>>()?;
    let mut outputs: Vec<_> = (0..BATCHES).map(|_| gpu.pinned(len, f32::NAN)).collect::<Result<_>>()?;
    let ins: Vec<&[f32]> = inputs.iter().map(|p| &p[..]).collect();

    let mut time = |streams: usize| -> Result<f64> {
        let mut p = Pipeline::new(gpu, streams, len, len)?;
        let mut outs: Vec<&mut [f32]> = outputs.iter_mut().map(|p| &mut p[..]).collect();
        common::host_median_ms(5, || p.run(&ins, &mut outs, w.kernel))
    };
    let seq = time(1)?;
    let piped: Vec<(usize, f64)> = [2, 4, 16].iter().map(|&k| Ok((k, time(k)?))).collect::<Result<_>>()?;
    for (i, o) in ins.iter().zip(&outputs) {
        assert!((w.check)(i, o), "{}: a pipelined batch is wrong", w.name);
    }

    // The parts alone, on one stream.
    let p = Pipeline::new(gpu, 1, len, len)?;
    let s = p.stream(0);
    let (mut d_in, mut d_out) = (gpu.alloc::<f32>(len)?, gpu.alloc::<f32>(len)?);
    let h2d = common::host_median_ms(5, || {
        for i in &ins {
            // SAFETY: the host buffer outlives the synchronize below.
            unsafe { d_in.async_copy_from(*i, s.as_cust()).map_err(common::cuda("cuMemcpyHtoDAsync"))? };
        }
        s.synchronize()
    })?;
    let d2h = common::host_median_ms(5, || {
        for o in outputs.iter_mut() {
            // SAFETY: as above.
            unsafe { d_out.async_copy_to(&mut o[..], s.as_cust()).map_err(common::cuda("cuMemcpyDtoHAsync"))? };
        }
        s.synchronize()
    })?;
    let compute = common::host_median_ms(5, || {
        for _ in 0..BATCHES {
            (w.kernel)(s, &d_in, &mut d_out)?;
        }
        s.synchronize()
    })?;
    let bound = h2d.max(d2h).max(compute);
    println!(
        "\n{}: {BATCHES} batches, {:.0} MiB in + {:.0} MiB out each, pinned host memory, median of 5",
        w.name,
        (len * 4) as f64 / (1 << 20) as f64,
        (len * 4) as f64 / (1 << 20) as f64
    );
    println!(
        "  alone: H2D {h2d:.2} ms, compute {compute:.2} ms, D2H {d2h:.2} ms; bound max(H2D, compute, D2H) {bound:.2} ms"
    );
    println!("  1 stream (sequential) {seq:8.2} ms");
    for (k, t) in piped {
        println!(
            "  {k:>2} streams           {t:8.2} ms   speedup {:.2}x   overlap efficiency {:.0}% (pipelined = {:.2}x the bound)",
            seq / t,
            100.0 * bound / t,
            t / bound
        );
    }
    Ok(())
}
