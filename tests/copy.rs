//! The copy kernels, and a transpose done as one strided copy per column,
//! on the emulator and on the GPU. Copies move bits: 0 ulp.

mod common;

use coalesce::copy::{self, Strided};
use coalesce::emu::Report;
use coalesce::{Error, MatrixShape};
use common::*;

const LENGTHS: [usize; 6] = [1, 3, 4, 1000, 4097, 65_537];

fn assert_bits_eq(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        panic!("{what}: element {i} is {} (bits {:#x}), expected {}", got[i], got[i].to_bits(), want[i]);
    }
}

#[test]
fn copy_on_the_emulator_at_odd_lengths_and_misaligned_starts() {
    let mut rng = rng("emulator copy");
    for len in LENGTHS {
        let src = random_matrix(&mut rng, len + 1);
        // Offsets 0 and 1: the vector path and the scalar fallback.
        for off in [0, 1] {
            let mut dst = poison(len);
            coalesce::copy::emu::launch(&src[off..off + len], &mut dst).unwrap();
            assert_bits_eq(&format!("copy len {len} offset {off}"), &dst, &src[off..off + len]);
        }
    }
}

/// The bulk copy: misaligned by the same amount (the scalar head, then
/// bulk copies) and by different amounts (the grid-stride copy), and
/// 45001 floats: eleven chunks over two blocks, so each block refills its
/// four buffers.
#[test]
fn bulk_copy_on_the_emulator_at_odd_lengths_and_misaligned_starts() {
    let mut rng = rng("emulator bulk copy");
    for len in LENGTHS.into_iter().chain([45_001]) {
        let src = random_matrix(&mut rng, len + 3);
        for (src_off, dst_off) in [(0, 0), (3, 3), (1, 0)] {
            let mut dst = poison(len + 3);
            coalesce::copy::emu::bulk(&src[src_off..src_off + len], &mut dst[dst_off..dst_off + len]).unwrap();
            let what = format!("bulk copy len {len} offsets {src_off}/{dst_off}");
            assert_bits_eq(&what, &dst[dst_off..dst_off + len], &src[src_off..src_off + len]);
            assert!(dst[..dst_off].iter().chain(&dst[dst_off + len..]).all(|x| x.to_bits() == POISON_BITS), "{what}");
        }
    }
}

#[test]
fn strided_copy_and_a_transpose_by_columns_on_the_emulator() {
    let mut rng = rng("emulator strided");
    let (rows, cols) = (37, 23);
    let input = random_matrix(&mut rng, rows * cols);
    let mut output = poison(rows * cols);
    for c in 0..cols {
        let column = Strided { offset: c, stride: cols, len: rows };
        let out_row = Strided { offset: c * rows, stride: 1, len: rows };
        coalesce::copy::emu::strided(&input, column, &mut output, out_row).unwrap();
    }
    let want: Vec<f32> = (0..rows * cols).map(|i| input[(i % rows) * cols + i / rows]).collect();
    assert_bits_eq("column-by-column transpose", &output, &want);
}

#[test]
fn strided_runs_past_the_buffer_are_errors() {
    let src = vec![1.0f32; 100];
    let mut dst = vec![0.0f32; 100];
    let ok = Strided { offset: 0, stride: 10, len: 10 };
    let past = Strided { offset: 1, stride: 10, len: 10 }; // last index 91: fine
    coalesce::copy::emu::strided(&src, ok, &mut dst, past).unwrap();
    let too_far = Strided { offset: 10, stride: 10, len: 10 }; // last index 100
    assert!(matches!(coalesce::copy::emu::strided(&src, too_far, &mut dst, ok), Err(Error::LengthMismatch { .. })));
    // Runs whose last index is past usize, or is usize::MAX itself.
    for far in [
        Strided { offset: 0, stride: usize::MAX, len: 3 },
        Strided { offset: 0, stride: usize::MAX, len: 2 },
        Strided { offset: usize::MAX, stride: 1, len: 1 },
    ] {
        let e = coalesce::copy::emu::strided(&src, far, &mut dst, Strided { len: far.len, ..ok }).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "strided source", expected: usize::MAX, .. }), "{e}");
    }
    let e = coalesce::copy::emu::launch(&src, &mut dst[1..]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 100, actual: 99, .. }), "{e}");
    assert_eq!(e.to_string(), "copy destination holds 99 elements but a copy of a 100-element source needs 100");
    // Runs of different lengths: the message names the runs, not the buffers.
    let e = coalesce::copy::emu::strided(&src, ok, &mut dst, Strided { len: 9, ..ok }).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "strided destination", expected: 10, actual: 9, .. }));
    assert!(e.to_string().contains("the source run Strided { offset: 0, stride: 10, len: 10 } needs 10"), "{e}");
}

/// A destination run of stride 0 writes one element from every thread, a
/// race: an error, before anything runs. A source run may repeat one (it is
/// only read), and a run of one element may have any stride.
#[test]
fn a_destination_run_that_repeats_an_element_is_an_error() {
    let src: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let mut dst = vec![0.0f32; 100];
    let repeat = Strided { offset: 3, stride: 0, len: 5 };
    let e = coalesce::copy::emu::strided(&src, Strided { offset: 0, stride: 1, len: 5 }, &mut dst, repeat).unwrap_err();
    assert!(matches!(e, Error::OverlappingOutput { kernel: "copy_strided_f32", .. }), "{e}");
    assert!(dst.iter().all(|&x| x == 0.0), "nothing was written");
    coalesce::copy::emu::strided(&src, repeat, &mut dst, Strided { offset: 0, stride: 1, len: 5 }).unwrap();
    assert_eq!(dst[..6], [3.0, 3.0, 3.0, 3.0, 3.0, 0.0]);
    coalesce::copy::emu::strided(&src, Strided { len: 1, ..repeat }, &mut dst, Strided { len: 1, ..repeat }).unwrap();
}

