//! Lesson 5: three clocks for the same work, and the first launch.
//!
//!     cargo run --release --example 05_timing_pitfalls
//!
//! The work: one 8192x8192 transpose with `Variant::BEST` (~0.19 ms on an H100).
//! 1. Host timer around the launch without synchronising: measures only the
//!    launch call, because launches are asynchronous.
//! 2. Host timer with `synchronize()`: launch + execution + the sync's latency.
//! 3. CUDA events: the GPU's own time for the kernel.
//!
//! Then the cold start: `coalesce::init()` (context + PTX JIT, in a fresh
//! process with and without the driver's JIT cache), the first launch after
//! it, and a warm launch.

mod common;

use coalesce::transpose::{self, Variant};
use coalesce::{MatrixShape, time_on_stream};
use std::time::Instant;

fn main() -> coalesce::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--cold") {
        return cold_child();
    }
    let gpu = common::gpu_or_exit("timing pitfalls lesson");
    let stream = gpu.stream()?;
    let shape = MatrixShape::new(8192, 8192)?;
    let input = gpu.upload(&vec![1.0f32; shape.len()])?;
    let mut output = gpu.alloc::<f32>(shape.len())?;
    let mut run = || transpose::launch(&stream, Variant::BEST, &input, &mut output, shape);
    run()?;
    stream.synchronize()?;

    let no_sync = median(21, || {
        let t = Instant::now();
        run()?;
        let e = t.elapsed();
        stream.synchronize()?; // outside the timed region: the pitfall
        Ok(e.as_secs_f64() * 1e3)
    })?;
    let with_sync = median(21, || {
        let t = Instant::now();
        run()?;
        stream.synchronize()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    })?;
    let events = time_on_stream(&stream, 2, 21, &mut run)?.median_ms();
    println!("\nthe same 8192x8192 transpose, median of 21:");
    println!("  {no_sync:>8.4} ms  host timer, no synchronize (only the launch call)");
    println!("  {with_sync:>8.4} ms  host timer with synchronize");
    println!("  {events:>8.4} ms  CUDA events (GPU time)");

    println!("\ncold start, each in a fresh process:");
    for (cache, what) in [
        ("1", "JIT cache disabled (CUDA_CACHE_DISABLE=1): PTX compiled now"),
        ("0", "JIT cache allowed (second run of the same PTX)"),
    ] {
        if cache == "0" {
            // Fill the cache once so the next child finds it.
            common::rerun_self(&["--cold"], &[("CUDA_CACHE_DISABLE", "0")]);
        }
        println!("  {}  [{what}]", common::rerun_self(&["--cold"], &[("CUDA_CACHE_DISABLE", cache)]));
    }
    Ok(())
}

fn median(n: usize, mut f: impl FnMut() -> coalesce::Result<f64>) -> coalesce::Result<f64> {
    let mut v = (0..n).map(|_| f()).collect::<coalesce::Result<Vec<_>>>()?;
    v.sort_by(f64::total_cmp);
    Ok(v[n / 2])
}

fn cold_child() -> coalesce::Result<()> {
    let t = Instant::now();
    let gpu = coalesce::init()?;
    let init = t.elapsed().as_secs_f64() * 1e3;
    let stream = gpu.stream()?;
    let shape = MatrixShape::new(8192, 8192)?;
    let input = gpu.upload(&vec![1.0f32; shape.len()])?;
    let mut output = gpu.alloc::<f32>(shape.len())?;
    let mut launch = || -> coalesce::Result<f64> {
        let t = Instant::now();
        transpose::launch(&stream, Variant::BEST, &input, &mut output, shape)?;
        stream.synchronize()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let first = launch()?;
    let second = launch()?;
    println!("init (context + module) {init:8.2} ms | first launch {first:7.3} ms | second launch {second:7.3} ms");
    Ok(())
}
