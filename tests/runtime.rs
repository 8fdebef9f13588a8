//! The host runtime: pipelines, page-locked and registered host
//! memory, stream-ordered buffers, non-blocking streams, graphs of probe
//! launches, and driver errors as values. Each GPU result is compared with
//! the CPU exactly (the kernels used here move or increment values, so no
//! rounding is involved); outputs are poisoned first.

mod common;

use coalesce::memory::{Registered, StreamBuffer};
use coalesce::transpose::{self, Variant};
use coalesce::{Error, MatrixShape, Pipeline, graph, probe};
use common::{gpu_or_skip, poison, random_matrix, rng, under_sanitizer};
use cust::memory::{CopyDestination, DeviceSlice};

fn cpu_transpose(a: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    t
}

/// `cuGetErrorName` needs no device: this runs in CI too.
#[test]
fn raw_driver_results_become_named_errors() {
    use cust::sys::cudaError_enum as E;
    assert!(coalesce::error::check("cuNothing", E::CUDA_SUCCESS).is_ok());
    match coalesce::error::check("cuLaunchKernel", E::CUDA_ERROR_INVALID_VALUE) {
        Err(Error::Driver { op, code, name, message }) => {
            assert_eq!(op, "cuLaunchKernel");
            assert_eq!(code, 1);
            assert_eq!(name, "CUDA_ERROR_INVALID_VALUE");
            assert!(!message.is_empty());
        }
        other => panic!("expected a driver error, got {other:?}"),
    }
    assert!(matches!(
        coalesce::error::check("cuMemAlloc", E::CUDA_ERROR_OUT_OF_MEMORY),
        Err(Error::OutOfMemory { .. })
    ));
}

/// Seven batches of an odd-shaped transpose through 1, 2 and 3 streams, from
/// pageable, pinned and registered host memory: every batch's output must be
/// exactly the CPU's, whatever stream it ran on.
#[test]
fn pipeline_batches_match_the_cpu_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("pipeline_batches_match_the_cpu_on_the_gpu") else { return };
    let mut rng = rng("pipeline_batches_match_the_cpu_on_the_gpu");
    let (rows, cols, batches) = (129, 67, 7);
    let shape = MatrixShape::new(rows, cols).unwrap();
    let inputs: Vec<Vec<f32>> = (0..batches).map(|_| random_matrix(&mut rng, rows * cols)).collect();
    let want: Vec<Vec<f32>> = inputs.iter().map(|a| cpu_transpose(a, rows, cols)).collect();
    let kernel = |s: &coalesce::Stream<'_>, a: &DeviceSlice<f32>, b: &mut DeviceSlice<f32>| {
        transpose::launch(s, Variant::BEST, a, b, shape)
    };
    for streams in 1..=3 {
        let mut pipe = Pipeline::new(&gpu, streams, rows * cols, rows * cols).unwrap();
        assert_eq!(pipe.streams(), streams);

        // Pageable in, pageable out.
        let mut outs: Vec<Vec<f32>> = (0..batches).map(|_| poison(rows * cols)).collect();
        let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        let mut out_refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        pipe.run(&ins, &mut out_refs, kernel).unwrap();
        assert_eq!(outs, want, "pageable, {streams} streams");

        // Pinned in, registered out.
        let pinned: Vec<_> = inputs.iter().map(|a| gpu.pinned_copy_of(a).unwrap()).collect();
        let mut outs: Vec<Vec<f32>> = (0..batches).map(|_| poison(rows * cols)).collect();
        {
            let mut registered: Vec<_> = outs.iter_mut().map(|o| Registered::new(&gpu, o).unwrap()).collect();
            let ins: Vec<&[f32]> = pinned.iter().map(|p| p.as_slice()).collect();
            let mut out_refs: Vec<&mut [f32]> = registered.iter_mut().map(|r| r.as_mut_slice()).collect();
            pipe.run(&ins, &mut out_refs, kernel).unwrap();
        }
        assert_eq!(outs, want, "pinned and registered, {streams} streams");
    }
}

#[test]
fn pipeline_rejects_bad_batches_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("pipeline_rejects_bad_batches_on_the_gpu") else { return };
    assert!(matches!(Pipeline::new(&gpu, 0, 4, 4), Err(Error::ZeroDimension { .. })));
    assert!(matches!(Pipeline::new(&gpu, 2, 0, 4), Err(Error::ZeroDimension { .. })));
    let mut pipe = Pipeline::new(&gpu, 2, 8, 8).unwrap();
    let copy = |s: &coalesce::Stream<'_>, a: &DeviceSlice<f32>, b: &mut DeviceSlice<f32>| coalesce::copy::copy(s, a, b);
    let (a, mut b) = (vec![1.0f32; 8], vec![0.0f32; 8]);
    // Fewer outputs than inputs.
    let e = pipe.run(&[&a, &a], &mut [&mut b[..]], copy).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "pipeline outputs", expected: 2, actual: 1, .. }), "{e}");
    // A batch of the wrong size, in and out.
    let short = vec![1.0f32; 7];
    let e = pipe.run(&[&short], &mut [&mut b[..]], copy).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "pipeline input", expected: 8, actual: 7, .. }), "{e}");
    let mut long = [0.0f32; 9];
    let e = pipe.run(&[&a], &mut [&mut long[..]], copy).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "pipeline output", expected: 8, actual: 9, .. }), "{e}");
    // An error from the kernel comes back after every stream has drained,
    // and the pipeline stays usable.
    let failing = |_: &coalesce::Stream<'_>, _: &DeviceSlice<f32>, _: &mut DeviceSlice<f32>| {
        Err(Error::Aliased { kernel: "test" })
    };
    assert!(matches!(pipe.run(&[&a], &mut [&mut b[..]], failing), Err(Error::Aliased { .. })));
    pipe.run(&[&a], &mut [&mut b[..]], copy).unwrap();
    assert_eq!(b, a);
}

