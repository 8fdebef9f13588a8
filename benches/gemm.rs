//! The GEMM ladder on GPU time, at 4096^3 and 8192^3.
//!
//!     cargo bench --bench gemm            # needs a GPU; skips without one
//!
//! One group per size (`gemm_4096`, `gemm_8192`, M = N = K), one benchmark
//! per version, each validated before it is timed (20000 random elements,
//! 100 in each of 200 random columns, against an f64 dot product, within
//! the bound of tests/gemm/reference.rs; the TF32 step, reported apart,
//! within its TF32 bound). The validation runs in the benchmark's first
//! call, so a filter (`--bench gemm_shapes`) skips the others' validation
//! too, which at 8192^3 takes minutes.
//! Throughput is `Elements(2 M N K)`, so criterion's "Gelem/s" reads as
//! GFLOP/s. Sampling is flat with 10 samples: the slow steps take up to a
//! second per call at 8192^3, and a linear sampling plan would need 55 calls.
//! Every operand is 64 MiB or more (past the 50 MB L2) at 4096^3.
//!
//! A third group, `gemm_shapes`, times the FP32 `sgemm` at shapes off its
//! tiles (step 16's 128x128 with `sm_90a`, step 7's 128x256 elsewhere):
//! odd sizes around 4096 (edge tiles; where `K % 4 != 0` or `N % 4 != 0`
//! rows are not 16-byte multiples, so step 7 takes its checked load path
//! for every tile, and step 16, which always copies `A` as its TF32 halves,
//! also copies `B` padded for its tensor map when `N % 4 != 0`), a deep and
//! a shallow product, and 1024^3, which gives step 16 64 tiles for an
//! H100's or H200's 132 SMs (so it splits K) and step 7 32 blocks.
//! `scripts/gpu/peers gemm-shapes` times PyTorch at the shapes this group
//! names in its output. Then `gemm_tma_3xtf32_shapes`,
//! `gemm_direct_3xtf32_shapes` and `gemm_split_a_3xtf32_shapes` time steps
//! 13, 15 and 16 (the FP32-accurate TMA steps) alone at the same shapes,
//! where the module has them: which one `sgemm` should take at each.

mod common;

use coalesce::Stream;
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use common::{GpuTime, gpu_criterion, poisoned_run};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use cust::memory::DeviceBuffer;
use std::time::Duration;

const SIZES: [usize; 2] = [4096, 8192];

/// (M, N, K) off the tile: odd everywhere, K or N alone off by one, deep,
/// shallow, and too small to fill the GPU; 4096^3 as the reference.
#[rustfmt::skip] // a table: three shapes a row
const AWKWARD: [(usize, usize, usize); 9] = [
    (4096, 4096, 4096), (4095, 4095, 4095), (4097, 4097, 4097),
    (4000, 4000, 4000), (4096, 4096, 4095), (4096, 4095, 4096),
    (2048, 2048, 8192), (8192, 8192, 256), (1024, 1024, 1024),
];

/// Values in [-1, 1) from a cheap deterministic generator.
fn fill(seed: u64, len: usize) -> Vec<f32> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn bench_ladder(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    for size in SIZES {
        let shape = GemmShape::new(size, size, size).unwrap();
        let (ha, hb) = (fill(1, shape.a().len()), fill(2, shape.b().len()));
        let a = gpu.upload(&ha).unwrap();
        let b = gpu.upload(&hb).unwrap();
        let mut out = gpu.alloc::<f32>(shape.c().len()).unwrap();
        let mut group = c.benchmark_group(format!("gemm_{size}"));
        group.throughput(Throughput::Elements(shape.flops()));
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(200));
        group.measurement_time(Duration::from_millis(1000));
        for v in Variant::ALL {
            let mut checked = false;
            group.bench_function(BenchmarkId::from_parameter(v.name()), |bch| {
                if !std::mem::replace(&mut checked, true) {
                    validate(stream, v, (&a, &b, &mut out), shape, (&ha, &hb));
                }
                bch.iter(|| gemm::launch(stream, v, &a, &b, &mut out, shape, AlphaBeta::PRODUCT).unwrap())
            });
        }
        group.finish();
    }
}

