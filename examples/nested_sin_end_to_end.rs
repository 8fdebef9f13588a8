//! When does the GPU win once the data has to travel? The nested sine on
//! 2^16..2^28 floats: host to device copy + the fused kernel + device to
//! host copy, from pinned memory, against the same computation on every
//! CPU core.
//!
//!     cargo run --release --example nested_sin_end_to_end -- [--json FILE]
//!
//! GPU side, per size: the input in pinned (page-locked) host memory,
//! `cuMemcpyHtoDAsync`, [`nested_sin::fused_reduced`] in place,
//! `cuMemcpyDtoHAsync`, `synchronize`, timed on the host clock (what a
//! caller waits), with CUDA events between the three steps for the
//! breakdown. CPU side: `sin(sin(sin(sin(x))))` with `f32::sin` (glibc's
//! `sinf`) over the same array, split across all cores with rayon. Both
//! report the median of several repetitions.
//!
//! `--profile` instead runs each nested-sin kernel once at 2^28 (for `ncu`).

use clap::Parser;
use coalesce::nested_sin::{self, Variant};
use coalesce::{Result, Stream, copy};
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
use rayon::prelude::*;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Nested sine: GPU with transfers against all CPU cores, 2^16..2^28 floats")]
struct Args {
    /// Smallest size, as a power of two.
    #[arg(long, default_value_t = 16)]
    min_log2: u32,
    /// Largest size, as a power of two.
    #[arg(long, default_value_t = 28)]
    max_log2: u32,
    /// Time spent per size and side, at least 3 repetitions each (ms).
    #[arg(long, default_value_t = 400)]
    budget_ms: u64,
    /// Also write the table as JSON here (with the run file's `values` and
    /// `timings`, which scripts/gpu/runfile.py reads).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Run every nested-sin kernel once at 2^28 and exit (for ncu).
    #[arg(long)]
    profile: bool,
}

