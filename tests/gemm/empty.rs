//! Empty products (`m`, `n` or `k` zero) give what BLAS gives, on the
//! emulator and on the GPU, for every version and `sgemm`.

use crate::common::*;
use coalesce::Error;
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use rand::rngs::StdRng;

/// The empty-product cases, `(m, n, k)`: no `C`, and `k = 0`.
const EMPTY_SHAPES: [(usize, usize, usize); 5] = [(0, 5, 7), (5, 0, 7), (0, 0, 0), (0, 3, 0), (13, 29, 0)];

/// What BLAS gives for an empty product: nothing for `m = 0` or `n = 0`, `C
/// = beta * C` for `k = 0` (`0` where `beta == 0`, even over NaN; `C`
/// untouched where `beta == 1`).
fn empty_product_want(c0: &[f32], s: AlphaBeta) -> Vec<f32> {
    c0.iter()
        .map(|&c| {
            if s.beta == 0.0 {
                0.0
            } else if s.beta == 1.0 {
                c
            } else {
                s.beta * c
            }
        })
        .collect()
}

/// `C0` for the empty products: random, with an inf and a NaN in it.
fn empty_product_c0(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let mut c0 = random_matrix(rng, len);
    if len > 2 {
        (c0[1], c0[len - 1]) = (f32::INFINITY, f32::from_bits(POISON_BITS));
    }
    c0
}

/// The scalars of the empty products: the product (C poisoned, not read),
/// an update, `beta == 1` (BLAS's quick return), and a NaN `alpha` (`k = 0`:
/// no term it could scale).
const EMPTY_SCALARS: [AlphaBeta; 4] =
    [AlphaBeta::PRODUCT, AlphaBeta::new(1.5, -0.75), AlphaBeta::new(2.0, 1.0), AlphaBeta::new(f32::NAN, 2.0)];

fn same_bits_or_both_nan(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g == w || (g.is_nan() && w.is_nan()))
}

#[test]
fn empty_products_are_blas_on_the_emulator() {
    let mut rng = rng("emulator gemm empty");
    for (m, n, k) in EMPTY_SHAPES {
        let shape = GemmShape::new(m, n, k).unwrap();
        assert_eq!((shape.a().len(), shape.b().len(), shape.c().len()), (m * k, k * n, m * n));
        let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
        for s in EMPTY_SCALARS {
            let c0 = empty_product_c0(&mut rng, m * n);
            let want = empty_product_want(&c0, s);
            for v in Variant::ALL {
                let mut c = c0.clone();
                gemm::emu::launch(v, &a, &b, &mut c, shape, s).unwrap();
                assert!(same_bits_or_both_nan(&c, &want), "{} on {shape} {s:?}", v.name());
                let mut c = c0.clone();
                let report = gemm::emu::launch_checked(v, &a, &b, &mut c, shape, s).unwrap();
                assert!(report.findings.is_empty(), "{} on {shape}: {:?}", v.name(), report.findings);
                assert!(same_bits_or_both_nan(&c, &want), "{} checked on {shape} {s:?}", v.name());
            }
        }
        // The buffers are still checked.
        let mut c = vec![0.0f32; m * n + 1];
        let e = gemm::emu::launch(Variant::Naive, &a, &b, &mut c, shape, AlphaBeta::PRODUCT).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "C", .. }), "{shape}: {e}");
    }
}

#[test]
fn empty_products_are_blas_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu gemm empty") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu gemm empty");
    for (m, n, k) in EMPTY_SHAPES {
        let shape = GemmShape::new(m, n, k).unwrap();
        let a = gpu.upload(&random_matrix(&mut rng, m * k)).unwrap();
        let b = gpu.upload(&random_matrix(&mut rng, k * n)).unwrap();
        for s in EMPTY_SCALARS {
            let c0 = empty_product_c0(&mut rng, m * n);
            let want = empty_product_want(&c0, s);
            let runs = Variant::ALL.iter().filter(|v| gpu.has_kernel(v.entry_point())).map(|&v| Some(v));
            for v in runs.chain([None]) {
                let mut c = gpu.upload(&c0).unwrap();
                match v {
                    Some(v) => gemm::launch(&stream, v, &a, &b, &mut c, shape, s).unwrap(),
                    None => gemm::sgemm(&stream, &a, &b, &mut c, shape, s).unwrap(),
                }
                stream.synchronize().unwrap();
                let name = v.map_or("sgemm", |v| v.name());
                assert!(same_bits_or_both_nan(&download(&c), &want), "{name} on {shape} {s:?}");
            }
        }
    }
}
