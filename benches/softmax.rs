//! Row softmax against the bandwidth roof, on GPU time.
//!
//!     cargo bench --bench softmax            # needs a GPU; skips without one
//!
//! Each group is one `rows x cols` shape: the two roofs (our copy kernel and
//! `cuMemcpyDtoD` of the same bytes), `dispatch` (what `softmax::softmax`
//! picks for the row length) and each strategy that takes the row length
//! (at 4096 columns every register budget of the block strategy), each
//! validated before it is timed. Throughput counts bytes read + written,
//! 2 x 4 x rows x cols: every case moves at least 256 MB, past the 50 MB L2.
//! Then the `softmax_len_<cols>` groups: every row length of [`SWEEP`], each
//! kernel the dispatch could pick there, at the same bytes.

mod common;

use coalesce::softmax::{self, Kernel, Strategy};
use coalesce::{MatrixShape, Stream, copy};
use common::{GpuTime, gpu_criterion, poisoned_run};
use criterion::{BenchmarkId, Criterion, Throughput};
use cust::memory::DeviceBuffer;
use std::time::Duration;

/// The three shapes `scripts/gpu/peers report` measures, then rows of 128,
/// 1000, 50000 and 100000 columns.
const SHAPES: [(usize, usize); 7] =
    [(65536, 1024), (16384, 4096), (4096, 32768), (262144, 128), (32768, 1000), (1024, 50000), (512, 100_000)];

/// The kernels timed at `cols` columns: each strategy's pick, at 4096
/// columns every block instantiation (8, 16, 32 floats per thread), and at
/// every length the online kernel with and without its shared-memory stash.
fn kernels(cols: u32) -> Vec<Kernel> {
    let mut ks: Vec<Kernel> = Strategy::ALL.iter().filter_map(|s| s.kernel(cols)).collect();
    if cols == 4096 {
        ks = Kernel::ALL.into_iter().filter(|k| k.strategy() != Strategy::WarpPerRow).collect();
    }
    // The online kernel without its stash too, at every length: what the
    // stash buys, and what re-reading costs on rows that fit on chip.
    if !ks.contains(&Kernel::Online) {
        ks.push(Kernel::Online);
    }
    ks
}

fn bench_softmax(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    for (rows, cols) in SHAPES {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let host = logits(shape.len());
        let input = gpu.upload(&host).unwrap();
        let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
        let dispatch = Kernel::for_cols(cols as u32);
        let timed: Vec<Kernel> = kernels(cols as u32)
            .into_iter()
            .filter(|&k| {
                validated(stream, k, (&host, &input), &mut output, shape)
                    .inspect_err(|e| eprintln!("NOT TIMED: {} on {shape}: {e}", k.name()))
                    .is_ok()
            })
            .collect();
        let mut group = c.benchmark_group(format!("softmax_{rows}x{cols}"));
        group.throughput(Throughput::Bytes(2 * 4 * shape.len() as u64));
        group.warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(900));
        group.bench_function("roof_copy_kernel", |b| b.iter(|| copy::copy(stream, &input, &mut output).unwrap()));
        group.bench_function("roof_cuMemcpyDtoD", |b| b.iter(|| stream.copy(&input, &mut output).unwrap()));
        if timed.contains(&dispatch) {
            group.bench_function("dispatch", |b| {
                b.iter(|| softmax::softmax(stream, &input, &mut output, shape).unwrap())
            });
        }
        for k in timed {
            group.bench_function(BenchmarkId::from_parameter(k.name()), |b| {
                b.iter(|| softmax::launch(stream, k, &input, &mut output, shape).unwrap())
            });
        }
        group.finish();
    }
}

/// Row lengths of the sweep: 128 to 32768 columns in steps of about 1.5x,
/// closer where the dispatch turns from blocks to clusters, odd lengths among
/// them, then the long rows.
const SWEEP: [usize; 22] = [
    128, 256, 512, 1000, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 18432, 20480, 22528, 24576, 32768,
    40000, 50000, 65536, 100_000,
];

