//! Every GEMM version on the emulator against the f64 reference: at odd
//! shapes with every epilogue, step 7 and the `wgmma` steps at every kind
//! of edge, and on buffers that are not 16-byte aligned.

use crate::common::*;
use crate::reference::{Case, check, reference};
use crate::{EDGE_SHAPES, SCALARS, WGMMA_SHAPES, wgmma_steps};
use coalesce::gemm::{self, AlphaBeta, Variant};

/// Emulator shapes `(m, n, k)`: a single element, odd sizes below one tile
/// in every dimension, odd sizes spanning several tiles, and one with every
/// dimension a multiple of 4 but not of a tile (vector paths on interior
/// tiles, scalar paths on the edges).
const EMU_SHAPES: [(usize, usize, usize); 4] = [(1, 1, 1), (17, 33, 65), (70, 45, 130), (132, 260, 68)];

#[test]
fn every_variant_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator gemm");
    for (si, &dims) in EMU_SHAPES.iter().enumerate() {
        // Every epilogue on the small shapes, the plain product on the rest.
        let cases: &[AlphaBeta] = if si <= 1 { &SCALARS } else { &SCALARS[..1] };
        for &s in cases {
            let case = Case::new(&mut rng, dims, s);
            let (want, bound) = reference(&case, None);
            for v in Variant::ALL {
                let t0 = std::time::Instant::now();
                let mut c = case.c0.clone();
                gemm::emu::launch(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
                let worst = check(v, &case, None, &c, &want, &bound);
                eprintln!(
                    "emulator {:>16} {:>12} {s:?}: max error / bound {worst:.2e} ({:.2} s)",
                    v.name(),
                    case.shape.to_string(),
                    t0.elapsed().as_secs_f64()
                );
            }
        }
    }
}

/// Runs each of `variants` on `case` on the emulator and checks it against
/// the f64 reference; prints each one's worst error over its bound.
fn check_on_emulator(case: &Case, variants: &[Variant]) {
    let (want, bound) = reference(case, None);
    for &v in variants {
        let c = case.on_emulator(v);
        let worst = check(v, case, None, &c, &want, &bound);
        eprintln!("emulator {:>16} {:>16}: max error / bound {worst:.2e}", v.name(), case.shape.to_string());
    }
}

#[test]
fn double_buffered_at_every_kind_of_edge_on_the_emulator() {
    let mut rng = rng("emulator gemm edges");
    for dims in EDGE_SHAPES {
        let s = AlphaBeta::new(1.5, -0.5);
        check_on_emulator(&Case::new(&mut rng, dims, s), &[Variant::DoubleBuffered]);
    }
}

#[test]
fn wgmma_at_every_kind_of_edge_on_the_emulator() {
    let mut rng = rng("emulator gemm wgmma");
    for (i, dims) in WGMMA_SHAPES.into_iter().enumerate() {
        let s = if i % 2 == 0 { AlphaBeta::new(1.5, -0.5) } else { AlphaBeta::PRODUCT };
        check_on_emulator(&Case::new(&mut rng, dims, s), &wgmma_steps());
    }
}

/// Buffers one float past a 16-byte boundary: the vector steps must notice
/// and take their scalar paths (a misaligned `ld.global.v4` would fault).
#[test]
fn misaligned_buffers_on_the_emulator() {
    let mut rng = rng("emulator gemm misaligned");
    let s = AlphaBeta::new(1.0, 0.5);
    let case = Case::new(&mut rng, (132, 260, 68), s);
    let (want, bound) = reference(&case, None);
    let shift = |v: &[f32]| -> Vec<f32> { std::iter::once(0.0).chain(v.iter().copied()).collect() };
    let (a, b) = (shift(&case.a), shift(&case.b));
    // Every step: those with 16-byte loads must fall back where a row is
    // not 16-byte aligned, and the TMA steps pad their copies.
    for v in Variant::ALL {
        let mut c = shift(&case.c0);
        gemm::emu::launch(v, &a[1..], &b[1..], &mut c[1..], case.shape, s).unwrap();
        check(v, &case, None, &c[1..], &want, &bound);
    }
}
