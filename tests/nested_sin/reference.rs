//! What the nested-sin tests compare with: the inputs (special values and
//! uniform ones), the f64 reference, the host's bits for each version (the
//! port of `__nv_sinf`, and `poly`'s polynomial), the error units, and the
//! bit-for-bit comparison of an output window and its guards.
//!
//! Accuracy is measured against the f64 value (`x` widened, sines in f64,
//! never rounded to f32), in two units, both printed (`--nocapture`):
//!
//! - **ulp**: `|got - ref| / ulp(ref)`, ulp the spacing of f32 at `ref`;
//! - **eps**: `|got - ref| / (|ref| * f32::EPSILON)`, the relative error in
//!   units of 2^-23. Just below a power of two an ulp is half that, so
//!   there ulp = 2 x eps.

use crate::common::*;
use coalesce::kernels::nested_sin::math::{libdevice_sinf_port, sin_approx, sin3_minimax};
use coalesce::nested_sin::Variant;
use rand::seq::SliceRandom;
use rand::{Rng, rngs::StdRng};

/// Zeros, infinities, NaN, subnormals, the largest floats, the edges of
/// `sinf`'s range reduction, and the edges of our own shortcuts.
pub fn special_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(1),           // smallest subnormal
        f32::from_bits(0x007f_ffff), // largest subnormal
        f32::from_bits(0x0000_1234),
        f32::MIN_POSITIVE,
        f32::MAX,
        3.4e38,
        1.0e38,
        1.0e30,
        1.0e20,
        1.0e10,
        1.0e6,
        105_614.99,
        105_615.0,
        105_615.01,
        1.0,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::FRAC_PI_4,
        0.785,
        0.785_41, // just past pi/4: the first cos quadrant
        2.35,
        std::f32::consts::PI,
        1.0e4,
        1.0e-20,
    ];
    // The f32 nearest k*pi, and its neighbours: where sin is smallest and
    // range reduction is hardest.
    for k in [1.0f64, 2.0, 3.0, 10.0, 100.0, 1e3, 1e4, 3183.0, 1e5, 33_617.0, 1e6, 1e7, 1e10, 1e15, 1e20, 1e30, 1e38] {
        let x = (k * std::f64::consts::PI) as f32;
        if x.is_finite() {
            v.extend([x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits() - 1)]);
        }
    }
    let negated: Vec<f32> = v.iter().map(|x| -x).collect();
    v.extend(negated);
    v
}

/// `n` uniform values in [-1e4, 1e4] with the special values in front.
pub fn inputs(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let mut v = special_values();
    v.extend((0..n).map(|_| rng.random_range(-1.0e4f32..=1.0e4)));
    v
}

/// `f` over `xs` on every core (the references for 2^24 inputs are slow on one).
pub fn par_map<T: Send>(xs: &[f32], f: impl Fn(f32) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = xs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = xs.chunks(chunk).map(|c| s.spawn(|| c.iter().map(|&x| f(x)).collect::<Vec<T>>())).collect();
        parts.into_iter().flat_map(|p| p.join().unwrap()).collect()
    })
}

pub fn sin4_f64(x: f32) -> f64 {
    (x as f64).sin().sin().sin().sin()
}

pub fn port4(x: f32) -> f32 {
    libdevice_sinf_port(libdevice_sinf_port(libdevice_sinf_port(libdevice_sinf_port(x))))
}

/// Step 5 on the host: the port, then the polynomial (pure FMA arithmetic,
/// so the GPU's bits).
pub fn poly4(x: f32) -> f32 {
    sin3_minimax(libdevice_sinf_port(x))
}

/// `poly`'s bound against f64, in ulp of the result (issue 24).
pub const POLY_MAX_ULP: f64 = 4.5;

/// The size of one f32 ulp at `r` (an f64), subnormals included.
pub fn ulp_at(r: f64) -> f64 {
    let a = r.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    let exponent = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(exponent - 23)
}

/// Error of `got` in ulp of the f64 reference; NaN must meet NaN.
pub fn ulp_error(got: f32, want: f64) -> f64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0.0,
        (false, false) => (got as f64 - want).abs() / ulp_at(want),
        _ => f64::INFINITY,
    }
}

/// Relative error of `got` in units of f32::EPSILON (2^-23); NaN must meet NaN.
pub fn eps_error(got: f32, want: f64) -> f64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0.0,
        (false, false) if want == 0.0 && got == 0.0 => 0.0,
        (false, false) if want == 0.0 => f64::INFINITY,
        (false, false) => (got as f64 - want).abs() / (want.abs() * f32::EPSILON as f64),
        _ => f64::INFINITY,
    }
}

