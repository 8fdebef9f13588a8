//! `gemm::sgemm` and step 7 (`double_buffered`) on special inputs (inf,
//! NaN with a payload only in the low 13 bits, `FLT_MAX`, subnormals) at a
//! shape off the tile, and on the input classes FP32 accuracy is judged on:
//! uniform, log-spread magnitudes, operands scaled by `1e-17` and `1e17`,
//! subnormal rows, near-`FLT_MAX` rows, and a deep `K` of 100,000.
//! Prints, per input pattern, each output's pattern
//! (NaN, +inf, -inf, finite), how many elements differ from an FP32 FMA
//! GEMM's non-finite pattern, and the largest error of the finite ones
//! against the exact result over `sum |a b|`.
//!
//! `cargo run --release --example gemm_specials -- DIR` also writes each
//! case's inputs and references to `DIR` for
//! `scripts/gpu/peers gemm-specials`, which adds cuBLAS SGEMM's column.

mod accuracy;

use accuracy::{Case, K, M, N, accuracy_classes, references};
use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Write;

/// `NaN/+inf/-inf/finite` counts, elements off FP32's pattern, largest
/// finite error over its magnitude: as printed, and as JSON.
fn summary(got: &[f32], fp32: &[f32], want: &[f64], mag: &[f64]) -> (String, serde_json::Value) {
    let (mut nan, mut pinf, mut ninf, mut fin, mut off, mut err) = (0, 0, 0, 0, 0, 0f64);
    for (((&g, &f), &w), &m) in got.iter().zip(fp32).zip(want).zip(mag) {
        match g {
            g if g.is_nan() => nan += 1,
            g if g == f32::INFINITY => pinf += 1,
            g if g == f32::NEG_INFINITY => ninf += 1,
            _ => fin += 1,
        }
        let same = if f.is_nan() {
            g.is_nan()
        } else if f.is_infinite() {
            g == f
        } else {
            g.is_finite()
        };
        off += !same as usize;
        if f.is_finite() && g.is_finite() && m > 0.0 {
            err = err.max((g as f64 - w).abs() / m);
        }
    }
    let json = serde_json::json!({"nan": nan, "pos_inf": pinf, "neg_inf": ninf, "finite": fin, "off": off, "err": err});
    (format!("{nan}/{pinf}/{ninf}/{fin} off {off} err {err:.1e}"), json)
}

fn cases() -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(23);
    let mut uni =
        |len: usize, scale: f32| -> Vec<f32> { (0..len).map(|_| scale * rng.random_range(-1.0f32..1.0)).collect() };
    let (inf, low_nan) = (f32::INFINITY, f32::from_bits(0x7f80_0001));
    let base = |name, s, a: &[f32], b: &[f32], c0: &[f32]| Case {
        name,
        dims: (M, N, K),
        s,
        a: a.to_vec(),
        b: b.to_vec(),
        c0: c0.to_vec(),
    };
    let (a, b, c0) = (uni(M * K, 1.0), uni(K * N, 1.0), uni(M * N, 1.0));
    let (ah, bh) = (uni(M * K, 0.5), uni(K * N, 0.5));
    let p = AlphaBeta::PRODUCT;
    let mut out = vec![base("finite, uniform(-1,1)", p, &a, &b, &c0)];
    let mut c = base("+inf in A[1][5], B[5][100] = 0", p, &a, &b, &c0);
    (c.a[K + 5], c.b[5 * N + 100]) = (inf, 0.0);
    out.push(c);
    let mut c = base("-inf in B[7][1000] (edge column)", p, &a, &b, &c0);
    c.b[7 * N + 1000] = -inf;
    out.push(c);
    let mut c = base("NaN 0x7f800001 in A[999][0] (edge row)", p, &a, &b, &c0);
    c.a[999 * K] = low_nan;
    out.push(c);
    let mut c = base("NaN 0x7f800001 in B[1002][3]", p, &a, &b, &c0);
    c.b[1002 * N + 3] = low_nan;
    out.push(c);
    let mut c = base("+inf A[60][2], -inf A[60][3]", p, &a, &b, &c0);
    (c.a[60 * K + 2], c.a[60 * K + 3]) = (inf, -inf);
    out.push(c);
    let mut c = base("+inf A[1][5], C0 +-inf/NaN, beta -0.75", AlphaBeta::new(1.5, -0.75), &a, &b, &c0);
    c.a[K + 5] = inf;
    (c.c0[N + 10], c.c0[2 * N + 11], c.c0[500 * N + 200], c.c0[N + 11]) = (inf, -inf, low_nan, -inf);
    out.push(c);
    let mut c = base("FLT_MAX in A and B, the rest (-0.5,0.5)", p, &ah, &bh, &c0);
    (c.a[3 * K + 1], c.a[999 * K + 2], c.a[66 * K + 3]) = (f32::MAX, -f32::MAX, f32::from_bits(0x7f7f_f000));
    (c.b[1000], c.b[(K / 2) * N + 7], c.b[(K - 1) * N + 128]) = (f32::MAX, -f32::MAX, -f32::MAX);
    out.push(c);
    let mut c = base("subnormal row of A x 2^60 column of B", p, &a, &b, &c0);
    for p in 0..K {
        c.a[11 * K + p] = f32::from_bits(((p as u32 * 2_654_435_761) & 0x7f_ffff).max(1) | ((p as u32 & 1) << 31));
        c.b[p * N + 17] *= f32::powi(2.0, 60);
        c.a[13 * K + p] *= f32::powi(2.0, -116);
    }
    out.push(c);
    out.extend(accuracy_classes());
    out
}

