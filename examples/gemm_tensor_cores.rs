//! The tensor-core GEMM steps beside the best FP32 one, timed with CUDA
//! events, each output checked first: poisoned (NaN) before the launch,
//! every element written, 4096 sampled elements within the step's error
//! bound of an f64 reference.
//!
//! ```sh
//! cargo run --release --example gemm_tensor_cores -- [SIZES] [REPS] [DUMP_DIR] [STEPS]
//! ```
//!
//! `SIZES` (default `4096,8192`) are square `M = N = K`; `REPS` (default 30)
//! timed launches after at least 5 untimed and [`coalesce::SUSTAIN_MS`] of
//! them; `DUMP_DIR`, when given, receives `A`, `B` and each step's `C` as
//! raw little-endian f32 (`a_4096.bin`,
//! `c_wgmma_4096.bin`, ...), which `scripts/gpu/peers gemm-tc` compares
//! with cuBLAS against an f64 product on the GPU; `STEPS` (default: the
//! best FP32 step, `double_buffered`, and every tensor-core step) names
//! the steps. Prints one line per step and size: median, min and max ms,
//! TFLOP/s; and its median as a `TIMING` line (JSON) for the run file.

use coalesce::gemm::{self, AlphaBeta, GemmShape, Variant};
use rand::{Rng, SeedableRng};
use std::io::Write;

fn main() -> coalesce::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> =
        args.first().map_or("4096,8192", String::as_str).split(',').filter_map(|s| s.parse().ok()).collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(30);
    let dump = args.get(2).filter(|s| !s.is_empty()).map(std::path::PathBuf::from);
    let steps: Vec<Variant> = match args.get(3) {
        Some(names) => {
            names.split(',').filter_map(|name| Variant::ALL.into_iter().find(|v| v.name() == name)).collect()
        }
        None => std::iter::once(Variant::BEST)
            .chain(Variant::ALL.into_iter().filter(|v| v.geometry().precision != gemm::Precision::Fp32))
            .collect(),
    };
    let gpu = coalesce::init()?;
    println!("{} (compute capability {:?}), module {:?}", gpu.name(), gpu.compute_capability(), gpu.module_name());
    let stream = gpu.stream()?;
    let mut failed = false;
    for n in sizes {
        let shape = GemmShape::new(n, n, n)?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
        let mut uniform = || -> Vec<f32> { (0..n * n).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
        let (ha, hb) = (uniform(), uniform());
        if let Some(dir) = &dump {
            write_f32(&dir.join(format!("a_{n}.bin")), &ha);
            write_f32(&dir.join(format!("b_{n}.bin")), &hb);
        }
        let (a, b) = (gpu.upload(&ha)?, gpu.upload(&hb)?);
        let poison = vec![f32::NAN; n * n];
        for &v in &steps {
            let mut c = gpu.upload(&poison)?;
            if let Err(e) = gemm::launch(&stream, v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT) {
                println!("{:>16} {n}^3: {e}", v.name());
                continue;
            }
            stream.synchronize()?;
            let mut got = vec![0.0f32; n * n];
            stream.download(&c, &mut got)?;
            let unwritten = got.iter().filter(|x| !x.is_finite()).count();
            let (worst, bad) = spot_check(v, &ha, &hb, n, &got);
            if unwritten > 0 || bad > 0 {
                failed = true;
                println!(
                    "{:>16} {n}^3: WRONG: {unwritten} elements unwritten, {bad} of 4096 samples outside the bound",
                    v.name()
                );
            }
            if let Some(dir) = &dump {
                write_f32(&dir.join(format!("c_{}_{n}.bin", v.name())), &got);
            }
            let t = coalesce::time_sustained(&stream, 5, coalesce::SUSTAIN_MS, reps, || {
                gemm::launch(&stream, v, &a, &b, &mut c, shape, AlphaBeta::PRODUCT)
            })?;
            let (med, lo, hi) = (t.median_ms(), t.quantile_ms(0.0), t.quantile_ms(1.0));
            println!(
                "{:>16} {n}^3: median {med:.4} ms (min {lo:.4}, max {hi:.4}, {reps} reps) {:.1} TFLOP/s; \
                 spot check max |err|/bound {worst:.2e}",
                v.name(),
                shape.flops() as f64 / (med * 1e-3) / 1e12
            );
            // The same median as a run file's timing (scripts/gpu/runfile.py reads TIMING lines).
            let timing = serde_json::json!({
                "source": "gemm_tensor_cores", "op": "gemm", "kernel": v.name(), "shape": format!("{n}x{n}x{n}"),
                "statistic": "median", "ms": med, "reps": reps, "flops": shape.flops(),
            });
            println!("TIMING {timing}");
        }
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

/// 4096 sampled elements against f64: the largest `|err| / bound` and how
/// many exceed the bound (`Variant::error_bound` times the sum of `|a b|`,
/// or of the operands' peaks for Ozaki: `Variant::error_scale`, as
/// tests/gemm/reference.rs).
fn spot_check(v: Variant, a: &[f32], b: &[f32], n: usize, got: &[f32]) -> (f64, usize) {
    let factor = v.error_bound(n);
    let (mut worst, mut bad) = (0.0f64, 0);
    for t in 0..4096usize {
        let (i, j) = ((t * 977 + 13) % n, (t * 3571 + 7) % n);
        let (row, column) = (a[i * n..][..n].iter().copied(), (0..n).map(|p| b[p * n + j]));
        let dot: f64 = row.clone().zip(column.clone()).map(|(x, y)| x as f64 * y as f64).sum();
        let err = (got[i * n + j] as f64 - dot).abs();
        let bound = factor * v.error_scale(row, column);
        if err > bound || err.is_nan() {
            bad += 1;
        }
        worst = worst.max(err / bound);
    }
    (worst, bad)
}

fn write_f32(path: &std::path::Path, data: &[f32]) {
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut f = std::fs::File::create(path).expect("creating a dump file");
    f.write_all(&bytes).expect("writing a dump file");
}
