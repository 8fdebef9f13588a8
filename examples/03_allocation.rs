//! Lesson 3: what an allocation per iteration costs.
//!
//!     cargo run --release --example 03_allocation
//!
//! Each iteration needs a 64 MiB scratch buffer and runs one small kernel on
//! it. Three ways: `cuMemAlloc`/`cuMemFree` every iteration (the free waits
//! for the device), the stream-ordered pool (`cuMemAllocAsync` /
//! `cuMemFreeAsync`, [`coalesce::memory::StreamBuffer`]), and one buffer
//! reused. Host-timed per iteration, median of 5 rounds of 200 iterations.

mod common;

use coalesce::memory::StreamBuffer;
use coalesce::probe;

const LEN: usize = 16 << 20; // 64 MiB of f32
const ITERS: usize = 200;

fn main() -> coalesce::Result<()> {
    let gpu = common::gpu_or_exit("allocation lesson");
    let stream = gpu.stream()?;
    let per_iter = |ms: f64| ms * 1e3 / ITERS as f64;

    let malloc_free = common::host_median_ms(5, || {
        for _ in 0..ITERS {
            let buf = gpu.alloc::<f32>(LEN)?;
            probe::increment(&stream, &mut buf.index(..1024))?;
            drop(buf); // cuMemFree: synchronises with the device
        }
        stream.synchronize()
    })?;
    let pool = common::host_median_ms(5, || {
        for _ in 0..ITERS {
            let buf = StreamBuffer::new(&stream, LEN)?;
            probe::increment(&stream, &mut buf.index(..1024))?;
        } // cuMemFreeAsync, queued behind the kernel
        stream.synchronize()
    })?;
    let reused = gpu.alloc::<f32>(LEN)?;
    let reuse = common::host_median_ms(5, || {
        for _ in 0..ITERS {
            probe::increment(&stream, &mut reused.index(..1024))?;
        }
        stream.synchronize()
    })?;
    println!("\n64 MiB scratch + one small kernel per iteration ({ITERS} iterations, median of 5):");
    println!("  {:>8.2} us/iter  cuMemAlloc + cuMemFree every iteration", per_iter(malloc_free));
    println!("  {:>8.2} us/iter  stream-ordered pool (cuMemAllocAsync + cuMemFreeAsync)", per_iter(pool));
    println!("  {:>8.2} us/iter  one buffer reused", per_iter(reuse));
    Ok(())
}