/// A correctly rounded sine (f64 sine, rounded to f32), four times with f32
/// rounding in between: the most accurate any four-launch form can be.
pub fn correctly_rounded4(x: f32) -> f32 {
    let cr = |x: f32| (x as f64).sin() as f32;
    cr(cr(cr(cr(x))))
}

/// How many f32 values apart two results are (0 for equal bits; NaN = NaN).
pub fn f32_distance(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    let key = |x: f32| {
        let b = x.to_bits() as i64;
        if b & 0x8000_0000 != 0 { -(b & 0x7fff_ffff) } else { b }
    };
    key(a).abs_diff(key(b))
}

/// Max ulp error and where it is.
#[derive(Clone, Copy, Debug)]
pub struct Worst {
    pub ulp: f64,
    pub x: f32,
    pub got: f32,
    pub want: f64,
}

pub fn worst(xs: &[f32], got: &[f32], want: &[f64], keep: impl Fn(f32) -> bool) -> Worst {
    worst_by(ulp_error, xs, got, want, keep)
}

pub fn worst_by(
    error: fn(f32, f64) -> f64, xs: &[f32], got: &[f32], want: &[f64], keep: impl Fn(f32) -> bool,
) -> Worst {
    let mut w = Worst { ulp: 0.0, x: 0.0, got: 0.0, want: 0.0 };
    for ((&x, &g), &r) in xs.iter().zip(got).zip(want) {
        let e = error(g, r);
        if keep(x) && e > w.ulp {
            w = Worst { ulp: e, x, got: g, want: r };
        }
    }
    w
}

/// The first element whose bits differ from `want` (NaN matches any NaN),
/// or that still holds the poison.
pub fn first_bit_mismatch(got: &[f32], want: &[f32]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(g, w)| g.to_bits() == POISON_BITS || !(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())))
}

pub fn assert_bits(what: &str, xs: &[f32], got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = first_bit_mismatch(got, want) {
        let bad =
            got.iter().zip(want).filter(|(g, w)| g.to_bits() != w.to_bits() && !(g.is_nan() && w.is_nan())).count();
        panic!(
            "{what}: element {i} (x = {:e}) is {:e} ({:#x}), expected {:e} ({:#x}); {bad} of {} differ",
            xs[i],
            got[i],
            got[i].to_bits(),
            want[i],
            want[i].to_bits(),
            got.len()
        );
    }
}

/// Lengths around the vector width and the emulator's grid (2 x 256
/// threads x 4 floats = 2048 per sweep), and (start, output start) offsets:
/// aligned, equally misaligned (scalar head), differently misaligned (all
/// scalar).
pub const LENGTHS: [usize; 8] = [1, 3, 4, 5, 7, 1000, 2049, 9001];
pub const OFFSETS: [(usize, usize); 5] = [(0, 0), (1, 1), (2, 2), (3, 3), (1, 0)];
/// Unwritten guard elements around every output window.
pub const GUARD: usize = 5;

/// What each variant must produce on the host: the port for the ones that
/// keep libdevice's sines, the port and the polynomial for `poly` (bit for
/// bit, both), `f32::sin` four times for `fast` (the emulator's stand-in
/// for `sin.approx`).
pub fn host_expected(variant: Variant, x: f32) -> f32 {
    match variant {
        Variant::Fast => sin_approx(sin_approx(sin_approx(sin_approx(x)))),
        Variant::Poly => poly4(x),
        _ => port4(x),
    }
}

/// `len` of [`inputs`] in random order: the special values mixed in among
/// the uniform ones.
pub fn shuffled_inputs(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let mut xs = inputs(rng, len);
    xs.shuffle(rng);
    xs.truncate(len);
    xs
}

/// `xs` after `offset` poisoned elements.
pub fn at_offset(xs: &[f32], offset: usize) -> Vec<f32> {
    let mut v = poison(offset + xs.len());
    v[offset..].copy_from_slice(xs);
    v
}

/// `buffer[offset..offset + want.len()]` holds `want`'s bits, and every
/// element around that window still holds the poison.
pub fn assert_window(what: &str, xs: &[f32], buffer: &[f32], offset: usize, want: &[f32]) {
    let end = offset + want.len();
    assert_bits(what, xs, &buffer[offset..end], want);
    let guards = buffer[..offset].iter().chain(&buffer[end..]);
    assert!(guards.into_iter().all(|g| g.to_bits() == POISON_BITS), "{what}: wrote outside the output");
}
