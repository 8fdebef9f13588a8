//! The f64 reference every softmax test checks against, the tolerance of
//! the check, the inputs (logits and the hard cases), and running every
//! kernel that takes a row length through the check.
//!
//! Tolerance, per element, from the error model of `exp(x - max)` in f32:
//! `x - max` and `* log2 e` are rounded (relative error 2^-24 |d| each, for
//! `d = x - max`), `ex2.approx` adds ~2 ulp, the sum and `1 / sum` a few
//! more. So `|got - want| <= |want| 2^-23 (16 + 2 |d|) + 1e-37` (the last
//! term: `ex2.approx.ftz` flushes results below 2^-126 to 0). Every row that
//! is not NaN must sum to 1 within 1e-6 (summed in f64).

use crate::common::*;
use coalesce::MatrixShape;
use coalesce::softmax::{Kernel, emu};
use rand::{Rng, rngs::StdRng};

/// The reference, in f64, with torch.softmax's special values: a NaN or
/// +inf in a row, or a row of only -inf, makes the row NaN.
pub fn reference(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; rows * cols];
    par_rows(&mut out, cols, |r, y| {
        let x = &input[r * cols..(r + 1) * cols];
        let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        if x.iter().any(|v| v.is_nan() || *v == f32::INFINITY) || m == f64::NEG_INFINITY {
            y.fill(f64::NAN);
            return;
        }
        let mut s = 0.0;
        for (y, &v) in y.iter_mut().zip(x) {
            *y = (v as f64 - m).exp();
            s += *y;
        }
        y.iter_mut().for_each(|y| *y /= s);
    });
    out
}

/// Runs `f(row, row_slice)` over the rows of `out` on all cores.
fn par_rows<T: Send>(out: &mut [T], cols: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let rows = out.len() / cols;
    let per = rows.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(per * cols).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, row) in chunk.chunks_mut(cols).enumerate() {
                    f(i * per + j, row);
                }
            });
        }
    });
}

/// What a comparison measured, for the accuracy lines the docs quote.
#[derive(Default, Clone, Copy)]
pub struct Stats {
    /// Largest |got - want| / want in units of 2^-23, over elements within
    /// 1 of their row's max (the large outputs).
    pub ulp_near_max: f64,
    /// Largest |sum of the row - 1| over rows that are not NaN.
    pub row_sum: f64,
}

impl Stats {
    fn merge(self, o: Stats) -> Stats {
        Stats { ulp_near_max: self.ulp_near_max.max(o.ulp_near_max), row_sum: self.row_sum.max(o.row_sum) }
    }
}

/// Compares every element and every row sum; fails with the first bad
/// (row, col).
pub fn check(what: &str, shape: MatrixShape, input: &[f32], got: &[f32], want: &[f64]) -> Stats {
    let cols = shape.cols();
    assert_eq!(got.len(), shape.len(), "{what} on {shape}: output length");
    let mut stats = vec![Stats::default(); shape.rows()];
    let mut bad: Vec<Option<String>> = vec![None; shape.rows()];
    let mut pairs: Vec<(Stats, Option<String>)> = stats.iter().copied().zip(bad.drain(..)).collect();
    par_rows(&mut pairs, 1, |r, slot| {
        let x = &input[r * cols..(r + 1) * cols];
        let (g, w) = (&got[r * cols..(r + 1) * cols], &want[r * cols..(r + 1) * cols]);
        let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let mut st = Stats::default();
        let mut sum = 0.0f64;
        for c in 0..cols {
            let (g, w) = (g[c], w[c]);
            let fail = |why: &str| format!("{why}: row {r} col {c}: got {g} (bits {:#x}), want {w}", g.to_bits());
            if g.to_bits() == POISON_BITS {
                slot[0].1 = Some(fail("never written"));
                return;
            }
            if w.is_nan() {
                if !g.is_nan() {
                    slot[0].1 = Some(fail("expected NaN"));
                    return;
                }
                continue;
            }
            let d = (x[c] as f64 - m).abs();
            let tol = w.abs() * 2f64.powi(-23) * (16.0 + 2.0 * d) + 1e-37;
            if g.is_nan() || (g as f64 - w).abs() > tol {
                slot[0].1 = Some(fail(&format!("off by {:.3e} (tolerance {tol:.3e})", (g as f64 - w).abs())));
                return;
            }
            if d <= 1.0 {
                st.ulp_near_max = st.ulp_near_max.max((g as f64 - w).abs() / w / 2f64.powi(-23));
            }
            sum += g as f64;
        }
        if !w[0].is_nan() {
            st.row_sum = (sum - 1.0).abs();
            if st.row_sum > 1e-6 {
                slot[0].1 = Some(format!("row {r} sums to 1 + {:.3e}", sum - 1.0));
            }
        }
        slot[0].0 = st;
    });
    for (r, (st, bad)) in pairs.into_iter().enumerate() {
        if let Some(msg) = bad {
            panic!("{what} on {shape}: {msg}");
        }
        stats[r] = st;
    }
    stats.into_iter().fold(Stats::default(), Stats::merge)
}

