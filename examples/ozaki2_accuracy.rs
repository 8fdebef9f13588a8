//! How many moduli an Ozaki-II GEMM needs for FP32's accuracy, class by
//! class, computed on the CPU (no GPU needed).
//!
//! The scheme's integer products are exact, so what a GPU implementation
//! returns is fixed by its one rounding, each operand to integers of
//! `alpha` bits by rows of `A` and columns of `B`, and by the last, to f32
//! ([`coalesce::kernels::gemm::ozaki`]). This computes that result, for 5
//! to 12 moduli (`alpha` from the moduli and the depth), on the input
//! classes of `examples/gemm_specials.rs` and two at the depth of
//! 16384^3 (`k = 16384`), and prints each one's largest
//! error over `sum |a b|` beside an FP32 FMA sum's (in order, one FMA a
//! term), and the moduli that a guard bounding the rounding's error by
//! `2^-24 sum |a b|` from the operands' peaks and sums would take. It
//! checks the model against the scheme itself: the residues'
//! products, rebuilt by the Chinese remainder theorem, give the same f32
//! bits at a sample of elements.
//!
//! The uniform class's values are multiples of `2^-22` (rand's f32 draw),
//! whole at `alpha` 22 and up, so only the final rounding shows there; the
//! classes scaled by `1e-17` and `1e17` are uniform values with every
//! mantissa bit.
//!
//! `cargo run --release --example ozaki2_accuracy`

mod accuracy;

use accuracy::{Case, accuracy_classes, class, references, spread};
use coalesce::kernels::gemm::ozaki::{MAX_MODULI, alpha, exponent, product_by_residues, to_integer};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The moduli counts tried.
const MODULI_COUNTS: std::ops::RangeInclusive<usize> = 5..=12;

/// Each line's peak and sum ([`lines`]).
type Lines = (Vec<f32>, Vec<f64>);

/// The largest finite `|x|` and the sum of the finite `|x|` of each row
/// (`by_rows`) or column of the `rows x cols` row-major `x`: the peaks give
/// the scale exponents ([`exponent`]), peaks and sums the guard's bound.
fn lines(x: &[f32], (rows, cols): (usize, usize), by_rows: bool) -> Lines {
    let len = if by_rows { rows } else { cols };
    let (mut peak, mut sum) = (vec![0f32; len], vec![0f64; len]);
    for (i, &v) in x.iter().enumerate().filter(|(_, v)| v.is_finite()) {
        let at = if by_rows { i / cols } else { i % cols };
        peak[at] = peak[at].max(v.abs());
        sum[at] += v.abs() as f64;
    }
    (peak, sum)
}

/// The moduli a guard would take that knows the operands' row and column
/// peaks and sums and `sum |a b|` (in a GPU run, one more cheap product of
/// magnitudes): the rounding's bound, `2^-alpha (max |a_i.| sum_h |b_hj| +
/// sum_h |a_ih| max |b_.j|)`, at most `2^-24 sum |a b|` at every element.
/// Returns the `alpha` that asks for and the fewest moduli that give it
/// (`None`: more than the table has).
fn guarded(c: &Case, mag: &[f64], ((peak_a, sum_a), (peak_b, sum_b)): (&Lines, &Lines)) -> (u32, Option<usize>) {
    let (_, n, k) = c.dims;
    let mut worst = 1f64;
    for (e, &g) in mag.iter().enumerate().filter(|(_, g)| **g > 0.0) {
        let (i, j) = (e / n, e % n);
        worst = worst.max((peak_a[i] as f64 * sum_b[j] + sum_a[i] * peak_b[j] as f64) / g);
    }
    let alpha_needed = worst.log2().ceil() as u32 + 24;
    (alpha_needed, (1..=MAX_MODULI).find(|&l| alpha(l, k) >= alpha_needed))
}

/// `A'` (`m x k`) and `B'^T` (`n x k`), the integers of the scheme's
/// rounding at `alpha` bits, as f64 scaled back (`x^ = x' 2^(e - alpha)`).
fn rounded(c: &Case, alpha: u32, (ea, eb): (&[i32], &[i32])) -> (Vec<f64>, Vec<f64>) {
    let (m, n, k) = c.dims;
    let a = alpha as i32;
    let back = |x: f32, e: i32| to_integer(x, a - e) as f64 * 2f64.powi(e - a);
    let ra = (0..m * k).map(|i| back(c.a[i], ea[i / k])).collect();
    let rb = (0..n * k).map(|i| back(c.b[(i % k) * n + i / k], eb[i / k])).collect();
    (ra, rb)
}

