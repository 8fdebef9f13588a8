//! Lesson 4 (seeds 002, 003): what one launch costs, and where it goes.
//!
//!     cargo run --release --example 04_launch_overhead
//!
//! A kernel that increments 1024 floats, launched 10 000 times in a row and
//! timed on the host until the stream drains: the per-launch cost a loop of
//! small ops pays. Each row is measured four ways apart, to split the cost:
//!
//! - through the typed launcher (shape checks, then `cuLaunchKernel`) or as a
//!   bare `cuLaunchKernel` with no checks (the driver's own cost);
//! - on a stream that synchronises with the legacy default stream
//!   ([`Gpu::stream`]) or one that does not ([`Gpu::nonblocking_stream`]),
//!   for which the driver tracks no implicit dependency.
//!
//! A second column times 256 launch calls alone, without waiting for the GPU:
//! they fit in the driver's queue, so that is the host's cost per call. A
//! third gives the GPU clock (CUDA events around the 10 000 launches). Last,
//! the same 10 000 launches captured once as a CUDA graph and replayed with
//! one `cuGraphLaunch`: the cost per node. Every buffer is checked afterwards
//! (each launch incremented every element once). PyTorch's tiny-op launch on
//! the same machine is in `torch_peers.py` (`torch_launch_us`).

mod common;

use coalesce::{Gpu, Result, Stream, graph, probe, time_on_stream};
use cust::memory::{CopyDestination, DeviceBuffer};
use std::ffi::c_void;
use std::time::Instant;

const LAUNCHES: usize = 10_000;
/// Few enough launches to fit in the driver's queue: timing them measures
/// the host side of the launch call alone.
const ISSUE_ONLY: usize = 256;
const ELEMENTS: u32 = 1024;

/// Per-launch costs of one way of launching, in microseconds.
struct Row {
    what: String,
    drain_us: f64,
    issue_us: f64,
    gpu_us: f64,
}

/// Times `launch` (one launch that increments `x`) three ways, then checks
/// that `x` saw every launch.
fn measure(
    what: String,
    stream: &Stream<'_>,
    x: &mut DeviceBuffer<f32>,
    mut launch: impl FnMut(&mut DeviceBuffer<f32>) -> Result<()>,
) -> Result<Row> {
    let mut count = 0usize;
    let mut go = |x: &mut DeviceBuffer<f32>, n: usize| -> Result<()> {
        for _ in 0..n {
            launch(x)?;
        }
        count += n;
        Ok(())
    };
    let drain = common::host_median_ms(5, || {
        go(x, LAUNCHES)?;
        stream.synchronize()
    })?;
    let mut issue = Vec::new();
    for _ in 0..21 {
        stream.synchronize()?;
        let t = Instant::now();
        go(x, ISSUE_ONLY)?;
        issue.push(t.elapsed().as_secs_f64() * 1e6 / ISSUE_ONLY as f64);
    }
    issue.sort_by(f64::total_cmp);
    let gpu = time_on_stream(stream, 1, 5, || go(x, LAUNCHES))?;
    stream.synchronize()?;
    let mut back = vec![0.0f32; ELEMENTS as usize];
    x.copy_to(&mut back[..]).map_err(common::cuda("cuMemcpyDtoH"))?;
    assert!(back.iter().all(|&v| v == count as f32), "{what}: {} increments seen, {count} launched", back[0]);
    Ok(Row {
        what,
        drain_us: drain * 1e3 / LAUNCHES as f64,
        issue_us: issue[issue.len() / 2],
        gpu_us: gpu.median_ms() * 1e3 / LAUNCHES as f64,
    })
}

/// `probe_increment` launched by hand: the launch the typed launcher
/// makes, minus its checks, with the handle looked up once.
struct RawLauncher {
    function: cust::sys::CUfunction,
}

impl RawLauncher {
    fn new(gpu: &Gpu) -> Result<RawLauncher> {
        let f = gpu.module().get_function("probe_increment").map_err(common::cuda("cuModuleGetFunction"))?;
        Ok(RawLauncher { function: f.to_raw() })
    }

    fn launch(&self, stream: &Stream<'_>, x: &mut DeviceBuffer<f32>) -> Result<()> {
        let (mut p, mut n) = (x.as_device_ptr(), ELEMENTS);
        let mut args =
            [(&mut p as *mut cust::memory::DevicePointer<f32>).cast::<c_void>(), (&mut n as *mut u32).cast()];
        let dims = coalesce::kernels::probe::increment_dims(n);
        let (g, b) = (dims.grid, dims.block);
        // SAFETY: probe_increment(f32*, u32) with a live buffer of ELEMENTS floats.
        let r = unsafe {
            cust::sys::cuLaunchKernel(
                self.function,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                dims.shared_bytes,
                stream.as_cust().as_inner(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        coalesce::error::check("cuLaunchKernel", r)
    }
}

fn main() -> Result<()> {
    let gpu = common::gpu_or_exit("launch overhead lesson");
    let raw = RawLauncher::new(&gpu)?;
    let mut rows = Vec::new();
    for (kind, stream) in [("default-synchronising", gpu.stream()?), ("non-blocking", gpu.nonblocking_stream()?)] {
        let mut x = gpu.upload(&vec![0.0f32; ELEMENTS as usize])?;
        rows.push(measure(format!("typed launcher, {kind} stream"), &stream, &mut x, |x| {
            probe::increment(&stream, x)
        })?);
        let mut y = gpu.upload(&vec![0.0f32; ELEMENTS as usize])?;
        rows.push(measure(format!("raw cuLaunchKernel, {kind} stream"), &stream, &mut y, |y| raw.launch(&stream, y))?);
    }

    // The same launches as one graph (captured once, replayed 5 + 1 times).
    let stream = gpu.stream()?;
    let mut y = gpu.upload(&vec![0.0f32; ELEMENTS as usize])?;
    let g = graph::capture(&stream, || {
        for _ in 0..LAUNCHES {
            probe::increment(&stream, &mut y)?;
        }
        Ok(())
    })?;
    let nodes = g.node_count();
    let graph_host = common::host_median_ms(5, || {
        g.launch(&stream)?;
        stream.synchronize()
    })?;
    let graph_gpu = time_on_stream(&stream, 1, 5, || g.launch(&stream))?;
    stream.synchronize()?;
    drop(g);
    let mut back_y = vec![0.0f32; ELEMENTS as usize];
    y.copy_to(&mut back_y[..]).map_err(common::cuda("cuMemcpyDtoH"))?;
    assert!(back_y.iter().all(|&v| v == (12 * LAUNCHES) as f32), "graph result {}", back_y[0]);

    println!("\nper launch of a {ELEMENTS}-element kernel, in us (medians):");
    println!(
        "{:<50} {:>14} {:>14} {:>10}",
        "",
        format!("{LAUNCHES} + drain"),
        format!("{ISSUE_ONLY} calls only"),
        "GPU clock"
    );
    for r in &rows {
        println!("{:<50} {:>14.2} {:>14.2} {:>10.2}", r.what, r.drain_us, r.issue_us, r.gpu_us);
    }
    println!(
        "{:<50} {:>14.2} {:>14} {:>10.2}",
        format!("CUDA graph of the {nodes} launches, per node"),
        graph_host * 1e3 / nodes as f64,
        "",
        graph_gpu.median_ms() * 1e3 / nodes as f64
    );
    Ok(())
}