/// Logits: uniform in [-8, 8] (outputs spread over ~7 decades).
pub fn logits(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-8.0f32..8.0)).collect()
}

/// One row per hard case, `cols` columns each.
pub fn hard_rows(rng: &mut StdRng, cols: usize) -> (Vec<f32>, &'static [&'static str]) {
    const NAMES: &[&str] = &[
        "causal mask (first 60% -inf)",
        "random half -inf",
        "all -inf",
        "+-1e30 and small values",
        "all 1e30",
        "constant",
        "one NaN",
        "one +inf",
        "-inf last, rest logits",
    ];
    let mut m = Vec::with_capacity(NAMES.len() * cols);
    let ninf = f32::NEG_INFINITY;
    let pos = rng.random_range(0..cols);
    for (i, _) in NAMES.iter().enumerate() {
        for c in 0..cols {
            let l = rng.random_range(-8.0f32..8.0);
            m.push(match i {
                0 => {
                    if c < cols * 3 / 5 {
                        ninf
                    } else {
                        l
                    }
                }
                1 => {
                    if rng.random_bool(0.5) {
                        ninf
                    } else {
                        l
                    }
                }
                2 => ninf,
                3 => [1e30, -1e30, 0.0, 5.0][rng.random_range(0..4)],
                4 => 1e30,
                5 => 0.25,
                6 => {
                    if c == pos {
                        f32::NAN
                    } else {
                        l
                    }
                }
                7 => {
                    if c == pos {
                        f32::INFINITY
                    } else {
                        l
                    }
                }
                _ => {
                    if c + 1 == cols {
                        ninf
                    } else {
                        l
                    }
                }
            });
        }
    }
    (m, NAMES)
}

/// The kernels that can take rows of `cols` columns.
pub fn kernels_for(cols: usize) -> Vec<Kernel> {
    Kernel::ALL.into_iter().filter(|k| cols <= k.max_cols() as usize).collect()
}

/// Runs every kernel that takes `shape`'s rows through `run` (`None`: a
/// kernel the GPU's module lacks, skipped), checks each output against the
/// f64 reference (failures name the kernel's entry point followed by
/// `label`), and hands `each` the kernel, its output and what the check
/// measured.
pub fn check_every_kernel(
    shape: MatrixShape, input: &[f32], label: &str, run: impl Fn(Kernel) -> Option<Vec<f32>>,
    mut each: impl FnMut(Kernel, &[f32], Stats),
) {
    let want = reference(input, shape.rows(), shape.cols());
    for kernel in kernels_for(shape.cols()) {
        let Some(output) = run(kernel) else {
            eprintln!("skipping {}: not in this GPU's module", kernel.entry_point());
            continue;
        };
        let stats = check(&format!("{}{label}", kernel.entry_point()), shape, input, &output, &want);
        each(kernel, &output, stats);
    }
}

/// `kernel` on the emulator, into a poisoned output.
pub fn on_emulator(kernel: Kernel, input: &[f32], shape: MatrixShape) -> Vec<f32> {
    let mut output = poison(shape.len());
    emu::launch(kernel, input, &mut output, shape).unwrap();
    output
}
