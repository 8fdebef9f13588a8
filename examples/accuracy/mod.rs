//! What the GEMM accuracy examples share: the input classes FP32 accuracy
//! is judged on, and the references each result is held to.
#![allow(dead_code)]

use coalesce::gemm::AlphaBeta;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The shape of every case whose name gives none.
pub const M: usize = 1000;
pub const N: usize = 1001;
pub const K: usize = 1003;

pub struct Case {
    pub name: &'static str,
    /// `(M, N, K)`.
    pub dims: (usize, usize, usize),
    pub s: AlphaBeta,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c0: Vec<f32>,
}

/// The FP32 FMA reference (one FMA per term in order, then the epilogue),
/// the exact result and `|alpha| sum |a b| + |beta c0|`, row-parallel.
pub fn references(c: &Case) -> (Vec<f32>, Vec<f64>, Vec<f64>) {
    let (m, n, k) = c.dims;
    let (mut f, mut w, mut g) = (vec![0f32; m * n], vec![0f64; m * n], vec![0f64; m * n]);
    let rows = m.div_ceil(16);
    std::thread::scope(|sc| {
        for (r, ((f, w), g)) in
            f.chunks_mut(rows * n).zip(w.chunks_mut(rows * n)).zip(g.chunks_mut(rows * n)).enumerate()
        {
            sc.spawn(move || {
                for e in 0..f.len() {
                    let (i, j) = (r * rows + e / n, e % n);
                    let (mut dot, mut exact, mut mag) = (0f32, 0f64, 0f64);
                    for p in 0..k {
                        let (x, y) = (c.a[i * k + p], c.b[p * n + j]);
                        dot = x.mul_add(y, dot);
                        exact += x as f64 * y as f64;
                        mag += (x as f64 * y as f64).abs();
                    }
                    let old = if c.s.beta == 0.0 { 0.0 } else { c.s.beta * c.c0[i * n + j] };
                    f[e] = c.s.alpha * dot + old;
                    w[e] = c.s.alpha as f64 * exact + old as f64;
                    g[e] = (c.s.alpha as f64).abs() * mag + (old as f64).abs();
                }
            });
        }
    });
    (f, w, g)
}

/// 10^u for the value's own u in [-8, 8], its sign kept: log-spread
/// magnitudes from uniform(-1, 1) values.
pub fn spread(x: f32) -> f32 {
    x.signum() * 10f32.powf(16.0 * (x.abs() * 7919.0).fract() - 8.0)
}

/// A case of `C = A B` (`C` poisoned) of shape `(m, n, k)`: uniform(-1, 1)
/// values drawn from `rng`, `A`'s then `B`'s, element `(i, h)` of `A` made
/// `fa(i, x)` and each of `B`'s `fb(x)`.
pub fn class(
    rng: &mut StdRng, name: &'static str, (m, n, k): (usize, usize, usize), fa: &dyn Fn(usize, f32) -> f32,
    fb: &dyn Fn(f32) -> f32,
) -> Case {
    let mut uni = |len| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
    let (a, b) = (uni(m * k), uni(k * n));
    let a = a.iter().enumerate().map(|(i, &x)| fa(i / k, x)).collect();
    let b = b.iter().map(|&x| fb(x)).collect();
    Case { name, dims: (m, n, k), s: AlphaBeta::PRODUCT, a, b, c0: vec![f32::NAN; m * n] }
}

/// The input classes of FP32 accuracy (`C = A B`, `C` poisoned): each
/// scales uniform(-1, 1) values, the whole of an operand or some of its
/// rows.
pub fn accuracy_classes() -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(29);
    let mut class =
        |name, dims, fa: &dyn Fn(usize, f32) -> f32, fb: &dyn Fn(f32) -> f32| class(&mut rng, name, dims, fa, fb);
    let (every7, dims) = (|i: usize| i % 7 == 3, (M, N, K));
    vec![
        class("class: uniform(-1,1)", dims, &|_, x| x, &|x| x),
        class("class: log-spread 1e-8..1e8", dims, &|_, x| spread(x), &spread),
        class("class: A, B scaled by 1e-17", dims, &|_, x| x * 1e-17, &|x| x * 1e-17),
        class("class: A, B scaled by 1e17", dims, &|_, x| x * 1e17, &|x| x * 1e17),
        class("class: A subnormal (x 1e-39), B x 1e3, 512^3", (512, 512, 512), &|_, x| x * 1e-39, &|x| x * 1e3),
        class("class: rows of A subnormal (x 1e-39)", dims, &|i, x| if every7(i) { x * 1e-39 } else { x }, &|x| x),
        class(
            "class: rows of A near FLT_MAX (x 3e38), B x 1e-3",
            dims,
            &|i, x| if every7(i) { x.signum() * 3e38 * (0.5 + 0.5 * x.abs()) } else { x },
            &|x| x * 1e-3,
        ),
        class("class: deep K, 256x256x100000", (256, 256, 100_000), &|_, x| x, &|x| x),
    ]
}