/// Copies of nothing launch nothing (an empty report), once the lengths are
/// checked. A strided run of no elements touches nothing, so it fits any
/// buffer at any offset; a run of another length is still a mismatch.
#[test]
fn empty_copies_are_no_ops_on_the_emulator() {
    copy::emu::launch(&[], &mut []).unwrap();
    assert_eq!(copy::emu::launch_checked(&[], &mut []).unwrap(), Report::default());
    let e = copy::emu::launch(&[], &mut [0.0]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 0, actual: 1, .. }), "{e}");
    let e = copy::emu::launch_checked(&[1.0], &mut []).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 1, actual: 0, .. }), "{e}");

    let src = vec![1.0f32; 10];
    let mut dst = poison(10);
    for offset in [0, 9, 10, 1000] {
        let empty = Strided { offset, stride: 3, len: 0 };
        copy::emu::strided(&src, empty, &mut dst, empty).unwrap_or_else(|e| panic!("offset {offset}: {e}"));
        copy::emu::strided(&[], empty, &mut [], empty).unwrap();
    }
    assert!(dst.iter().all(|x| x.to_bits() == POISON_BITS), "an empty strided copy wrote");
    let (empty, one) = (Strided { offset: 0, stride: 1, len: 0 }, Strided { offset: 0, stride: 1, len: 1 });
    let e = copy::emu::strided(&src, empty, &mut dst, one).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "strided destination", .. }), "{e}");
}

#[test]
fn empty_copies_are_no_ops_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu empty copies") else { return };
    let stream = gpu.stream().unwrap();
    empty_is_a_no_op(&stream, "copy", |src, dst| copy::copy(&stream, src, dst));
    empty_is_a_no_op(&stream, "copy_bulk", |src, dst| copy::copy_bulk(&stream, src, dst));
    let empty = Strided { offset: 0, stride: 5, len: 0 };
    empty_is_a_no_op(&stream, "copy_strided", |src, dst| copy::copy_strided(&stream, src, empty, dst, empty));
    for shape in empty_shapes() {
        empty_is_a_no_op(&stream, &format!("transpose_by_column_copies of {shape}"), |input, output| {
            copy::transpose_by_column_copies(&stream, input, output, shape)
        });
    }
    let (one, mut none) = (gpu.alloc::<f32>(1).unwrap(), gpu.alloc::<f32>(0).unwrap());
    let e = copy::copy(&stream, &one, &mut none).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 1, actual: 0, .. }), "{e}");
}

#[test]
fn copies_and_a_transpose_by_column_copies_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu copies") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu copies");
    for len in with_large(&LENGTHS, [(1 << 26) + 3]) {
        let src_host = random_matrix(&mut rng, len);
        let src = gpu.upload(&src_host).unwrap();
        let got = run_poisoned(&stream, len, |dst| copy::copy(&stream, &src, dst));
        assert_bits_eq(&format!("gpu copy len {len}"), &got, &src_host);
    }
    // The bulk copy (sm_90a): 6 chunks for a block of an H100's 264 at
    // (3 << 21) + 5, so that each refills its buffers; offset by 3 floats.
    if gpu.has_kernel("copy_bulk_f32") {
        for len in LENGTHS.into_iter().chain([(3 << 21) + 5]) {
            let src_host = random_matrix(&mut rng, len + 3);
            let src = gpu.upload(&src_host).unwrap();
            for (src_off, dst_off) in [(0, 0), (3, 3), (1, 0)] {
                let out = gpu.upload(&poison(len + 3)).unwrap();
                let mut window = out.index(dst_off..dst_off + len);
                copy::copy_bulk(&stream, &src.index(src_off..src_off + len), &mut window).unwrap();
                stream.synchronize().unwrap();
                let got = download(&out);
                let what = format!("gpu bulk copy len {len} offsets {src_off}/{dst_off}");
                assert_bits_eq(&what, &got[dst_off..dst_off + len], &src_host[src_off..src_off + len]);
                assert!(
                    got[..dst_off].iter().chain(&got[dst_off + len..]).all(|x| x.to_bits() == POISON_BITS),
                    "{what}"
                );
            }
        }
    } else {
        eprintln!("skipping gpu bulk copy: {} loaded {:?}, not sm_90a", gpu.name(), gpu.module_name());
    }
    let shape = MatrixShape::new(129, 67).unwrap();
    let input_host = random_matrix(&mut rng, shape.len());
    let input = gpu.upload(&input_host).unwrap();
    let got = run_poisoned(&stream, shape.len(), |out| copy::transpose_by_column_copies(&stream, &input, out, shape));
    let (rows, cols) = (shape.rows(), shape.cols());
    let want: Vec<f32> = (0..rows * cols).map(|i| input_host[(i % rows) * cols + i / rows]).collect();
    assert_bits_eq("gpu column-by-column transpose", &got, &want);
}