/// Every row length of [`SWEEP`] at about 2^26 floats (256 MiB in, as much
/// out): `dispatch`, the roof, and every instantiation of the strategies the
/// dispatch chooses between that takes the length (clusters from 8192
/// columns: below, most of their threads hold nothing). What the dispatch's
/// thresholds are read from (`cargo bench --bench softmax -- softmax_len`).
fn bench_row_lengths(c: &mut Criterion<GpuTime>, stream: &Stream<'static>) {
    let gpu = stream.gpu();
    for cols in SWEEP {
        let shape = MatrixShape::new((1 << 26) / cols, cols).unwrap();
        let host = logits(shape.len());
        let input = gpu.upload(&host).unwrap();
        let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
        let candidates = Kernel::ALL.into_iter().filter(|k| match k.strategy() {
            Strategy::WarpPerRow | Strategy::BlockPerRow => true,
            Strategy::Cluster => cols >= 8192,
            Strategy::Online => false,
        });
        // A kernel that cannot take the length (too many threads, too few
        // registers) is refused by `launch` with an error: not timed.
        let timed: Vec<Kernel> =
            candidates.filter(|&k| validated(stream, k, (&host, &input), &mut output, shape).is_ok()).collect();
        let mut group = c.benchmark_group(format!("softmax_len_{cols}"));
        group.throughput(Throughput::Bytes(2 * 4 * shape.len() as u64));
        group.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(600));
        group.bench_function("roof_cuMemcpyDtoD", |b| b.iter(|| stream.copy(&input, &mut output).unwrap()));
        group.bench_function(format!("dispatch_{}", Kernel::for_cols(cols as u32).name()), |b| {
            b.iter(|| softmax::softmax(stream, &input, &mut output, shape).unwrap())
        });
        for k in timed {
            group.bench_function(BenchmarkId::from_parameter(k.name()), |b| {
                b.iter(|| softmax::launch(stream, k, &input, &mut output, shape).unwrap())
            });
        }
        group.finish();
    }
}

/// Logits in [-8, 8), a cheap deterministic scramble.
fn logits(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i as u64 * 2_654_435_761) % 1_000_003) as f32 / 62_500.2 - 8.0).collect()
}

/// One poisoned run of `k` on `input` (`host` on the GPU), validated: the
/// launch's error where `k` cannot take the shape, else `Ok`; a wrong result
/// panics.
fn validated(
    stream: &Stream<'static>, k: Kernel, (host, input): (&[f32], &DeviceBuffer<f32>), output: &mut DeviceBuffer<f32>,
    shape: MatrixShape,
) -> coalesce::Result<()> {
    let got = poisoned_run(stream, output, |out| softmax::launch(stream, k, input, out, shape))?;
    validate(k, shape, host, &got);
    Ok(())
}

/// Correct before fast: in `got`, the output of one poisoned run of `k`,
/// every row must sum to 1 within 1e-5 and every 61st row must match an f64
/// softmax within 1e-5 relative + 1e-12 (the test suite checks every
/// element, tighter).
fn validate(k: Kernel, shape: MatrixShape, host: &[f32], got: &[f32]) {
    let cols = shape.cols();
    for (r, (y, x)) in got.chunks(cols).zip(host.chunks(cols)).enumerate() {
        let sum: f64 = y.iter().map(|&v| v as f64).sum();
        assert!((sum - 1.0).abs() <= 1e-5, "{} on {shape}: row {r} sums to {sum}", k.name());
        if r % 61 == 0 {
            let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let s: f64 = x.iter().map(|&v| (v as f64 - m).exp()).sum();
            for (c, (&g, &v)) in y.iter().zip(x).enumerate() {
                let w = (v as f64 - m).exp() / s;
                assert!(
                    (g as f64 - w).abs() <= 1e-5 * w + 1e-12,
                    "{} on {shape}: [{r}][{c}] = {g}, want {w}",
                    k.name()
                );
            }
        }
    }
}

fn main() {
    let Some((mut c, stream)) = gpu_criterion() else { return };
    bench_softmax(&mut c, stream);
    bench_row_lengths(&mut c, stream);
    c.final_summary();
}
