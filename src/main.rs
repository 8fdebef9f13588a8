//! The roofline report: times every kernel on the GPU and compares it with
//! the roof that binds it. Today: the transpose ladder against a measured
//! device-to-device copy of the same bytes.

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use coalesce::transpose::Variant;
use coalesce::{Error, Gpu, MatrixShape, Timing, time_on_stream, transpose};
use cust::memory::CopyDestination;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(version, about = "Time coalesce's GPU kernels against the measured bandwidth roof")]
struct Args {
    /// Matrix shapes to transpose: ROWSxCOLS, or N for NxN; comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8192", value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
    /// Timed repetitions per kernel (the median is reported).
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// Untimed warm-up repetitions per kernel.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Write every figure as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Serialize)]
struct Row {
    kernel: String,
    rows: usize,
    cols: usize,
    bytes: u64,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    reps: usize,
    gb_per_s: f64,
    percent_of_copy: f64,
}

#[derive(Serialize)]
struct Report {
    gpu: String,
    sm_count: u32,
    ptx_arch: &'static str,
    rows: Vec<Row>,
}

fn parse_shape(s: &str) -> Result<(usize, usize), String> {
    let dim = |d: &str| d.trim().parse::<usize>().map_err(|e| format!("{d:?}: {e}"));
    match s.split_once(['x', 'X']) {
        Some((r, c)) => Ok((dim(r)?, dim(c)?)),
        None => dim(s).map(|n| (n, n)),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let gpu = match coalesce::init() {
        Ok(gpu) => gpu,
        Err(Error::NoDevice { reason }) => {
            eprintln!(
                "error: no CUDA device available ({reason}).\n\
                 This report times kernels on an NVIDIA GPU; run it on a machine with one and its driver.\n\
                 Without a GPU, `cargo test` runs every kernel on the CPU emulator."
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: CUDA initialisation failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&gpu, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(gpu: &Gpu, args: &Args) -> Result<()> {
    println!("GPU: {} ({} SMs), PTX built for {}", gpu.name(), gpu.sm_count(), coalesce::CUDA_ARCH);
    println!(
        "median of {} timed runs after {} warm-up runs, CUDA events; GB/s = bytes read + written / time",
        args.reps, args.warmup
    );
    let stream = gpu.stream()?;
    let mut rng = StdRng::from_os_rng();
    let mut report =
        Report { gpu: gpu.name().into(), sm_count: gpu.sm_count(), ptx_arch: coalesce::CUDA_ARCH, rows: vec![] };
    for &(rows, cols) in &args.shapes {
        let shape = MatrixShape::new(rows, cols)?;
        let bytes = 2 * shape.len() as u64 * 4;
        let host: Vec<f32> = (0..shape.len()).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let input = gpu.upload(&host)?;
        let mut output = gpu.alloc::<f32>(shape.len())?;

        println!("\ntranspose {shape} f32 ({:.0} MiB read + written per run)", bytes as f64 / (1 << 20) as f64);
        println!("{:<14} {:>10} {:>9} {:>10}", "kernel", "median ms", "GB/s", "% of copy");
        let copy = time_on_stream(&stream, args.warmup, args.reps, || stream.copy(&input, &mut output))?;
        let roof = copy.gb_per_s(bytes);
        let mut push = |name: &str, t: &Timing| {
            let gbs = t.gb_per_s(bytes);
            println!("{:<14} {:>10.4} {:>9.0} {:>9.1}%", name, t.median_ms(), gbs, 100.0 * gbs / roof);
            report.rows.push(Row {
                kernel: name.into(),
                rows,
                cols,
                bytes,
                median_ms: t.median_ms(),
                min_ms: t.quantile_ms(0.0),
                max_ms: t.quantile_ms(1.0),
                reps: t.samples_ms().len(),
                gb_per_s: gbs,
                percent_of_copy: 100.0 * gbs / roof,
            });
        };
        push("cuMemcpyDtoD", &copy);
        let copy_kernel =
            time_on_stream(&stream, args.warmup, args.reps, || coalesce::copy::copy(&stream, &input, &mut output))?;
        push("copy kernel", &copy_kernel);
        for variant in Variant::ALL {
            validate(gpu, &stream, variant, &input, &mut output, shape, &host)?;
            let t = time_on_stream(&stream, args.warmup, args.reps, || {
                transpose::launch(&stream, variant, &input, &mut output, shape)
            })?;
            push(variant.name(), &t);
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Correct before fast: poison the output, run once, compare every element.
fn validate(
    gpu: &Gpu,
    stream: &coalesce::Stream<'_>,
    variant: Variant,
    input: &cust::memory::DeviceBuffer<f32>,
    output: &mut cust::memory::DeviceBuffer<f32>,
    shape: MatrixShape,
    host: &[f32],
) -> Result<()> {
    output.copy_from(&vec![f32::NAN; shape.len()][..])?;
    transpose::launch(stream, variant, input, output, shape)?;
    stream.synchronize()?;
    let mut got = vec![0.0f32; shape.len()];
    output.copy_to(&mut got[..])?;
    let (rows, cols) = (shape.rows(), shape.cols());
    for r in 0..rows {
        for c in 0..cols {
            if got[c * rows + r].to_bits() != host[r * cols + c].to_bits() {
                bail!("{} on {shape} is wrong at output[{c}][{r}] on {}", variant.name(), gpu.name());
            }
        }
    }
    Ok(())
}