/// The largest `|c - exact| / sum |a b|` of `C = A^ B^` rounded to f32,
/// row-parallel.
fn largest_error(c: &Case, (ra, rb): (&[f64], &[f64]), want: &[f64], mag: &[f64]) -> f64 {
    let (m, n, k) = c.dims;
    let threads = std::thread::available_parallelism().map_or(2, |t| t.get());
    let rows = m.div_ceil(threads);
    std::thread::scope(|sc| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                sc.spawn(move || {
                    let mut worst = 0f64;
                    for i in t * rows..((t + 1) * rows).min(m) {
                        let row = &ra[i * k..(i + 1) * k];
                        for j in 0..n {
                            let dot: f64 = row.iter().zip(&rb[j * k..(j + 1) * k]).map(|(x, y)| x * y).sum();
                            if mag[i * n + j] > 0.0 {
                                worst = worst.max(((dot as f32) as f64 - want[i * n + j]).abs() / mag[i * n + j]);
                            }
                        }
                    }
                    worst
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold(0.0, f64::max)
    })
}

/// The scheme itself at element `(i, j)`, as a GPU computes it
/// ([`product_by_residues`]: each modulus's product of residues as an
/// `i32` sum, rebuilt from Garner's digits in f64), scaled back and rounded
/// to f32.
fn by_residues(c: &Case, moduli: usize, alpha: u32, (ea, eb): (&[i32], &[i32]), (i, j): (usize, usize)) -> f32 {
    let (_, n, k) = c.dims;
    let a = alpha as i32;
    let x = |h: usize| to_integer(c.a[i * k + h], a - ea[i]);
    let y = |h: usize| to_integer(c.b[h * n + j], a - eb[j]);
    (product_by_residues(moduli, k, x, y) * 2f64.powi(ea[i] + eb[j] - 2 * a)) as f32
}

fn main() {
    println!("Ozaki scheme II on the CPU: largest |c - exact| / sum |a b|, by moduli (alpha: the operands' bits)");
    print!("{:<48} {:>9}", "input class", "FP32 FMA");
    for l in MODULI_COUNTS {
        print!(" {:>13}", format!("{l} moduli"));
    }
    println!(" {:>18}", "guard: alpha, L");
    // The depth of the 16384^3 the speed target is set at, where `alpha`
    // is two bits below its value at k = 1003 for the same moduli.
    let mut rng = StdRng::seed_from_u64(31);
    let deep = (512, 512, 16384);
    let full = class(&mut rng, "uniform x 1e-17 (every bit), 512x512x16384", deep, &|_, x| x * 1e-17, &|x| x * 1e-17);
    let spread = class(&mut rng, "log-spread 1e-8..1e8, 512x512x16384", deep, &|_, x| spread(x), &spread);
    for c in accuracy_classes().into_iter().chain([full, spread]) {
        let (m, n, k) = c.dims;
        let (fp32, want, mag) = references(&c);
        let fma = fp32.iter().zip(&want).zip(&mag).filter(|(_, m)| **m > 0.0);
        let fma = fma.map(|((&f, &w), &m)| (f as f64 - w).abs() / m).fold(0.0, f64::max);
        let (la, lb) = (lines(&c.a, (m, k), true), lines(&c.b, (k, n), false));
        let exponents = |l: &Lines| -> Vec<i32> { l.0.iter().map(|p| exponent(p.to_bits())).collect() };
        let (ea, eb) = (exponents(&la), exponents(&lb));
        print!("{:<48} {fma:>9.1e}", c.name);
        for l in MODULI_COUNTS {
            let alpha = alpha(l, k);
            let (ra, rb) = rounded(&c, alpha, (&ea, &eb));
            let err = largest_error(&c, (&ra, &rb), &want, &mag);
            print!(" {:>13}", format!("{err:.1e} ({alpha})"));
            // The model is the scheme: the same f32 bits from the residues.
            for (i, j) in [(0, 0), (m / 2, n / 3), (m - 1, n - 1)] {
                let model: f64 = (0..k).map(|h| ra[i * k + h] * rb[j * k + h]).sum();
                let scheme = by_residues(&c, l, alpha, (&ea, &eb), (i, j));
                assert_eq!(scheme.to_bits(), (model as f32).to_bits(), "{} ({i}, {j}), {l} moduli", c.name);
            }
        }
        let (alpha_needed, moduli) = guarded(&c, &mag, (&la, &lb));
        println!(" {:>18}", format!("{alpha_needed}, {}", moduli.map_or("> 15".into(), |l| l.to_string())));
    }
}
