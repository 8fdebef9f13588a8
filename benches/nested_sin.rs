//! The nested sine against the bandwidth roof, and the launch-bound case.
//!
//!     cargo bench --bench nested_sin           # needs a GPU; skips without one
//!
//! Groups:
//! - `nested_sin_2_28`: 2^28 f32 (1 GiB in, 1 GiB out; far past the 50 MB
//!   L2), GPU time from CUDA events. The two roofs (our copy kernel and
//!   `cuMemcpyDtoD` of the same bytes), then every version, each validated
//!   before it is timed. Throughput counts the 8 bytes per element the fused
//!   kernels move (the unfused form moves four times that).
//! - `nested_sin_1024`: 1024 elements, where launches cost more than the
//!   work: GPU time of the unfused four launches, of the same four captured
//!   in one CUDA graph, and of one fused launch.
//! - `nested_sin_1024_end_to_end`: the same on the host clock, each
//!   iteration queued and waited for (`synchronize`): what a caller sees.

mod common;

use coalesce::nested_sin::{self, Variant};
use coalesce::{Stream, copy, graph};
use common::{GpuTime, gpu_criterion, poisoned_run};
use criterion::{BenchmarkId, Criterion, Throughput};
use cust::memory::{CopyDestination, DeviceBuffer};
use std::time::Duration;

const LARGE: usize = 1 << 28;
const SMALL: usize = 1024;

/// Deterministic inputs spread over [-1e4, 1e4] (a multiplicative hash of
/// the index: cheap for 2^28 elements, no two neighbours alike).
fn inputs(n: usize) -> Vec<f32> {
    (0..n as u64)
        .map(|i| ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f32 / (1u64 << 24) as f32) * 2.0e4 - 1.0e4)
        .collect()
}

fn download(buf: &DeviceBuffer<f32>) -> Vec<f32> {
    let mut host = vec![0.0f32; buf.len()];
    buf.copy_to(&mut host[..]).unwrap();
    host
}

/// Correct before fast: every version that keeps libdevice's sines gives the
/// same bits as the unfused form (and as the host port of libdevice on a
/// sample); `poly` gives the host's port-then-polynomial bits on a sample;
/// `fast` is reported (the errors are measured in the tests).
fn validate(stream: &Stream<'_>, host: &[f32], input: &DeviceBuffer<f32>, output: &mut DeviceBuffer<f32>) {
    use coalesce::kernels::nested_sin::math::libdevice_sinf_port as port;
    let mut reference: Option<Vec<f32>> = None;
    for v in Variant::ALL {
        let got = poisoned_run(stream, output, |out| nested_sin::launch(stream, v, input, out)).unwrap();
        match (&reference, v) {
            (None, _) => {
                for i in (0..host.len()).step_by(host.len() / 4096 + 1) {
                    let want = port(port(port(port(host[i]))));
                    assert!(got[i].to_bits() == want.to_bits(), "unfused wrong at {i}: {} vs {want}", got[i]);
                }
                reference = Some(got);
            }
            (Some(r), Variant::Poly) => {
                use coalesce::kernels::nested_sin::math::sin3_minimax;
                for i in (0..host.len()).step_by(host.len() / 4096 + 1) {
                    let want = sin3_minimax(port(host[i]));
                    assert!(got[i].to_bits() == want.to_bits(), "poly wrong at {i}: {} vs {want}", got[i]);
                }
                let differ = got.iter().zip(r).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                eprintln!("validate: poly differs from unfused in {differ} of {} elements", got.len());
            }
            (Some(r), Variant::Fast) => {
                let worst = got.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                eprintln!("validate: fast differs from unfused by at most {worst:e} (absolute)");
            }
            (Some(r), _) => {
                let bad = got.iter().zip(r).position(|(a, b)| a.to_bits() != b.to_bits());
                assert!(bad.is_none(), "{} differs from unfused at {bad:?}", v.name());
            }
        }
    }
}

fn bench_large(c: &mut Criterion<GpuTime>, stream: &'static Stream<'static>) {
    let gpu = stream.gpu();
    let host = inputs(LARGE);
    let input = gpu.upload(&host).unwrap();
    let mut output = gpu.alloc::<f32>(LARGE).unwrap();
    validate(stream, &host, &input, &mut output);
    drop(host);
    let mut group = c.benchmark_group("nested_sin_2_28");
    group.throughput(Throughput::Bytes(8 * LARGE as u64));
    group.bench_function("roof_copy_kernel", |b| b.iter(|| copy::copy(stream, &input, &mut output).unwrap()));
    group.bench_function("roof_cuMemcpyDtoD", |b| b.iter(|| stream.copy(&input, &mut output).unwrap()));
    for v in Variant::ALL {
        group.bench_function(BenchmarkId::from_parameter(v.name()), |b| {
            b.iter(|| nested_sin::launch(stream, v, &input, &mut output).unwrap())
        });
    }
    group.finish();
}

/// The launch-bound case on GPU time, and on the host clock end to end.
fn bench_small(c: &mut Criterion<GpuTime>, wall: &mut Criterion, stream: &'static Stream<'static>) {
    let gpu = stream.gpu();
    let input = gpu.upload(&inputs(SMALL)).unwrap();
    let mut output = gpu.alloc::<f32>(SMALL).unwrap();
    let mut out_graph = gpu.alloc::<f32>(SMALL).unwrap();
    // Captured on a non-blocking stream (graph::capture needs one), replayed
    // on the timed stream.
    let capturing = gpu.nonblocking_stream().unwrap();
    let unfused = graph::capture(&capturing, || nested_sin::unfused(&capturing, &input, &mut out_graph)).unwrap();
    assert_eq!(unfused.node_count(), 4);

    let mut group = c.benchmark_group("nested_sin_1024");
    group
        .bench_function("unfused_4_launches", |b| b.iter(|| nested_sin::unfused(stream, &input, &mut output).unwrap()));
    group.bench_function("unfused_graph", |b| b.iter(|| unfused.launch(stream).unwrap()));
    group.bench_function("fused_reduced", |b| {
        b.iter(|| nested_sin::fused_reduced(stream, &input, &mut output).unwrap())
    });
    group.finish();

    let mut group = wall.benchmark_group("nested_sin_1024_end_to_end");
    group.bench_function("unfused_4_launches", |b| {
        b.iter(|| {
            nested_sin::unfused(stream, &input, &mut output).unwrap();
            stream.synchronize().unwrap()
        })
    });
    group.bench_function("unfused_graph", |b| {
        b.iter(|| {
            unfused.launch(stream).unwrap();
            stream.synchronize().unwrap()
        })
    });
    group.bench_function("fused_reduced", |b| {
        b.iter(|| {
            nested_sin::fused_reduced(stream, &input, &mut output).unwrap();
            stream.synchronize().unwrap()
        })
    });
    group.finish();
    drop(unfused);
    let (a, b) = (download(&output), download(&out_graph));
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "graph and direct launches disagree");
}

fn main() {
    let Some((mut c, stream)) = gpu_criterion() else { return };
    let mut wall = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500))
        .configure_from_args();
    bench_large(&mut c, stream);
    bench_small(&mut c, &mut wall, stream);
    c.final_summary();
    wall.final_summary();
}
