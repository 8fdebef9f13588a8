//! The nested sine, `sin(sin(sin(sin(x))))`: every version on the CPU
//! emulator (always) and on the GPU (skipped without one), and the accuracy
//! of each against a float64 reference.
//!
//! Accuracy is measured against the f64 value (`x` widened, sines in f64,
//! never rounded to f32), in two units, both printed (`--nocapture`):
//!
//! - **ulp**: `|got - ref| / ulp(ref)`, ulp the spacing of f32 at `ref`;
//! - **eps**: `|got - ref| / (|ref| * f32::EPSILON)`, the relative error in
//!   units of 2^-23. Just below a power of two an ulp is half that, so
//!   there ulp = 2 x eps.
//!
//! Bounds: one `sin` within 2 ulp (CUDA's documented bound for
//! `sinf`); the nested versions that keep libdevice's sines within 3 of f64
//! and within 1 ulp of the unfused four launches; `poly` (its own
//! polynomial for the three inner sines) within 4.5 ulp of f64, the bound
//! `math::sin3_minimax`'s exhaustive test proves for every input. The 3 is in eps: libdevice composed four times
//! measures 2.5 eps over 2^24 inputs, while in ulp it is 4.0, and even a *correctly rounded* sine
//! composed four times, rounding to f32 in between as four launches must,
//! reaches 3.2 ulp: an error just under a power of two doubles in ulp.
//! `fast` has no relative bound; its absolute error is measured.
//!
//! On the host, `sin` is libdevice's algorithm ported bit for bit
//! (`math::libdevice_sinf_port`), so emulator results are compared with
//! 0 ulp tolerance, and the GPU tests check the port against the GPU too.

mod common;

use coalesce::emu::{Op, Report};
use coalesce::kernels::nested_sin::math::{libdevice_sinf_port, sin_approx, sin3_minimax};
use coalesce::nested_sin::{self, Variant};
use coalesce::{Error, graph};
use common::*;
use rand::seq::SliceRandom;
use rand::{Rng, rngs::StdRng};

/// Zeros, infinities, NaN, subnormals, the largest floats, the edges of
/// `sinf`'s range reduction, and the edges of our own shortcuts.
fn special_values() -> Vec<f32> {
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
fn inputs(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let mut v = special_values();
    v.extend((0..n).map(|_| rng.random_range(-1.0e4f32..=1.0e4)));
    v
}

/// `f` over `xs` on every core (the references for 2^24 inputs are slow on one).
fn par_map<T: Send>(xs: &[f32], f: impl Fn(f32) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = xs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = xs.chunks(chunk).map(|c| s.spawn(|| c.iter().map(|&x| f(x)).collect::<Vec<T>>())).collect();
        parts.into_iter().flat_map(|p| p.join().unwrap()).collect()
    })
}

fn sin4_f64(x: f32) -> f64 {
    (x as f64).sin().sin().sin().sin()
}

fn port4(x: f32) -> f32 {
    libdevice_sinf_port(libdevice_sinf_port(libdevice_sinf_port(libdevice_sinf_port(x))))
}

/// Step 5 on the host: the port, then the polynomial (pure FMA arithmetic,
/// so the GPU's bits).
fn poly4(x: f32) -> f32 {
    sin3_minimax(libdevice_sinf_port(x))
}

/// `poly`'s bound against f64, in ulp of the result (issue 24).
const POLY_MAX_ULP: f64 = 4.5;

/// The size of one f32 ulp at `r` (an f64), subnormals included.
fn ulp_at(r: f64) -> f64 {
    let a = r.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    let exponent = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(exponent - 23)
}

/// Error of `got` in ulp of the f64 reference; NaN must meet NaN.
fn ulp_error(got: f32, want: f64) -> f64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0.0,
        (false, false) => (got as f64 - want).abs() / ulp_at(want),
        _ => f64::INFINITY,
    }
}

