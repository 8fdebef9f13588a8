//! The transpose ladder against the bandwidth roof, on GPU time.
//!
//!     cargo bench --bench transpose            # needs a GPU; skips without one
//!
//! Each group is one matrix size; in it, the two roofs (our copy kernel and
//! `cuMemcpyDtoD` of the same bytes) and every transpose version, each
//! validated before it is timed. Throughput counts bytes read + written.
//! Every size is past the H100's 50 MB L2, so repetitions measure DRAM.

mod common;

use coalesce::transpose::Variant;
use coalesce::{MatrixShape, Stream, copy, transpose};
use common::{GpuTime, gpu_criterion, poisoned_run};
use criterion::{BenchmarkId, Criterion, Throughput};

const SHAPES: [(usize, usize); 4] = [(4096, 4096), (8192, 8192), (16384, 16384), (8192, 2048)];

fn bench_transposes(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    for (rows, cols) in SHAPES {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let host: Vec<f32> = (0..shape.len()).map(|i| (i % 1_000_003) as f32 - 5e5).collect();
        let input = gpu.upload(&host).unwrap();
        let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
        for v in Variant::ALL {
            let got =
                poisoned_run(stream, &mut output, |out| transpose::launch(stream, v, &input, out, shape)).unwrap();
            validate(v, shape, &host, &got);
        }
        let mut group = c.benchmark_group(format!("transpose_{rows}x{cols}"));
        group.throughput(Throughput::Bytes(2 * 4 * shape.len() as u64));
        group.bench_function("roof_copy_kernel", |b| b.iter(|| copy::copy(stream, &input, &mut output).unwrap()));
        group.bench_function("roof_cuMemcpyDtoD", |b| b.iter(|| stream.copy(&input, &mut output).unwrap()));
        for v in Variant::ALL {
            group.bench_function(BenchmarkId::from_parameter(v.name()), |b| {
                b.iter(|| transpose::launch(stream, v, &input, &mut output, shape).unwrap())
            });
        }
        group.finish();
    }
}

/// A transpose as 4096 launches of a column copy, against one kernel: launch
/// overhead made visible.
fn bench_launch_per_column(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    let shape = MatrixShape::new(4096, 4096).unwrap();
    let input = gpu.upload(&vec![1.5f32; shape.len()]).unwrap();
    let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
    let mut group = c.benchmark_group("transpose_4096x4096_launches");
    group.throughput(Throughput::Bytes(2 * 4 * shape.len() as u64));
    group.sample_size(10);
    group.bench_function("one_launch_per_column", |b| {
        b.iter(|| copy::transpose_by_column_copies(stream, &input, &mut output, shape).unwrap())
    });
    // The id names the kernel, so the docs read which one it was.
    group.bench_function(format!("one_kernel_{}", Variant::BEST.name()), |b| {
        b.iter(|| transpose::launch(stream, Variant::BEST, &input, &mut output, shape).unwrap())
    });
    group.finish();
}

/// Correct before fast: `got`, the output of one poisoned run of `v`, must
/// be the transpose of `host` in every element.
fn validate(v: Variant, shape: MatrixShape, host: &[f32], got: &[f32]) {
    let (rows, cols) = (shape.rows(), shape.cols());
    for (i, g) in got.iter().enumerate() {
        let (c, r) = (i / rows, i % rows);
        assert!(g.to_bits() == host[r * cols + c].to_bits(), "{} wrong on {shape} at output[{c}][{r}]", v.name());
    }
}

fn main() {
    let Some((mut c, stream)) = gpu_criterion() else { return };
    bench_transposes(&mut c, stream);
    bench_launch_per_column(&mut c, stream);
    c.final_summary();
}