#[test]
fn registered_memory_round_trips_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("registered_memory_round_trips_on_the_gpu") else { return };
    let mut rng = rng("registered_memory_round_trips_on_the_gpu");
    let want = random_matrix(&mut rng, 100_003);
    let mut data = want.clone();
    let mut back = poison(want.len());
    {
        let registered = Registered::new(&gpu, &mut data).unwrap();
        let on_device = gpu.upload(registered.as_slice()).unwrap();
        let mut out = Registered::new(&gpu, &mut back).unwrap();
        on_device.copy_to(out.as_mut_slice()).unwrap();
    }
    assert_eq!(back, want);
    // Unregistered on drop: the same memory can be registered again.
    drop(Registered::new(&gpu, &mut data).unwrap());
    let mut empty: Vec<f32> = Vec::new();
    assert!(matches!(Registered::new(&gpu, &mut empty), Err(Error::ZeroDimension { .. })));
}

#[test]
fn stream_ordered_buffers_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("stream_ordered_buffers_on_the_gpu") else { return };
    let mut rng = rng("stream_ordered_buffers_on_the_gpu");
    let stream = gpu.stream().unwrap();
    let input = gpu.upload(&random_matrix(&mut rng, 4099)).unwrap();
    let mut want = vec![0.0f32; 4099];
    input.copy_to(&mut want[..]).unwrap();
    // Allocate, use and free in stream order, many times: freed memory is
    // reused by the pool while earlier work may still be queued.
    for round in 0..20 {
        let mut tmp = StreamBuffer::new(&stream, 4099).unwrap();
        let mut out = gpu.alloc::<f32>(4099).unwrap();
        out.copy_from(&poison(4099)[..]).unwrap();
        stream.copy(&input, &mut tmp).unwrap();
        stream.copy(&tmp, &mut out).unwrap();
        drop(tmp); // queued free, after the copies
        stream.synchronize().unwrap();
        let mut got = poison(4099);
        out.copy_to(&mut got[..]).unwrap();
        assert_eq!(got, want, "round {round}");
    }
    assert!(matches!(StreamBuffer::new(&stream, 0), Err(Error::ZeroDimension { .. })));
    if !common::under_sanitizer() {
        // More than any GPU has: a value, not a crash.
        let e = StreamBuffer::new(&stream, 1 << 46).err().expect("a 256 TiB allocation must fail");
        assert!(matches!(e, Error::OutOfMemory { bytes } if bytes == 1 << 48), "{e}");
        assert!(matches!(StreamBuffer::new(&stream, usize::MAX), Err(Error::OutOfMemory { .. })));
    }
}

