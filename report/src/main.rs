//! The roofline report, README's first command: measures the GPU's roofs
//! (the copy, the FP32 FMA peak, and the TF32 tensor-core peak where the
//! module has `sm_90a`), runs every kernel at its standard sizes (each validated first),
//! prints a table, and writes `report.json` and `roofline.svg`.
//!
//!     cargo run --release                          # everything, default sizes
//!     cargo run --release -- --ops transpose --shapes 4096,8192x2048 --reps 20
//!     cargo run --release -- --peers torch_peers.json   # PyTorch columns
//!     cargo run --release -- --emulate             # no GPU: the CPU emulator
//!     cargo run --release -- --emulate --counters  # sectors and bank conflicts, counted on the CPU
//!     cargo run --release -- --emulate --pictures pictures   # ... and drawn, as SVG

mod report;

use anyhow::{Context as _, Result};
use clap::Parser;
#[cfg(feature = "cuda")]
use coalesce::Error;
use report::Report;
use std::path::PathBuf;
use std::process::ExitCode;
#[cfg(feature = "cuda")]
use {
    indicatif::{ProgressBar, ProgressStyle},
    report::gpu::Ctx,
};

/// Ops the report knows, in the order it runs them.
const OPS: &[&str] = &["transpose", "nested_sin", "softmax", "gemm"];

#[derive(Parser, Debug)]
#[command(version, about = "Time coalesce's GPU kernels against the measured roofline")]
struct Args {
    /// Ops to run (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = OPS.iter().map(|s| s.to_string()), conflicts_with_all = NOT_MEASURED)]
    ops: Vec<String>,
    /// Transpose shapes: ROWSxCOLS, or N for NxN.
    #[arg(long, value_delimiter = ',', default_value = "8192,16384", value_parser = parse_shape, conflicts_with_all = NOT_MEASURED)]
    shapes: Vec<(usize, usize)>,
    /// Timed repetitions per kernel, at most (the median is reported): slow
    /// kernels take about a second's worth, and every kernel at least 5.
    #[arg(long, default_value_t = 50, value_parser = parse_reps, conflicts_with_all = NOT_MEASURED)]
    reps: usize,
    /// Untimed warm-up repetitions per kernel.
    #[arg(long, default_value_t = 5, conflicts_with_all = NOT_MEASURED)]
    warmup: usize,
    /// Untimed warm-up time per kernel in ms, whichever of the two is
    /// longer: a GEMM on the tensor cores reaches the GPU's power limit
    /// within about 200 ms, and its clock falls until then, so each kernel
    /// is timed at its sustained clock, as scripts/gpu/peers times PyTorch.
    #[arg(long, default_value_t = coalesce::SUSTAIN_MS, value_parser = parse_ms, conflicts_with_all = NOT_MEASURED)]
    warmup_ms: f64,
    /// Folder for report.json and roofline.svg.
    #[arg(long, default_value = "report")]
    out: PathBuf,
    /// torch_peers.json from scripts/gpu/peers report on the same GPU:
    /// adds PyTorch columns, ratios and points.
    #[arg(long)]
    peers: Option<PathBuf>,
    /// Run the kernels on the CPU emulator at small sizes (no GPU needed;
    /// times are not meaningful).
    #[arg(long)]
    emulate: bool,
    /// With --emulate: print the memory counters (sectors per global
    /// request, shared-memory wavefronts per request) of every kernel,
    /// counted by the emulator, instead of the report: the copy and the
    /// transposes at this shape (ROWSxCOLS or N; 256x256 when no shape is
    /// given), the other ops at small fixed shapes.
    #[arg(long, num_args = 0..=1, default_missing_value = "256x256", value_parser = parse_shape, value_name = "SHAPE")]
    counters: Option<(usize, usize)>,
    /// With --counters: also write the counters as JSON to this file (what
    /// the doc generators read).
    #[arg(long, value_name = "FILE", requires = "counters", conflicts_with = "pictures")]
    counters_json: Option<PathBuf>,
    /// With --emulate: draw what the counters count, from the emulator's
    /// trace, as SVG files in DIR: one warp's request at every line that
    /// accesses memory (lanes against sectors or banks) and a summary per
    /// kernel, for the copy, the transposes, softmax and GEMM steps 2-7.
    #[arg(long, value_name = "DIR")]
    pictures: Option<PathBuf>,
    /// Re-print and re-draw a report.json from an earlier run instead of
    /// measuring (for docs; with --peers to add PyTorch).
    #[arg(long)]
    from: Option<PathBuf>,
}

