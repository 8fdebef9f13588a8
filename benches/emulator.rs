//! The CPU emulator's own speed: emulated thread-accesses per second.
//!
//!     cargo bench --bench emulator            # no GPU needed
//!
//! Each benchmark is one counting launch (`launch_checked`: the checker, the
//! race shadow and the counters all on, as tests and exercises run them) of
//! one ladder step, at a size that a test uses. Its throughput is the
//! thread-level accesses through views that the launch's counters tally
//! (`Tally::accesses` over every line): the loads and stores one emulated
//! thread makes, each checked, shadowed and counted.
//!
//! - `transpose/padded`: step 4, a tile through padded shared memory: a
//!   barrier a tile, no arithmetic;
//! - `softmax/warp32`: step 1 with 32 floats a lane: warp shuffles between
//!   the accesses;
//! - `gemm/blocktile_2d`: step 4's register tile at 256^3 (four blocks of
//!   128 x 128, so that every core has one): 64 FMAs a thread between its
//!   shared loads, two barriers a slice of `K`.

use coalesce::emu::{Op, Report};
use coalesce::gemm::{self, AlphaBeta, GemmShape};
use coalesce::{MatrixShape, softmax, transpose};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Thread-level accesses the launch made through views.
fn accesses(report: &Report) -> u64 {
    Op::ALL.iter().map(|&op| report.counters.total(op).accesses).sum()
}

fn inputs(len: usize) -> Vec<f32> {
    (0..len).map(|i| (i % 1013) as f32 / 1013.0 - 0.5).collect()
}

/// Benchmarks `launch` as `name` in `group`, at the accesses it reports.
fn bench(c: &mut Criterion, group: &str, name: &str, mut launch: impl FnMut() -> Report) {
    let report = launch();
    assert!(report.findings.is_empty(), "{group}/{name}: {:?}", report.findings);
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(accesses(&report)));
    g.sample_size(10);
    g.bench_function(name, |b| b.iter(&mut launch));
    g.finish();
}

fn emulator(c: &mut Criterion) {
    let shape = MatrixShape::new(512, 512).unwrap();
    let input = inputs(shape.len());
    let mut output = vec![0.0; shape.len()];
    bench(c, "transpose", "padded", || {
        transpose::emu::launch_checked(transpose::Variant::Padded, &input, &mut output, shape).unwrap()
    });

    let shape = MatrixShape::new(256, 1024).unwrap();
    let input = inputs(shape.len());
    let mut output = vec![0.0; shape.len()];
    bench(c, "softmax", "warp32", || {
        softmax::emu::launch_checked(softmax::Kernel::Warp32, &input, &mut output, shape).unwrap()
    });

    let shape = GemmShape::new(256, 256, 256).unwrap();
    let (a, b) = (inputs(shape.a().len()), inputs(shape.b().len()));
    let mut out = vec![0.0; shape.c().len()];
    bench(c, "gemm", "blocktile_2d", || {
        gemm::emu::launch_checked(gemm::Variant::Blocktile2d, &a, &b, &mut out, shape, AlphaBeta::PRODUCT).unwrap()
    });
}

criterion_group!(benches, emulator);
criterion_main!(benches);