/// One size's figures (milliseconds).
#[derive(serde::Serialize)]
struct Row {
    log2: u32,
    elements: usize,
    mbytes: f64,
    h2d_ms: f64,
    kernel_ms: f64,
    d2h_ms: f64,
    gpu_total_ms: f64,
    cpu_ms: f64,
    gpu_reps: usize,
    cpu_reps: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Repeats `f` for about `budget` (at least 3 times), returns the samples.
fn repeat<T>(budget: Duration, mut f: impl FnMut() -> T) -> Vec<T> {
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < 3 || (start.elapsed() < budget && out.len() < 200) {
        out.push(f());
    }
    out
}

fn inputs(n: usize) -> impl IndexedParallelIterator<Item = f32> {
    (0..n).into_par_iter().map(|i| {
        let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        (h as f32 / (1u64 << 24) as f32) * 2.0e4 - 1.0e4
    })
}

fn profile(stream: &Stream<'_>) -> Result<()> {
    let gpu = stream.gpu();
    let n = 1 << 28;
    let host: Vec<f32> = inputs(n).collect();
    let input = gpu.upload(&host)?;
    let mut output = gpu.alloc::<f32>(n)?;
    copy::copy(stream, &input, &mut output)?;
    for v in Variant::ALL {
        nested_sin::launch(stream, v, &input, &mut output)?;
    }
    stream.synchronize()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let gpu = match coalesce::init() {
        Ok(gpu) => gpu,
        Err(coalesce::Error::NoDevice { reason }) => {
            eprintln!("no CUDA device ({reason}): this example needs a GPU");
            std::process::exit(2);
        }
        Err(e) => return Err(e.into()),
    };
    let stream = gpu.stream()?;
    if args.profile {
        return Ok(profile(&stream)?);
    }
    let max = 1usize << args.max_log2;
    let budget = Duration::from_millis(args.budget_ms);
    let threads = rayon::current_num_threads();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!("GPU: {} ({} SMs); CPU: {cpu}, {threads} threads (rayon)", gpu.name(), gpu.sm_count());
    println!("GPU = pinned H2D + fused_reduced in place + D2H, host clock; CPU = 4x f32::sin on all threads");

    // Pinned host memory and one device buffer at the largest size; each
    // size uses their first n elements.
    let mut pinned_in = LockedBuffer::new(&0.0f32, max)?;
    pinned_in.as_mut_slice().par_iter_mut().zip(inputs(max)).for_each(|(d, x)| *d = x);
    let mut pinned_out = LockedBuffer::new(&0.0f32, max)?;
    let mut cpu_out = vec![0.0f32; max];
    let device: DeviceBuffer<f32> = gpu.alloc(max)?;
    let s = stream.as_cust();
    let new_event = || Event::new(EventFlags::DEFAULT);

    let header = format!(
        "{:>5} {:>10} {:>9} | {:>9} {:>9} {:>9} {:>10} | {:>10} | {:>8} {:>8}",
        "log2", "elements", "MB", "H2D ms", "kernel ms", "D2H ms", "GPU total", "CPU ms", "CPU/GPU", "winner"
    );
    println!("{header}\n{}", "-".repeat(header.len()));
    let mut rows = Vec::new();
    for log2 in args.min_log2..=args.max_log2 {
        let n = 1usize << log2;
        let (h_in, h_out) = (&pinned_in.as_slice()[..n], &mut pinned_out.as_mut_slice()[..n]);
        let mut d = device.index(..n);
        let (e0, e1, e2, e3) = (new_event()?, new_event()?, new_event()?, new_event()?);
        let gpu_samples = repeat(budget, || -> anyhow::Result<(f64, f64, f64, f64)> {
            let t = Instant::now();
            e0.record(s)?;
            // SAFETY: pinned host memory and the device buffer outlive the
            // copies: we synchronise below before touching either.
            unsafe { d.async_copy_from(h_in, s)? };
            e1.record(s)?;
            nested_sin::launch_in_place(&stream, Variant::BEST, &mut d)?;
            e2.record(s)?;
            // SAFETY: as above.
            unsafe { d.async_copy_to(h_out, s)? };
            e3.record(s)?;
            stream.synchronize()?;
            let total = t.elapsed().as_secs_f64() * 1e3;
            let ms = |a: &Event, b: &Event| b.elapsed_time_f32(a).map(f64::from);
            Ok((ms(&e0, &e1)?, ms(&e1, &e2)?, ms(&e2, &e3)?, total))
        })
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
        let cpu_slice = &mut cpu_out[..n];
        let cpu_samples = repeat(budget, || {
            let t = Instant::now();
            cpu_slice
                .par_iter_mut()
                .zip(h_in.par_iter())
                .with_min_len(4096)
                .for_each(|(y, &x)| *y = x.sin().sin().sin().sin());
            t.elapsed().as_secs_f64() * 1e3
        });
        // The two sides agree (different sinf implementations: to 1e-5).
        let worst = cpu_slice.iter().zip(h_out.iter()).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        anyhow::ensure!(worst <= 1e-5, "GPU and CPU results differ by {worst} at 2^{log2}");
        let pick = |f: fn(&(f64, f64, f64, f64)) -> f64| median(gpu_samples.iter().map(f).collect());
        let row = Row {
            log2,
            elements: n,
            mbytes: n as f64 * 4.0 / 1e6,
            h2d_ms: pick(|s| s.0),
            kernel_ms: pick(|s| s.1),
            d2h_ms: pick(|s| s.2),
            gpu_total_ms: pick(|s| s.3),
            cpu_ms: median(cpu_samples.clone()),
            gpu_reps: gpu_samples.len(),
            cpu_reps: cpu_samples.len(),
        };
        let ratio = row.cpu_ms / row.gpu_total_ms;
        println!(
            "{:>5} {:>10} {:>9.2} | {:>9.4} {:>9.4} {:>9.4} {:>10.4} | {:>10.4} | {:>7.2}x {:>8}",
            log2,
            n,
            row.mbytes,
            row.h2d_ms,
            row.kernel_ms,
            row.d2h_ms,
            row.gpu_total_ms,
            row.cpu_ms,
            ratio,
            if ratio > 1.0 { "GPU" } else { "CPU" }
        );
        rows.push(row);
    }
    if let Some(path) = args.json {
        // The same figures as a run file's `values` and `timings`
        // (scripts/gpu/runfile.py reads any JSON file's): medians in ms of
        // each size (`2^log2`), with the bytes each step moves.
        let mut timings = Vec::new();
        for r in &rows {
            let (n, kernel) = (r.elements as u64, Variant::BEST.name());
            for (name, ms, reps, bytes) in [
                ("h2d", r.h2d_ms, r.gpu_reps, Some(4 * n)),
                (kernel, r.kernel_ms, r.gpu_reps, Some(8 * n)),
                ("d2h", r.d2h_ms, r.gpu_reps, Some(4 * n)),
                ("gpu_total", r.gpu_total_ms, r.gpu_reps, None),
                ("cpu", r.cpu_ms, r.cpu_reps, None),
            ] {
                timings.push(serde_json::json!({
                    "source": "end_to_end", "op": "nested_sin", "kernel": name, "shape": format!("2^{}", r.log2),
                    "statistic": "median", "ms": ms, "reps": reps, "bytes": bytes,
                }));
            }
        }
        let doc = serde_json::json!({
            "gpu": gpu.name(),
            "sms": gpu.sm_count(),
            "cpu": cpu,
            "cpu_threads": threads,
            "kernel": Variant::BEST.name(),
            "rows": rows,
            "values": {"end_to_end": {"cpu": cpu, "cpu_threads": threads, "kernel": Variant::BEST.name()}},
            "timings": timings,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
