//! Lesson 4 (seeds 002, 003): what one launch costs.
//!
//!     cargo run --release --example 04_launch_overhead
//!
//! 10 000 launches of a kernel that increments 1024 floats, through the
//! typed launcher (shape checks, function lookup, `cuLaunchKernel`), timed on
//! the host until the stream drains; the same count queued on the GPU
//! measured with CUDA events; and the result checked (every element
//! incremented 10 000 times). PyTorch's tiny-op launch on the same machine
//! is in `torch_peers.py` (`torch_launch_us`).

mod common;

use coalesce::{probe, time_on_stream};
use cust::memory::CopyDestination;

const LAUNCHES: usize = 10_000;

fn main() -> coalesce::Result<()> {
    let gpu = common::gpu_or_exit("launch overhead lesson");
    let stream = gpu.stream()?;
    let mut x = gpu.upload(&vec![0.0f32; 1024])?;
    let host = common::host_median_ms(5, || {
        for _ in 0..LAUNCHES {
            probe::increment(&stream, &mut x)?;
        }
        stream.synchronize()
    })?;
    let gpu_time = time_on_stream(&stream, 1, 5, || {
        for _ in 0..LAUNCHES {
            probe::increment(&stream, &mut x)?;
        }
        Ok(())
    })?;
    stream.synchronize()?;
    let mut back = vec![0.0f32; 1024];
    x.copy_to(&mut back[..]).map_err(|source| coalesce::Error::Cuda { op: "cuMemcpyDtoH", source })?;
    // 1 warm-up + 5 host rounds + 1 warm-up + 5 timed rounds.
    let expected = (12 * LAUNCHES) as f32;
    assert!(back.iter().all(|&v| v == expected), "increment result {} != {expected}", back[0]);
    println!("\n{LAUNCHES} launches of a 1024-element kernel (median of 5 rounds):");
    println!("  {:>7.2} us per launch, host clock, launch + drain", host * 1e3 / LAUNCHES as f64);
    println!(
        "  {:>7.2} us per launch, GPU clock (CUDA events around the queued launches)",
        gpu_time.median_ms() * 1e3 / LAUNCHES as f64
    );
    Ok(())
}
