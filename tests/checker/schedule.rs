//! The engine's schedule: a launch reports the same on every run, and a
//! seed runs the blocks and threads in another order without changing what
//! a correct kernel computes or counts.

use crate::findings::tiled_without_barrier;
use coalesce::emu::{Report, Schedule};
use coalesce::kernels::emu::{self as kemu, SyncMutPtr, SyncPtr};
use coalesce::kernels::transpose::Variant;
use coalesce::kernels::{Dim3, LaunchDims};

const N: usize = 64;

/// A 64 x 64 transpose without its barrier: races in every block, and
/// counters on every line. Four blocks, so that every worker gets some.
/// The buffers stay where they are from run to run: the sectors counted
/// depend on their addresses.
fn racy(schedule: Schedule, input: &[f32], output: &mut [f32]) -> (Report, Vec<f32>) {
    output.fill(f32::NAN);
    let dims = LaunchDims { grid: Dim3::xy(2, 2), block: Dim3::xy(32, 8), shared_bytes: 32 * 32 * 4 };
    let (i, o) = (SyncPtr::new(input), SyncMutPtr::new(output));
    // SAFETY: both buffers hold N * N floats.
    let report = kemu::launch_scheduled(dims, 1, schedule, |ctx| unsafe {
        tiled_without_barrier(ctx, i.get(), o.get(), N as u32)
    })
    .unwrap();
    (report, output.to_vec())
}

fn buffers() -> (Vec<f32>, Vec<f32>) {
    ((0..N * N).map(|i| i as f32).collect(), vec![f32::NAN; N * N])
}

#[test]
fn a_launch_reports_the_same_counters_findings_and_output_every_time() {
    let (input, mut output) = buffers();
    let (first, out) = racy(Schedule::InOrder, &input, &mut output);
    assert!(!first.findings.is_empty() && !first.counters.sites.is_empty());
    for _ in 0..20 {
        let (again, again_out) = racy(Schedule::InOrder, &input, &mut output);
        assert_eq!(again, first, "a second run of the same launch reported otherwise");
        assert!(again_out.iter().zip(&out).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    // The same seed, the same run.
    let (seeded, seeded_out) = racy(Schedule::Seeded(7), &input, &mut output);
    let (again, again_out) = racy(Schedule::Seeded(7), &input, &mut output);
    assert_eq!(seeded, again);
    assert!(again_out.iter().zip(&seeded_out).all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn a_seed_reorders_the_threads_of_a_racy_kernel() {
    // Without the barrier, a thread reads the tile words that other threads
    // of its block write before or after it: another order, other values.
    let (input, mut output) = buffers();
    let (_, in_order) = racy(Schedule::InOrder, &input, &mut output);
    let differs = (1..=8).any(|seed| {
        let (report, out) = racy(Schedule::Seeded(seed), &input, &mut output);
        assert!(!report.findings.is_empty(), "seed {seed} hid the race");
        out.iter().zip(&in_order).any(|(a, b)| a.to_bits() != b.to_bits())
    });
    assert!(differs, "no seed changed the order of the racing threads");
}

#[test]
fn a_seed_leaves_a_correct_kernels_output_and_counters_alone() {
    let (rows, cols) = (70u32, 45u32);
    let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let mut output = vec![f32::NAN; input.len()];
    let mut transpose = |schedule: Schedule| {
        output.fill(f32::NAN);
        let (i, o) = (SyncPtr::new(&input), SyncMutPtr::new(&mut output));
        let dims = Variant::Padded.launch_dims(rows, cols);
        // SAFETY: both buffers hold rows * cols floats.
        let report = kemu::launch_scheduled(dims, 1, schedule, |ctx| unsafe {
            Variant::Padded.run(ctx, i.get(), o.get(), rows, cols)
        })
        .unwrap();
        (report, output.clone())
    };
    let (report, output) = transpose(Schedule::InOrder);
    assert!(report.findings.is_empty() && !report.counters.sites.is_empty(), "{:?}", report.findings);
    for seed in 1..=4 {
        let (seeded, out) = transpose(Schedule::Seeded(seed));
        assert_eq!(seeded, report, "seed {seed}");
        assert!(out.iter().zip(&output).all(|(a, b)| a.to_bits() == b.to_bits()), "seed {seed}");
    }
}
