//! Every nested-sin version on the GPU: the host port's bits at odd
//! lengths and offsets (sub-slices of device buffers) with guards, in
//! place as out of place, and the unfused four launches captured as one
//! CUDA graph.

use crate::common::*;
use crate::reference::*;
use coalesce::nested_sin::{self, Variant};
use coalesce::{Error, graph};

/// Runs `variant` on the GPU over `xs` and returns the output.
pub fn on_gpu(stream: &coalesce::Stream<'_>, variant: Variant, xs: &[f32]) -> Vec<f32> {
    let d_in = stream.gpu().upload(xs).unwrap();
    run_poisoned(stream, xs.len(), |out| nested_sin::launch(stream, variant, &d_in, out))
}

/// Every variant against the host port, bit for bit, at odd lengths and
/// offsets (sub-slices of device buffers), with guards around each output.
#[test]
fn gpu_every_variant_at_odd_lengths_and_offsets() {
    let Some(gpu) = gpu_or_skip("gpu nested_sin shapes") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu nested_sin shapes");
    for len in with_large(&LENGTHS, [(1 << 20) + 3, (1 << 22) + 1]) {
        let xs = shuffled_inputs(&mut rng, len);
        let (port, poly) = (par_map(&xs, port4), par_map(&xs, poly4));
        for (in_off, out_off) in OFFSETS {
            let d_in = gpu.upload(&at_offset(&xs, in_off)).unwrap();
            for variant in Variant::ALL {
                if variant == Variant::Fast {
                    continue; // no host twin of sin.approx; measured in the accuracy test
                }
                let d_out = gpu.upload(&poison(out_off + len + GUARD)).unwrap();
                let input = d_in.index(in_off..);
                let mut window = d_out.index(out_off..out_off + len);
                nested_sin::launch(&stream, variant, &input, &mut window).unwrap();
                stream.synchronize().unwrap();
                let what = format!("gpu {} len {len} offsets {in_off}/{out_off}", variant.name());
                let want = if variant == Variant::Poly { &poly } else { &port };
                assert_window(&what, &xs, &download(&d_out), out_off, want);
            }
        }
    }
}

/// The unfused four launches as one CUDA graph: four nodes, the same bits,
/// in place too; a failed capture leaves the stream usable.
#[test]
fn gpu_unfused_as_a_graph_and_in_place() {
    let Some(gpu) = gpu_or_skip("gpu nested_sin graph") else { return };
    let stream = gpu.nonblocking_stream().unwrap();
    let mut rng = rng("gpu nested_sin graph");
    let xs = inputs(&mut rng, 1024);
    let want: Vec<f32> = xs.iter().map(|&x| port4(x)).collect();
    let d_in = gpu.upload(&xs).unwrap();
    let mut d_out = gpu.upload(&poison(xs.len())).unwrap();
    let unfused = graph::capture(&stream, || nested_sin::unfused(&stream, &d_in, &mut d_out)).unwrap();
    assert_eq!(unfused.node_count(), 4);
    for _ in 0..3 {
        unfused.launch(&stream).unwrap();
    }
    drop(unfused);
    let mut got = poison(xs.len());
    stream.download(&d_out, &mut got).unwrap();
    assert_bits("unfused graph", &xs, &got, &want);

    // A blocking stream is refused: another thread's synchronous copy would
    // break the capture.
    let blocking = gpu.stream().unwrap();
    let e = graph::capture(&blocking, || nested_sin::unfused(&blocking, &d_in, &mut d_out)).unwrap_err();
    assert!(matches!(e, Error::CaptureNeedsNonBlockingStream), "{e}");

    // An error from the work ends the capture; the stream still works.
    let e = graph::capture(&stream, || Err(Error::Aliased { kernel: "test" })).unwrap_err();
    assert!(matches!(e, Error::Aliased { .. }), "{e}");
    if !under_sanitizer() {
        // Synchronising a capturing stream is refused by the driver.
        let e = graph::capture(&stream, || stream.synchronize()).unwrap_err();
        println!("synchronize during capture: {e}");
    }

    // In place: the same bits as out of place (fast included: the GPU is
    // deterministic), and the port's bits for the accurate versions.
    for variant in Variant::ALL {
        let mut data = gpu.upload(&xs).unwrap();
        nested_sin::launch_in_place(&stream, variant, &mut data).unwrap();
        stream.synchronize().unwrap();
        let got = download(&data);
        let out_of_place = on_gpu(&stream, variant, &xs);
        assert_bits(&format!("{} in place vs out of place", variant.name()), &xs, &got, &out_of_place);
        if variant != Variant::Fast {
            let want: Vec<f32> = xs.iter().map(|&x| host_expected(variant, x)).collect();
            assert_bits(&format!("{} in place", variant.name()), &xs, &got, &want);
        }
    }
}

/// Arrays of no elements launch nothing, in and out of place, on empty
/// windows of real buffers and on zero-length allocations.
#[test]
fn gpu_empty_is_a_no_op() {
    let Some(gpu) = gpu_or_skip("gpu nested_sin empty") else { return };
    let stream = gpu.stream().unwrap();
    for variant in Variant::ALL {
        empty_is_a_no_op(&stream, variant.name(), |x, y| nested_sin::launch(&stream, variant, x, y));
        empty_is_a_no_op(&stream, &format!("{} in place", variant.name()), |_, y| {
            nested_sin::launch_in_place(&stream, variant, y)
        });
    }
    empty_is_a_no_op(&stream, "sin", |x, y| nested_sin::sin(&stream, x, y));
    empty_is_a_no_op(&stream, "sin in place", |_, y| nested_sin::sin_in_place(&stream, y));
    let (one, mut none) = (gpu.alloc::<f32>(1).unwrap(), gpu.alloc::<f32>(0).unwrap());
    let e = nested_sin::fused(&stream, &one, &mut none).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 1, actual: 0, .. }), "{e}");
}