/// Relative error of `got` in units of f32::EPSILON (2^-23); NaN must meet NaN.
fn eps_error(got: f32, want: f64) -> f64 {
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
fn correctly_rounded4(x: f32) -> f32 {
    let cr = |x: f32| (x as f64).sin() as f32;
    cr(cr(cr(cr(x))))
}

/// How many f32 values apart two results are (0 for equal bits; NaN = NaN).
fn f32_distance(a: f32, b: f32) -> u64 {
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
struct Worst {
    ulp: f64,
    x: f32,
    got: f32,
    want: f64,
}

fn worst(xs: &[f32], got: &[f32], want: &[f64], keep: impl Fn(f32) -> bool) -> Worst {
    worst_by(ulp_error, xs, got, want, keep)
}

fn worst_by(error: fn(f32, f64) -> f64, xs: &[f32], got: &[f32], want: &[f64], keep: impl Fn(f32) -> bool) -> Worst {
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
fn first_bit_mismatch(got: &[f32], want: &[f32]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(g, w)| g.to_bits() == POISON_BITS || !(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())))
}

fn assert_bits(what: &str, xs: &[f32], got: &[f32], want: &[f32]) {
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
const LENGTHS: [usize; 8] = [1, 3, 4, 5, 7, 1000, 2049, 9001];
const OFFSETS: [(usize, usize); 5] = [(0, 0), (1, 1), (2, 2), (3, 3), (1, 0)];
/// Unwritten guard elements around every output window.
const GUARD: usize = 5;

/// What each variant must produce on the host: the port for the ones that
/// keep libdevice's sines, the port and the polynomial for `poly` (bit for
/// bit, both), `f32::sin` four times for `fast` (the emulator's stand-in
/// for `sin.approx`).
fn host_expected(variant: Variant, x: f32) -> f32 {
    match variant {
        Variant::Fast => sin_approx(sin_approx(sin_approx(sin_approx(x)))),
        Variant::Poly => poly4(x),
        _ => port4(x),
    }
}

/// `len` of [`inputs`] in random order: the special values mixed in among
/// the uniform ones.
fn shuffled_inputs(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let mut xs = inputs(rng, len);
    xs.shuffle(rng);
    xs.truncate(len);
    xs
}

/// `xs` after `offset` poisoned elements.
fn at_offset(xs: &[f32], offset: usize) -> Vec<f32> {
    let mut v = poison(offset + xs.len());
    v[offset..].copy_from_slice(xs);
    v
}

/// `buffer[offset..offset + want.len()]` holds `want`'s bits, and every
/// element around that window still holds the poison.
fn assert_window(what: &str, xs: &[f32], buffer: &[f32], offset: usize, want: &[f32]) {
    let end = offset + want.len();
    assert_bits(what, xs, &buffer[offset..end], want);
    let guards = buffer[..offset].iter().chain(&buffer[end..]);
    assert!(guards.into_iter().all(|g| g.to_bits() == POISON_BITS), "{what}: wrote outside the output");
}

#[test]
fn every_variant_on_the_emulator_at_odd_lengths_and_offsets() {
    let mut rng = rng("emulator nested_sin");
    for len in LENGTHS {
        let xs = shuffled_inputs(&mut rng, len);
        for (in_off, out_off) in OFFSETS {
            let input = at_offset(&xs, in_off);
            for variant in Variant::ALL {
                let mut output = poison(out_off + len + GUARD);
                nested_sin::emu::launch(variant, &input[in_off..], &mut output[out_off..out_off + len]).unwrap();
                let want: Vec<f32> = xs.iter().map(|&x| host_expected(variant, x)).collect();
                let what = format!("{} len {len} offsets {in_off}/{out_off}", variant.name());
                assert_window(&what, &xs, &output, out_off, &want);
            }
        }
    }
}

/// `variant` under the checker and the counters, `xs` `in_off` floats into
/// the input and the result `out_off` floats into a poisoned output: no
/// finding in any launch, the expected bits, nothing written outside.
fn checked(variant: Variant, xs: &[f32], (in_off, out_off): (usize, usize)) -> Vec<Report> {
    let input = at_offset(xs, in_off);
    let mut output = poison(out_off + xs.len() + GUARD);
    let reports =
        nested_sin::emu::launches_checked(variant, &input[in_off..], &mut output[out_off..][..xs.len()]).unwrap();
    let what = format!("{} len {} offsets {in_off}/{out_off}", variant.name(), xs.len());
    assert_eq!(reports.len(), if xs.is_empty() { 0 } else { variant.launches() as usize }, "{what}: launches");
    for report in &reports {
        assert!(report.findings.is_empty(), "{what}: {:#?}", report.findings);
    }
    let want: Vec<f32> = xs.iter().map(|&x| host_expected(variant, x)).collect();
    assert_window(&what, xs, &output, out_off, &want);
    reports
}

/// The checked launcher at every offset, on nothing and on a head and tail
/// alone: no finding, the same bits as unchecked (the plain launcher's tests
/// run the checker at every length; the counters' test takes the long ones).
#[test]
fn every_variant_passes_the_checker_at_odd_lengths_and_offsets() {
    let mut rng = rng("checked nested_sin");
    for len in [0, 5] {
        let xs = shuffled_inputs(&mut rng, len);
        for offsets in OFFSETS {
            for variant in Variant::ALL {
                checked(variant, &xs, offsets);
            }
        }
    }
}

/// One launch over `len` floats, input and output `offsets` floats past
/// 16-byte alignment: the floats its scalar (head and tail) loops take, the
/// 16-byte vectors of its vector loop, and the sectors of a whole warp of
/// those (16, or 17 when the vectors start 16 bytes into a sector).
fn loops(len: usize, (in_off, out_off): (usize, usize)) -> (u64, u64, u64) {
    if in_off != out_off {
        return (len as u64, 0, 0);
    }
    let head = ((4 - in_off) % 4).min(len);
    let vectors = (len - head) / 4;
    let sectors = if (in_off + head) % 8 == 0 { 16 } else { 17 };
    ((len - 4 * vectors) as u64, vectors as u64, sectors)
}

/// (requests, bytes, sectors) of `op` over the lines that move `width` bytes a lane.
fn traffic(report: &Report, op: Op, width: u32) -> (u64, u64, u64) {
    let lines = report.counters.of(op).filter(|s| s.width == width);
    lines.fold((0, 0, 0), |(r, b, t), s| (r + s.tally.requests, b + s.tally.bytes, t + s.tally.transactions))
}

/// What each launch moves, from its loops: 4-byte accesses in the head and
/// tail (or everywhere, when input and output are off 16-byte alignment by
/// different amounts), 16-byte ones in between. A warp of 16-byte accesses
/// reads or writes 512 contiguous bytes: 16 sectors a request (17 after a
/// head of 3 floats, 16 bytes into a sector). One of 4-byte accesses, 128
/// bytes: 4 sectors, or 5 when it starts 4 bytes into a sector. Every
/// unfused launch after the first runs in place, on the output.
#[test]
fn every_variant_counts_the_sectors_of_its_loops() {
    let mut rng = rng("counted nested_sin");
    // (length, offsets, sectors per request of the first launch's scalar
    // loads and stores, where they are whole warps)
    let cases = [(4099, (0, 0), None), (4099, (1, 1), None), (4096, (1, 0), Some((5, 4)))];
    for (len, offsets, scalar_sectors) in cases {
        let xs = shuffled_inputs(&mut rng, len);
        for variant in Variant::ALL {
            for (launch, report) in checked(variant, &xs, offsets).iter().enumerate() {
                let what = format!("{} len {len} offsets {offsets:?} launch {launch}", variant.name());
                let at = if launch == 0 { offsets } else { (offsets.1, offsets.1) };
                let (scalars, vectors, sectors_per_vector_request) = loops(len, at);
                for (op, sectors) in
                    [(Op::GlobalLoad, scalar_sectors.map(|s| s.0)), (Op::GlobalStore, scalar_sectors.map(|s| s.1))]
                {
                    assert!(report.counters.of(op).all(|s| s.width == 4 || s.width == 16), "{what}: widths");
                    // 1024 vectors: 32 requests of whole warps.
                    let want = (vectors / 32, 16 * vectors, vectors / 32 * sectors_per_vector_request);
                    assert_eq!(traffic(report, op, 16), want, "{what}: {} vectors", op.name());
                    let (requests, bytes, transactions) = traffic(report, op, 4);
                    assert_eq!(bytes, 4 * scalars, "{what}: {} scalars", op.name());
                    if let Some(per) = sectors.filter(|_| launch == 0) {
                        assert_eq!(
                            (requests, transactions),
                            (scalars / 32, per * scalars / 32),
                            "{what}: {}",
                            op.name()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn in_place_equals_out_of_place_on_the_emulator() {
    let mut rng = rng("emulator nested_sin in place");
    let xs = inputs(&mut rng, 3000);
    for variant in Variant::ALL {
        let mut out = poison(xs.len());
        nested_sin::emu::launch(variant, &xs, &mut out).unwrap();
        // Offset 1 of a larger buffer: the scalar head in place too.
        let mut data = vec![0.0f32; xs.len() + 1];
        data[1..].copy_from_slice(&xs);
        nested_sin::emu::launch_in_place(variant, &mut data[1..]).unwrap();
        assert_bits(&format!("{} in place", variant.name()), &xs, &data[1..], &out);
    }
}

#[test]
fn mismatched_lengths_are_errors_and_empty_is_a_no_op() {
    let x = vec![1.0f32; 10];
    let mut short = vec![0.0f32; 9];
    for variant in Variant::ALL {
        let e = nested_sin::emu::launch(variant, &x, &mut short).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 10, actual: 9, .. }), "{e}");
        nested_sin::emu::launch(variant, &[], &mut []).unwrap();
        nested_sin::emu::launch_in_place(variant, &mut []).unwrap();
    }
}

/// The versions, their names and their PTX entries agree (one list).
#[test]
fn variant_registry_is_consistent() {
    let entries: Vec<&str> = Variant::ALL.iter().map(|v| v.entry_point()).collect();
    assert_eq!(entries, coalesce::kernels::nested_sin::ENTRIES);
    assert_eq!(Variant::ALL.iter().map(|v| v.launches()).sum::<u32>(), 4 + 4);
    for v in Variant::ALL {
        assert!(coalesce::PTX.contains(&format!(".entry {}(", v.entry_point())), "{}", v.name());
    }
}

/// The bounds hold for libdevice's algorithm itself (the port,
/// on the CPU, no GPU needed): one sine within 2 ulp of f64, four within
/// 3 eps; and the reason the four are not within 3 ulp.
#[test]
fn libdevice_sinf_port_meets_the_bounds_on_the_cpu() {
    let mut rng = rng("cpu port accuracy");
    let xs = inputs(&mut rng, 1 << 20);
    let one: Vec<f32> = par_map(&xs, libdevice_sinf_port);
    let one_ref: Vec<f64> = par_map(&xs, |x| (x as f64).sin());
    let four: Vec<f32> = par_map(&xs, port4);
    let four_ref: Vec<f64> = par_map(&xs, sin4_f64);
    let cr: Vec<f32> = par_map(&xs, correctly_rounded4);
    let w1 = worst(&xs, &one, &one_ref, |_| true);
    let w4 = worst(&xs, &four, &four_ref, |_| true);
    let e4 = worst_by(eps_error, &xs, &four, &four_ref, |_| true);
    let cr4 = worst(&xs, &cr, &four_ref, |_| true);
    println!(
        "port of __nv_sinf on the CPU, {} inputs: sin {:.3} ulp; sin^4 {:.3} ulp (at x = {:e}), {:.3} eps; \
         correctly rounded sin^4 {:.3} ulp",
        xs.len(),
        w1.ulp,
        w4.ulp,
        w4.x,
        e4.ulp,
        cr4.ulp
    );
    assert!(w1.ulp <= 2.0, "{w1:?}");
    assert!(e4.ulp <= 3.0, "{e4:?}");
    assert!(w4.ulp <= 4.5, "{w4:?}");
    let poly: Vec<f32> = par_map(&xs, poly4);
    let wp = worst(&xs, &poly, &four_ref, |_| true);
    println!("step 5 (poly) on the CPU: {:.3} ulp (at x = {:e})", wp.ulp, wp.x);
    assert!(wp.ulp <= POLY_MAX_ULP, "{wp:?}");
}

/// Step 5 on the emulator, against f64: odd lengths and offsets, poisoned
/// outputs with guards, special values mixed in; within its bound.
#[test]
fn poly_on_the_emulator_within_its_bound() {
    let mut rng = rng("emulator nested_sin poly");
    for (len, (in_off, out_off)) in [(9001, (1, 1)), (4099, (0, 0)), (2049, (3, 0))] {
        let xs = shuffled_inputs(&mut rng, len);
        let input = at_offset(&xs, in_off);
        let mut output = poison(out_off + len + GUARD);
        nested_sin::emu::launch(Variant::Poly, &input[in_off..], &mut output[out_off..out_off + len]).unwrap();
        let what = format!("poly len {len} offsets {in_off}/{out_off}");
        let want: Vec<f32> = xs.iter().map(|&x| poly4(x)).collect();
        assert_window(&what, &xs, &output, out_off, &want);
        let got = &output[out_off..out_off + len];
        let w = worst(&xs, got, &par_map(&xs, sin4_f64), |_| true);
        assert!(w.ulp <= POLY_MAX_ULP, "{what}: {w:?}");
    }
}

/// Runs `variant` on the GPU over `xs` and returns the output.
fn on_gpu(stream: &coalesce::Stream<'_>, variant: Variant, xs: &[f32]) -> Vec<f32> {
    let d_in = stream.gpu().upload(xs).unwrap();
    run_poisoned(stream, xs.len(), |out| nested_sin::launch(stream, variant, &d_in, out))
}

/// The accuracy bounds, measured on the GPU: 2^24 uniform inputs in
/// [-1e4, 1e4] plus the special values. Every figure is printed before any
/// bound is asserted, so one run reports them all.
#[test]
fn gpu_accuracy_of_every_variant_against_f64() {
    let Some(gpu) = gpu_or_skip("gpu nested_sin accuracy") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu nested_sin accuracy");
    let n = if under_sanitizer() { 1 << 12 } else { 1 << 24 };
    let xs = inputs(&mut rng, n);
    let one_ref: Vec<f64> = par_map(&xs, |x| (x as f64).sin());
    let four_ref: Vec<f64> = par_map(&xs, sin4_f64);
    let port: Vec<f32> = par_map(&xs, libdevice_sinf_port);
    let cr = par_map(&xs, correctly_rounded4);
    let (cr_ulp, cr_eps) =
        (worst(&xs, &cr, &four_ref, |_| true).ulp, worst_by(eps_error, &xs, &cr, &four_ref, |_| true).ulp);
    println!(
        "ACCURACY correctly rounded sin, four times (the best a four-launch form can do): {cr_ulp:.3} ulp, {cr_eps:.3} eps"
    );

    // One sine (step 1's kernel, one launch).
    let d_in = gpu.upload(&xs).unwrap();
    let one = run_poisoned(&stream, xs.len(), |out| nested_sin::sin(&stream, &d_in, out));
    let w_one = worst(&xs, &one, &one_ref, |_| true);
    let port_mismatch = first_bit_mismatch(&one, &port);
    println!(
        "ACCURACY sin: max {:.3} ulp at x = {:e} (got {:e}, f64 {:e}); GPU __nv_sinf vs host port: {}",
        w_one.ulp,
        w_one.x,
        w_one.got,
        w_one.want,
        port_mismatch.map_or("bit-identical".into(), |i| format!("first difference at x = {:e}", xs[i]))
    );

    let results: Vec<(Variant, Vec<f32>)> = Variant::ALL.iter().map(|&v| (v, on_gpu(&stream, v, &xs))).collect();
    let unfused = &results[0].1;
    let moderate = |x: f32| x.abs() <= 100.0 * std::f32::consts::PI;
    let mut summary = serde_json::Map::new();
    summary.insert("inputs".into(), xs.len().into());
    summary.insert("sin_max_ulp".into(), w_one.ulp.into());
    summary.insert("sin_port_bit_identical".into(), port_mismatch.is_none().into());
    summary.insert("correctly_rounded4_max_ulp".into(), cr_ulp.into());
    summary.insert("correctly_rounded4_max_eps".into(), cr_eps.into());
    for (variant, got) in &results {
        let w = worst(&xs, got, &four_ref, |_| true);
        let w_eps = worst_by(eps_error, &xs, got, &four_ref, |_| true);
        let w_moderate = worst(&xs, got, &four_ref, moderate);
        let differ = got.iter().zip(unfused).filter(|&(&a, &b)| f32_distance(a, b) != 0).count();
        let max_apart = got.iter().zip(unfused).map(|(&a, &b)| f32_distance(a, b)).max().unwrap_or(0);
        let abs_err = |keep: &dyn Fn(f32) -> bool| {
            xs.iter()
                .zip(got)
                .zip(&four_ref)
                .filter(|&((&x, _), r)| keep(x) && r.is_finite())
                .map(|((_, &g), &r)| (g as f64 - r).abs())
                .fold(0.0f64, |a, e| if e.is_nan() { f64::INFINITY } else { a.max(e) })
        };
        let (abs_all, abs_moderate) = (abs_err(&|_| true), abs_err(&moderate));
        println!(
            "ACCURACY {}: max {:.3} ulp at x = {:e} (got {:e}, f64 {:e}), {:.3} eps; |x| <= 100 pi: {:.3} ulp; \
             max abs error {:.3e} ({:.3e} for |x| <= 100 pi); vs unfused: {differ} of {} differ, at most {max_apart} ulp apart",
            variant.name(),
            w.ulp,
            w.x,
            w.got,
            w.want,
            w_eps.ulp,
            w_moderate.ulp,
            abs_all,
            abs_moderate,
            xs.len(),
        );
        let mut row = serde_json::Map::new();
        row.insert("max_ulp".into(), w.ulp.into());
        row.insert("max_eps".into(), w_eps.ulp.into());
        row.insert("worst_x".into(), (w.x as f64).into());
        row.insert("max_ulp_moderate".into(), w_moderate.ulp.into());
        row.insert("max_abs".into(), abs_all.into());
        row.insert("max_abs_moderate".into(), abs_moderate.into());
        row.insert("differ_from_unfused".into(), differ.into());
        row.insert("max_ulp_from_unfused".into(), (max_apart.min(u32::MAX as u64)).into());
        summary.insert(variant.name().into(), row.into());
    }
    println!("ACCURACY_JSON {}", serde_json::Value::Object(summary));

    // The bounds, after everything is printed.
    assert!(w_one.ulp <= 2.0, "sin: {w_one:?}");
    assert!(port_mismatch.is_none(), "the host port of __nv_sinf differs from the GPU");
    for (variant, got) in &results {
        assert!(got.iter().all(|g| g.to_bits() != POISON_BITS), "{}: unwritten output", variant.name());
        if *variant == Variant::Poly {
            let w = worst(&xs, got, &four_ref, |_| true);
            assert!(w.ulp <= POLY_MAX_ULP, "poly: {w:?} (ulp)");
            assert_bits("poly vs the host", &xs, got, &par_map(&xs, poly4));
        } else if *variant != Variant::Fast {
            let w = worst_by(eps_error, &xs, got, &four_ref, |_| true);
            assert!(w.ulp <= 3.0, "{}: {w:?} (eps)", variant.name());
            let w = worst(&xs, got, &four_ref, |_| true);
            assert!(w.ulp <= 4.5, "{}: {w:?} (ulp)", variant.name());
            let apart = got.iter().zip(unfused).map(|(&a, &b)| f32_distance(a, b)).max().unwrap();
            assert!(apart <= 1, "{}: {apart} ulp from unfused", variant.name());
            assert_bits(&format!("{} vs the host port", variant.name()), &xs, got, &par_map(&xs, port4));
        }
    }
    // fast: an absolute bound only, growing with |x| (the SFU's own range
    // reduction), with room above the error the GPU gives (docs/nested_sin.md,
    // "Accuracy").
    let fast = &results.iter().find(|(v, _)| *v == Variant::Fast).unwrap().1;
    let fast_abs = xs
        .iter()
        .zip(fast)
        .zip(&four_ref)
        .filter(|&((&x, _), _)| moderate(x))
        .map(|((_, &g), &r)| (g as f64 - r).abs())
        .fold(0.0f64, f64::max);
    assert!(fast_abs <= 1e-4, "fast: abs error {fast_abs:e} for |x| <= 100 pi");
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
