//! Every softmax kernel on the GPU against the f64 reference: odd shapes
//! and hard cases, misaligned buffers, the benchmark shapes (with the
//! `accuracy:` lines docs/softmax.md quotes), the inputs the launchers
//! refuse, and the probe that `ncu` runs (`--ignored`).

use crate::common::*;
use crate::reference::{Stats, check_every_kernel, hard_rows, logits};
use coalesce::softmax::{self, Kernel, Strategy};
use coalesce::{Error, MatrixShape};

/// Every kernel that takes `shape`'s rows on the GPU over `input`, checked
/// as [`check_every_kernel`] does.
fn check_every_kernel_on_gpu(
    stream: &coalesce::Stream<'_>, shape: MatrixShape, input: &[f32], label: &str,
    each: impl FnMut(Kernel, &[f32], Stats),
) {
    let d_in = stream.gpu().upload(input).unwrap();
    let run = |kernel: Kernel| {
        let present = stream.gpu().has_kernel(kernel.entry_point());
        present.then(|| run_poisoned(stream, shape.len(), |out| softmax::launch(stream, kernel, &d_in, out, shape)))
    };
    check_every_kernel(shape, input, label, run, each);
}

#[test]
fn every_kernel_on_the_gpu_at_odd_shapes_and_hard_cases() {
    let Some(gpu) = gpu_or_skip("gpu softmax") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax");
    #[rustfmt::skip]
    let shapes = [
        (7, 1), (5, 3), (5, 33), (3, 128), (4, 130), (3, 1000), (2, 1023), (2, 4100), (3, 20001), (2, 32768),
        (3, 57345), (2, 100_003),
    ];
    for (rows, cols) in shapes {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        check_every_kernel_on_gpu(&stream, shape, &input, "", |_, _, _| {});
    }
    for cols in [1, 33, 1000, 4096, 32768, 50000, 100_000] {
        let (input, names) = hard_rows(&mut rng, cols);
        let shape = MatrixShape::new(names.len(), cols).unwrap();
        check_every_kernel_on_gpu(&stream, shape, &input, " (hard cases)", |_, _, _| {});
    }
}

/// The misaligned (scalar) paths on the GPU.
#[test]
fn misaligned_buffers_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu softmax misaligned") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax misaligned");
    for (rows, cols) in [(3, 128), (3, 1000), (2, 4096), (2, 32768), (2, 40000), (2, 100_000)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let storage = logits(&mut rng, shape.len() + 1);
        let d_storage = gpu.upload(&storage).unwrap();
        let run = |kernel: Kernel| {
            if !gpu.has_kernel(kernel.entry_point()) {
                return None;
            }
            let d_out = gpu.upload(&poison(shape.len() + 1)).unwrap();
            // Views one float in: 4 bytes past the allocation's alignment.
            let (d_in, mut d_out_view) = (d_storage.index(1..), d_out.index(1..));
            softmax::launch(&stream, kernel, &d_in, &mut d_out_view, shape).unwrap();
            stream.synchronize().unwrap();
            Some(download(&d_out).split_off(1))
        };
        check_every_kernel(shape, &storage[1..], " (misaligned)", run, |_, _, _| {});
    }
}

/// The benchmark shapes, every kernel that takes them; prints one
/// `accuracy:` line per (kernel, shape) for docs/softmax.md.
#[test]
fn every_kernel_on_the_gpu_at_the_benchmark_shapes() {
    let Some(gpu) = gpu_or_skip("gpu softmax benchmark shapes") else { return };
    if under_sanitizer() {
        eprintln!("skipping the benchmark shapes under compute-sanitizer");
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax benchmark shapes");
    for (rows, cols) in
        [(65536, 1024), (16384, 4096), (4096, 32768), (262144, 128), (32768, 1000), (1024, 50000), (512, 100_000)]
    {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        check_every_kernel_on_gpu(&stream, shape, &input, "", |kernel, _, st| {
            let picked = kernel == Kernel::for_cols(cols as u32);
            let auto = if picked { " (dispatch)" } else { "" };
            eprintln!(
                "accuracy: {} {rows}x{cols} max_ulp_near_max {:.2} max_row_sum_err {:.3e}{auto}",
                kernel.name(),
                st.ulp_near_max,
                st.row_sum
            );
            // The same as the run file's values (scripts/gpu/runfile.py): one
            // line each, so that threads' lines cannot interleave within one.
            let (ulp, sum) = (format!("{:.2}", st.ulp_near_max), format!("{:.3e}", st.row_sum));
            eprintln!(
                r#"VALUE[] accuracy {{"kernel": "{}", "shape": "{rows}x{cols}", "max_ulp_near_max": {ulp}, "max_row_sum_err": {sum}}}"#,
                kernel.name()
            );
            if picked {
                eprintln!(r#"VALUE{{}} dispatch {rows}x{cols} "{}""#, kernel.name());
            }
        });
    }
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu softmax bad input") else { return };
    let stream = gpu.stream().unwrap();
    short_output_is_an_error(&stream, (3, 40), softmax::softmax);
    let e = refusal(&stream, (1, 2000), softmax::warp_per_row);
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    stream.synchronize().unwrap();
}

/// For `ncu` (scripts run it with `--ignored`): one launch of each strategy
/// at the benchmark shapes, nothing else, so the profiler's replays stay
/// short. DRAM bytes per kernel show what each strategy reads: the online
/// kernel's second pass should come from L2.
#[test]
#[ignore = "a probe for ncu, run by the GPU script"]
fn gpu_ncu_probe() {
    let Some(gpu) = gpu_or_skip("gpu ncu probe") else { return };
    let stream = gpu.stream().unwrap();
    for (rows, cols) in [(65536, 1024), (16384, 4096), (4096, 32768), (1024, 50000), (512, 100_000)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let host: Vec<f32> = (0..shape.len()).map(|i| (i % 1021) as f32 / 64.0 - 8.0).collect();
        let input = gpu.upload(&host).unwrap();
        let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
        // Each strategy's pick, and the online kernel without its stash.
        let mut kernels: Vec<Kernel> = Strategy::ALL.iter().filter_map(|s| s.kernel(cols as u32)).collect();
        if !kernels.contains(&Kernel::Online) {
            kernels.push(Kernel::Online);
        }
        for kernel in kernels {
            eprintln!("ncu probe: {} on {shape}", kernel.name());
            softmax::launch(&stream, kernel, &input, &mut output, shape).unwrap();
        }
        stream.synchronize().unwrap();
    }
}
