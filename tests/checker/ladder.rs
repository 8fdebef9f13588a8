//! The library's transpose steps and copy kernel under the checker and the
//! counters: no finding at odd shapes, exact outputs, and per line the
//! sectors and wavefronts per request that the model says.

use crate::common::*;
use coalesce::MatrixShape;
use coalesce::emu::Op;
use coalesce::transpose::Variant;

#[test]
fn every_transpose_step_and_the_copy_pass_the_checker_at_odd_shapes() {
    let mut rng = rng("checked transposes");
    for (shape, input) in random_matrices(&mut rng, &[(1, 1), (33, 65), (67, 131), (132, 200)]) {
        let want = transpose_reference(&input, shape.rows(), shape.cols());
        for variant in Variant::ALL {
            let mut output = poison(shape.len());
            let report = coalesce::transpose::emu::launch_checked(variant, &input, &mut output, shape).unwrap();
            assert!(report.findings.is_empty(), "{} at {shape}: {:#?}", variant.name(), report.findings);
            check_exact(&format!("{} of {shape}", variant.name()), shape.t(), &output, &want);
        }
    }
    for len in [1, 3, 4, 1000, 4097] {
        let src = random_matrix(&mut rng, len);
        let mut dst = poison(len);
        let report = coalesce::copy::emu::launch_checked(&src, &mut dst).unwrap();
        assert!(report.findings.is_empty(), "copy of {len}: {:#?}", report.findings);
        assert!(src.iter().zip(&dst).all(|(a, b)| a.to_bits() == b.to_bits()), "copy of {len}");
    }
}

/// (kernel, global ld sectors/request, global st sectors/request, shared st
/// wavefronts/request, shared ld wavefronts/request, bytes per global access)
/// on interior tiles: what the docs say each step does.
const MODEL: [(Variant, f64, f64, f64, f64, u32); 8] = [
    (Variant::Naive, 4.0, 32.0, 0.0, 0.0, 4),
    (Variant::NaiveCols, 32.0, 4.0, 0.0, 0.0, 4),
    (Variant::Tiled, 4.0, 4.0, 1.0, 32.0, 4),
    (Variant::Padded, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Swizzled, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Wide, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Vec4, 16.0, 16.0, 2.0, 2.0, 16),
    (Variant::Vec4Cols, 16.0, 16.0, 2.0, 2.0, 16),
];

#[test]
fn the_transpose_ladder_counts_what_the_model_says() {
    let shape = MatrixShape::new(128, 128).unwrap();
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32).collect();
    for (variant, ld, st, sh_st, sh_ld, width) in MODEL {
        let mut output = poison(shape.len());
        let report = coalesce::transpose::emu::launch_checked(variant, &input, &mut output, shape).unwrap();
        let c = &report.counters;
        let name = variant.name();
        for (op, want) in
            [(Op::GlobalLoad, ld), (Op::GlobalStore, st), (Op::SharedStore, sh_st), (Op::SharedLoad, sh_ld)]
        {
            assert_eq!(c.total(op).per_request(), want, "{name}: {} per {} request", op.unit(), op.name());
        }
        // Every element read and written once, in requests of whole warps.
        let bytes = 4 * shape.len() as u64;
        for op in [Op::GlobalLoad, Op::GlobalStore] {
            let t = c.total(op);
            assert_eq!(t.bytes, bytes, "{name}: {} bytes", op.name());
            assert_eq!(t.requests, bytes / (32 * width as u64), "{name}: {} requests", op.name());
            assert!(c.of(op).all(|s| s.width == width), "{name}: {} width", op.name());
        }
        if sh_ld > 0.0 {
            assert_eq!(c.total(Op::SharedLoad).bytes, bytes, "{name}: shared bytes");
        }
    }
}

#[test]
fn the_copy_moves_16_bytes_a_lane_in_16_sectors_a_request() {
    let src: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    let mut dst = poison(src.len());
    let c = coalesce::copy::emu::launch_checked(&src, &mut dst).unwrap().counters;
    for op in [Op::GlobalLoad, Op::GlobalStore] {
        let t = c.total(op);
        assert_eq!((t.per_request(), t.requests, t.bytes), (16.0, 4096 / 128, 4 * 4096), "{}", op.name());
        assert_eq!(t.efficiency(), 1.0);
        assert!(c.of(op).all(|s| s.width == 16));
    }
}