fn write(dir: &std::path::Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    std::fs::File::create(dir.join(name))?.write_all(data)
}

fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain f32/f64 values, read as their bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }.to_vec()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from);
    let gpu = coalesce::init()?;
    let stream = gpu.stream()?;
    let shape = GemmShape::new(M, N, K)?;
    println!(
        "{} ({M}x{N}x{K} where the name gives no shape); sgemm runs {}",
        gpu.name(),
        gemm::sgemm_variant(&gpu, shape).name()
    );
    // The run file's `specials` (scripts/gpu/peers gemm-specials adds cuBLAS's column to these VALUE lines).
    let run =
        serde_json::json!({"shape": format!("{M}x{N}x{K}"), "sgemm_runs": gemm::sgemm_variant(&gpu, shape).name()});
    println!("VALUE specials_run {run}");
    println!(
        "outputs: NaN/+inf/-inf/finite, elements off FP32's non-finite pattern, max |c - exact| / sum|ab| of the finite ones"
    );
    println!("{:<44} {:<20} {:<44} {:<44}", "input", "FP32 FMA reference", "sgemm", "double_buffered (step 7)");
    for (i, c) in cases().iter().enumerate() {
        let (fp32, want, mag) = references(c);
        let shape = GemmShape::new(c.dims.0, c.dims.1, c.dims.2)?;
        let (a, b) = (gpu.upload(&c.a)?, gpu.upload(&c.b)?);
        let mut out = gpu.upload(&c.c0)?;
        gemm::sgemm(&stream, &a, &b, &mut out, shape, c.s)?;
        stream.synchronize()?;
        let mut ours = vec![0f32; shape.c().len()];
        stream.download(&out, &mut ours)?;
        let mut out = gpu.upload(&c.c0)?;
        gemm::launch(&stream, Variant::DoubleBuffered, &a, &b, &mut out, shape, c.s)?;
        stream.synchronize()?;
        let mut db = vec![0f32; shape.c().len()];
        stream.download(&out, &mut db)?;
        let (r, mut reference) = summary(&fp32, &fp32, &want, &mag);
        let ((s, sgemm), (d, double_buffered)) = (summary(&ours, &fp32, &want, &mag), summary(&db, &fp32, &want, &mag));
        println!("{:<44} {:<20} {:<44} {:<44}", c.name, r.split(" off").next().unwrap_or(""), s, d);
        if let Some(counts) = reference.as_object_mut() {
            counts.retain(|k, _| k != "off" && k != "err");
        }
        let row = serde_json::json!({"input": c.name, "reference": reference, "sgemm": sgemm, "double_buffered": double_buffered});
        println!("VALUE[] specials_rows {row}");
        if let Some(dir) = &dir {
            let d = dir.join(format!("case{i}"));
            std::fs::create_dir_all(&d)?;
            let (m, n, k) = c.dims;
            write(&d, "meta.txt", format!("{}\n{} {}\n{m} {n} {k}\n", c.name, c.s.alpha, c.s.beta).as_bytes())?;
            for (name, v) in [("a", &c.a), ("b", &c.b), ("c0", &c.c0), ("fp32", &fp32)] {
                write(&d, &format!("{name}.f32"), &bytes(v))?;
            }
            write(&d, "want.f64", &bytes(&want))?;
            write(&d, "mag.f64", &bytes(&mag))?;
        }
    }
    Ok(())
}