/// Both kinds of stream run the same launches; a non-blocking stream needs
/// its own synchronize before a synchronous copy reads the result. Graphs
/// are captured on a non-blocking stream (a blocking one is refused) and
/// replay on either kind.
#[test]
fn probe_launches_on_both_kinds_of_stream_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("probe_launches_on_both_kinds_of_stream_on_the_gpu") else { return };
    for stream in [gpu.stream().unwrap(), gpu.nonblocking_stream().unwrap()] {
        for len in [1usize, 255, 257, 1000] {
            let mut x = gpu.upload(&vec![0.5f32; len]).unwrap();
            for _ in 0..3 {
                probe::increment(&stream, &mut x).unwrap();
            }
            stream.synchronize().unwrap();
            let mut back = poison(len);
            x.copy_to(&mut back[..]).unwrap();
            assert!(back.iter().all(|&v| v == 3.5), "len {len}: {:?}", &back[..len.min(4)]);
        }
        // A graph of increments replays them in order.
        let mut y = gpu.upload(&vec![0.0f32; 300]).unwrap();
        let capturing = gpu.nonblocking_stream().unwrap();
        let refused = graph::capture(&gpu.stream().unwrap(), || Ok(())).unwrap_err();
        assert!(matches!(refused, Error::CaptureNeedsNonBlockingStream), "{refused}");
        let g = graph::capture(&capturing, || {
            for _ in 0..5 {
                probe::increment(&capturing, &mut y)?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(g.node_count(), 5);
        for _ in 0..4 {
            g.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        drop(g);
        let mut back = poison(300);
        y.copy_to(&mut back[..]).unwrap();
        assert!(back.iter().all(|&v| v == 20.0), "graph: {}", back[0]);
    }
}

#[test]
fn fma_peak_checks_its_output_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("fma_peak_checks_its_output_on_the_gpu") else { return };
    let stream = gpu.stream().unwrap();
    let blocks = 3;
    let mut out = gpu.alloc::<f32>(probe::fma_peak_out_len(blocks)).unwrap();
    let flops = probe::fma_peak(&stream, &mut out, blocks, 10).unwrap();
    assert_eq!(flops, coalesce::kernels::probe::fma_peak_flops(blocks, 10));
    stream.synchronize().unwrap();
    let mut back = poison(out.len());
    out.copy_to(&mut back[..]).unwrap();
    assert!(back.iter().all(|v| v.is_finite()), "every thread writes a finite sum");
    let mut short = gpu.alloc::<f32>(probe::fma_peak_out_len(blocks) - 1).unwrap();
    assert!(matches!(probe::fma_peak(&stream, &mut short, blocks, 10), Err(Error::LengthMismatch { .. })));
}

/// The TF32 roof probe on the GPU: with the sm_90a module, every thread
/// stores `iters` times its accumulators' dot products (as the emulator
/// computes them), and the FLOPs returned are `2 M N K` per `wgmma`; with
/// another module, a clear error and no launch. The INT8 probe beside it:
/// every thread stores exactly the wrapping sum the emulator computes (its
/// signed bytes through the same descriptors), `2 M N K` per `m64n256k32`.
#[test]
fn tf32_peak_checks_its_output_on_the_gpu_and_needs_sm_90a() {
    use coalesce::kernels::probe::{TC_BLOCK, int8_peak_expected, tf32_peak_expected, tf32_peak_flops};
    let Some(gpu) = gpu_or_skip("tf32_peak_checks_its_output_on_the_gpu_and_needs_sm_90a") else { return };
    let (blocks, iters) = (2 * gpu.sm_count(), 64);
    if gpu.module_name() == Some("sm_90a") {
        let stream = gpu.stream().unwrap();
        let mut out = gpu.alloc::<f32>(probe::tf32_peak_out_len(blocks)).unwrap();
        let flops = probe::tf32_peak(&stream, &mut out, blocks, iters).unwrap();
        assert_eq!(flops, tf32_peak_flops(blocks, iters));
        assert_eq!(flops, blocks as u64 * 2 * iters as u64 * 4 * (2 * 64 * 256 * 8));
        stream.synchronize().unwrap();
        let mut back = poison(out.len());
        out.copy_to(&mut back[..]).unwrap();
        for (i, &got) in back.iter().enumerate() {
            let (want, scale) = tf32_peak_expected(i as u32 % TC_BLOCK, iters, probe::TF32_PEAK_SEED);
            // f32 accumulation over 4 iters steps of k = 8, then 128 sums.
            assert!((got as f64 - want).abs() <= 1e-4 * scale, "thread {i}: {got} vs {want} (scale {scale})");
        }
        let mut short = gpu.alloc::<f32>(probe::tf32_peak_out_len(blocks) - 1).unwrap();
        assert!(matches!(probe::tf32_peak(&stream, &mut short, blocks, 1), Err(Error::LengthMismatch { .. })));

        let mut out = gpu.alloc::<i32>(probe::tf32_peak_out_len(blocks)).unwrap();
        let ops = probe::int8_peak(&stream, &mut out, blocks, iters).unwrap();
        assert_eq!(ops, 4 * flops);
        stream.synchronize().unwrap();
        let mut back = vec![i32::MIN; out.len()];
        out.copy_to(&mut back[..]).unwrap();
        for (i, &got) in back.iter().enumerate() {
            assert_eq!(got, int8_peak_expected(i as u32 % TC_BLOCK, iters, probe::TF32_PEAK_SEED), "int8 thread {i}");
        }
    } else {
        eprintln!("tf32_peak: {} loaded {:?}, not sm_90a: only the refusal is checked", gpu.name(), gpu.module_name());
    }
    if under_sanitizer() {
        // Opening the sm_90 module looks up (and misses) the sm_90a kernels:
        // driver errors by design, which memcheck would count.
        return;
    }
    drop(gpu);
    let sm_90: Vec<coalesce::Ptx> = coalesce::MODULES.iter().copied().filter(|m| !m.arch_specific).collect();
    let gpu = coalesce::Gpu::open(0, &sm_90).unwrap();
    let stream = gpu.stream().unwrap();
    let mut out = gpu.alloc::<f32>(probe::tf32_peak_out_len(1)).unwrap();
    let e = probe::tf32_peak(&stream, &mut out, 1, 1).unwrap_err();
    assert!(matches!(e, Error::ArchitectureRequired { needs: "sm_90a", .. }), "{e}");
}