fn bench_shapes(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    shapes_group(
        c,
        stream,
        "gemm_shapes",
        |shape| gemm::sgemm_variant(gpu, shape),
        |a, b, out, shape| gemm::sgemm(stream, a, b, out, shape, AlphaBeta::PRODUCT),
    );
    // Each FP32-accurate TMA step alone at the same shapes, and step 17,
    // where the module has it: which one `sgemm` should take at each.
    for step in Variant::ALL.into_iter().filter(|v| v.geometry().tma_fixes_up()) {
        if gpu.has_kernel(step.entry_point()) {
            shapes_group(
                c,
                stream,
                &format!("gemm_{}_shapes", step.name().trim_start_matches("wgmma_")),
                |_| step,
                |a, b, out, shape| gemm::launch(stream, step, a, b, out, shape, AlphaBeta::PRODUCT),
            );
        }
    }
}

/// One group over the off-tile shapes: each validated as `version` names
/// it, then `run` timed.
fn shapes_group(
    c: &mut Criterion<GpuTime>, stream: &Stream<'static>, name: &str, version: impl Fn(GemmShape) -> Variant,
    run: impl Fn(&DeviceBuffer<f32>, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>, GemmShape) -> coalesce::Result<()>,
) {
    let gpu = stream.gpu();
    let mut group = c.benchmark_group(name);
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(200));
    group.measurement_time(Duration::from_millis(1000));
    for (m, n, k) in AWKWARD {
        let shape = GemmShape::new(m, n, k).unwrap();
        let (ha, hb) = (fill(3, shape.a().len()), fill(4, shape.b().len()));
        let (a, b) = (gpu.upload(&ha).unwrap(), gpu.upload(&hb).unwrap());
        let mut out = gpu.alloc::<f32>(shape.c().len()).unwrap();
        group.throughput(Throughput::Elements(shape.flops()));
        let mut checked = false;
        group.bench_function(BenchmarkId::from_parameter(format!("{m}x{n}x{k}")), |bch| {
            if !std::mem::replace(&mut checked, true) {
                validate(stream, version(shape), (&a, &b, &mut out), shape, (&ha, &hb));
            }
            bch.iter(|| run(&a, &b, &mut out, shape).unwrap())
        });
    }
    group.finish();
}

/// Correct before fast: NaN-poison C, run once, check 20000 elements: 100
/// rows in each of 200 columns, each column of `B` gathered once (its
/// elements lie `N` floats apart: read element by element, 20000 dot
/// products of depth 8192 miss the cache at every term).
fn validate(
    stream: &Stream<'_>, v: Variant, (a, b, out): (&DeviceBuffer<f32>, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
    shape: GemmShape, (ha, hb): (&[f32], &[f32]),
) {
    let (n, k) = (shape.n(), shape.k());
    let got = poisoned_run(stream, out, |c| gemm::launch(stream, v, a, b, c, shape, AlphaBeta::PRODUCT)).unwrap();
    // The bounds of tests/gemm/reference.rs: FP32, TF32 inputs, 3xTF32 or Ozaki.
    let bound = v.error_bound(k);
    let mut x = 12345u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    for _ in 0..200 {
        let j = next() % n;
        let column: Vec<f32> = (0..k).map(|p| hb[p * n + j]).collect();
        for _ in 0..100 {
            let i = next() % shape.m();
            let row = &ha[i * k..(i + 1) * k];
            let dot: f64 = row.iter().zip(&column).map(|(&a, &b)| a as f64 * b as f64).sum();
            let scale = v.error_scale(row.iter().copied(), column.iter().copied());
            let g = got[i * n + j] as f64;
            assert!((g - dot).abs() <= bound * scale, "{} wrong on {shape} at C[{i}][{j}]: {g} vs {dot}", v.name());
        }
    }
}

fn main() {
    let Some((mut c, stream)) = gpu_criterion() else { return };
    bench_ladder(&mut c, stream);
    bench_shapes(&mut c, stream);
    c.final_summary();
}