/// The options that choose what the GPU measures and how: neither the
/// emulator's fixed small shapes (`--emulate`) nor a report read back
/// (`--from`) takes them.
const NOT_MEASURED: [&str; 2] = ["emulate", "from"];

fn parse_reps(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 5 => Ok(n),
        Ok(n) => Err(format!("{n}: the report times every kernel at least 5 times")),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

fn parse_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms >= 0.0 => Ok(ms),
        Ok(ms) => Err(format!("{ms}: a warm-up is a finite number of ms, 0 or more")),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

fn parse_shape(s: &str) -> Result<(usize, usize), String> {
    // A report times work: an empty matrix, a no-op for the launchers, has
    // no bandwidth to report.
    let dim = |d: &str| match d.trim().parse::<usize>() {
        Ok(0) => Err(format!("{d:?}: a timed shape needs at least one row and one column")),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{d:?}: {e}")),
    };
    match s.split_once(['x', 'X']) {
        Some((r, c)) => Ok((dim(r)?, dim(c)?)),
        None => dim(s).map(|n| (n, n)),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(bad) = args.ops.iter().find(|o| !OPS.contains(&o.as_str())) {
        eprintln!("error: unknown op {bad:?}; known: {}", OPS.join(", "));
        return ExitCode::from(2);
    }
    if let Some(dir) = &args.pictures {
        if !args.emulate {
            eprintln!("error: --pictures draws what the CPU emulator counts: add --emulate");
            return ExitCode::from(2);
        }
        let (rows, cols) = args.counters.unwrap_or((256, 256));
        let drawn = report::pictures::draw(dir, rows, cols);
        return match drawn {
            Ok(files) => {
                println!("wrote {} pictures in {}", files.len(), dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some((rows, cols)) = args.counters {
        if !args.emulate {
            eprintln!("error: --counters counts on the CPU emulator: add --emulate");
            return ExitCode::from(2);
        }
        let counted = report::counters::collect(rows, cols).and_then(|all| {
            if let Some(path) = &args.counters_json {
                let text = serde_json::to_string_pretty(&report::counters::json(&all))?;
                std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
            }
            report::counters::table(&all)
        });
        return match counted {
            Ok(table) => {
                print!("{table}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let result = if let Some(path) = &args.from {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|t| serde_json::from_str::<Report>(&t).context("parsing the report"))
            .and_then(|r| r.check().map(|()| r).with_context(|| format!("checking {}", path.display())))
    } else if args.emulate {
        report::emulate::run()
    } else {
        #[cfg(not(feature = "cuda"))]
        {
            eprintln!(
                "error: this build has no GPU side (built without the `cuda` feature).\n\
                 `--emulate` runs every kernel on the CPU emulator; for the GPU report, build with the\n\
                 default features on a machine with CUDA's driver library: `cargo run --release`."
            );
            return ExitCode::from(2);
        }
        #[cfg(feature = "cuda")]
        let gpu = match coalesce::init() {
            Ok(gpu) => gpu,
            Err(Error::NoDevice { reason }) => {
                eprintln!(
                    "error: no CUDA device available ({}).\n\
                     This report times kernels on an NVIDIA GPU; run it on a machine with one and its driver.\n\
                     Without a GPU: `cargo run --release -- --emulate` runs every kernel on the CPU emulator,\n\
                     and `cargo test --workspace` tests them all.",
                    reason
                );
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("error: CUDA initialisation failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        #[cfg(feature = "cuda")]
        measure(&gpu, &args)
    };
    match result.and_then(|mut r| finish(&mut r, &args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "cuda")]
fn measure(gpu: &coalesce::Gpu, args: &Args) -> Result<Report> {
    let mut ctx = Ctx::new(gpu, (args.warmup, args.warmup_ms), args.reps)?;
    let wants = |op: &str| args.ops.iter().any(|o| o == op);
    let total = 3
        + if wants("transpose") { report::gpu::transpose_count(gpu, &args.shapes) } else { 0 }
        + if wants("nested_sin") { report::gpu::nested_sin_count() } else { 0 }
        + if wants("softmax") { report::gpu::softmax_count() } else { 0 }
        + if wants("gemm") { report::gpu::gemm_count() } else { 0 };
    ctx.progress = ProgressBar::new(total)
        .with_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("static template"));
    let (roofs, mut rows) = report::gpu::roofs(&mut ctx)?;
    if wants("transpose") {
        rows.extend(report::gpu::transpose(&mut ctx, &args.shapes)?);
    }
    if wants("nested_sin") {
        rows.extend(report::gpu::nested_sin(&mut ctx)?);
    }
    if wants("softmax") {
        rows.extend(report::gpu::softmax(&mut ctx)?);
    }
    if wants("gemm") {
        rows.extend(report::gpu::gemm(&mut ctx)?);
    }
    ctx.progress.finish_and_clear();
    rows.iter_mut().for_each(|r| r.finish(&roofs));
    Ok(Report {
        gpu: gpu.name().into(),
        sm_count: gpu.sm_count(),
        ptx_arch: gpu.module_name().unwrap_or(coalesce::CUDA_ARCH).into(),
        emulated: false,
        warmup_ms: Some(args.warmup_ms),
        warmup_reps: Some(args.warmup),
        roofs,
        rows,
        peers_file: None,
    })
}

fn finish(report: &mut Report, args: &Args) -> Result<()> {
    if let Some(path) = &args.peers {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let peers = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        report::merge_peers(&mut report.rows, &peers);
        report.peers_file = Some(path.display().to_string());
    }
    report::print_table(report);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let json = args.out.join("report.json");
    std::fs::write(&json, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let svg = args.out.join("roofline.svg");
    if !report.emulated {
        report::plot::write(report, &svg)?;
    }
    println!(
        "\nwrote {}{}",
        json.display(),
        if report.emulated { String::new() } else { format!(" and {}", svg.display()) }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Args;
    use clap::Parser;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("coalesce").chain(line.split_whitespace()))
    }

    /// What the emulator or a report read back does not use is refused with
    /// them, and timing values that cannot time are refused.
    #[test]
    fn options_that_would_be_ignored_or_cannot_time_are_errors() {
        for line in [
            "--emulate --ops gemm",
            "--emulate --shapes 64",
            "--emulate --reps 9",
            "--emulate --warmup 1",
            "--emulate --warmup-ms 10",
            "--from r.json --ops gemm",
            "--from r.json --reps 9",
            "--reps 0",
            "--reps 4",
            "--warmup-ms NaN",
            "--warmup-ms=-1",
            "--warmup-ms inf",
            "--counters-json c.json",
            "--emulate --counters-json c.json",
            "--emulate --pictures p --counters-json c.json --counters",
        ] {
            assert!(parse(line).is_err(), "{line:?} parsed");
        }
        for line in ["", "--emulate", "--emulate --counters --counters-json c.json", "--from r.json", "--reps 5"] {
            parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        }
        let a = parse("--warmup-ms 0 --reps 7 --ops gemm").unwrap();
        assert_eq!((a.warmup_ms, a.reps, a.ops), (0.0, 7, vec!["gemm".to_string()]));
    }
}
