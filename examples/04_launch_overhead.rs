//! Lesson 4: what one launch costs, and where it goes.
//!
//!     cargo run --release --example 04_launch_overhead
//!
//! A kernel that increments 1024 floats, launched 10 000 times in a row and
//! timed on the host until the stream drains: the per-launch cost a loop of
//! small ops pays. Four ways of launching split that cost:
//!
//! - through the typed launcher (shape checks, then `cuLaunchKernel`) or as a
//!   bare `cuLaunchKernel` with no checks (the driver's own cost);
//! - on a stream that synchronises with the legacy default stream
//!   ([`coalesce::Gpu::stream`]) or one that does not
//!   ([`coalesce::Gpu::nonblocking_stream`]).
//!
//! The host-side cost of a launch drifts by tens of percent over seconds on a
//! shared machine, so the four take turns: 15 rounds, each timing all four
//! back to back, and every figure is a median over rounds. Besides the
//! drained batch, each round times 256 launch calls alone (they fit in the
//! driver's queue, so that is the host's cost per call) and the GPU clock
//! (CUDA events around a batch). Last, the same 10 000 launches captured once
//! as a CUDA graph and replayed with one `cuGraphLaunch`: the cost per node.
//! Every buffer is checked afterwards (each launch incremented every element
//! once). PyTorch's tiny-op launch is `scripts/gpu/peers launch`, run
//! beside this example by `scripts/gpu/run.sh`.

mod common;

use coalesce::{Gpu, Result, Stream, graph, probe, time_on_stream};
use cust::function::Function;
use cust::memory::{CopyDestination, DeviceBuffer};
use std::ffi::c_void;
use std::time::Instant;

const LAUNCHES: usize = 10_000;
/// Few enough launches to fit in the driver's queue: timing them measures
/// the host side of the launch call alone.
const ISSUE_ONLY: usize = 256;
const ELEMENTS: u32 = 1024;
const ROUNDS: usize = 15;

type Launch<'a> = Box<dyn FnMut(&mut DeviceBuffer<f32>) -> Result<()> + 'a>;

/// One way of launching, its own buffer, and what each round measured
/// (microseconds per launch).
struct Way<'a> {
    what: String,
    stream: &'a Stream<'a>,
    x: DeviceBuffer<f32>,
    launch: Launch<'a>,
    launched: usize,
    drain_us: Vec<f64>,
    issue_us: Vec<f64>,
    gpu_us: Vec<f64>,
}

impl Way<'_> {
    fn batch(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            (self.launch)(&mut self.x)?;
        }
        self.launched += n;
        Ok(())
    }

    /// One round: a drained batch on the host clock, launch calls alone, and
    /// a batch on the GPU clock.
    fn round(&mut self) -> Result<()> {
        let stream = self.stream;
        stream.synchronize()?;
        let t = Instant::now();
        self.batch(LAUNCHES)?;
        stream.synchronize()?;
        self.drain_us.push(t.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64);
        let t = Instant::now();
        self.batch(ISSUE_ONLY)?;
        self.issue_us.push(t.elapsed().as_secs_f64() * 1e6 / ISSUE_ONLY as f64);
        let gpu = time_on_stream(stream, 0, 1, || self.batch(LAUNCHES))?;
        self.gpu_us.push(gpu.median_ms() * 1e3 / LAUNCHES as f64);
        Ok(())
    }

    /// Every element must have been incremented once per launch.
    fn check(&self) -> Result<()> {
        self.stream.synchronize()?;
        let mut back = vec![0.0f32; ELEMENTS as usize];
        self.x.copy_to(&mut back[..]).map_err(common::cuda("cuMemcpyDtoH"))?;
        assert!(
            back.iter().all(|&v| v == self.launched as f32),
            "{}: {} increments seen, {} launched",
            self.what,
            back[0],
            self.launched
        );
        Ok(())
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `probe_increment` launched by hand: the launch the typed launcher
/// makes, minus its checks, with the handle looked up once. cust's
/// `Stream::launch` is `cuLaunchKernel` and nothing else.
struct RawLauncher<'g> {
    function: Function<'g>,
}

impl<'g> RawLauncher<'g> {
    fn new(gpu: &'g Gpu) -> Result<RawLauncher<'g>> {
        let function = gpu.module().get_function("probe_increment").map_err(common::cuda("cuModuleGetFunction"))?;
        Ok(RawLauncher { function })
    }

    fn launch(&self, stream: &Stream<'_>, x: &mut DeviceBuffer<f32>) -> Result<()> {
        let (mut p, mut n) = (x.as_device_ptr(), ELEMENTS);
        let args = [(&mut p as *mut cust::memory::DevicePointer<f32>).cast::<c_void>(), (&mut n as *mut u32).cast()];
        let dims = coalesce::kernels::probe::increment_dims(n);
        let (g, b) = (dims.grid, dims.block);
        // SAFETY: probe_increment(f32*, u32) with a live buffer of ELEMENTS floats.
        let r = unsafe {
            stream.as_cust().launch(&self.function, (g.x, g.y, g.z), (b.x, b.y, b.z), dims.shared_bytes, &args)
        };
        r.map_err(common::cuda("cuLaunchKernel"))
    }
}

fn main() -> Result<()> {
    let gpu = common::gpu_or_exit("launch overhead lesson");
    let raw = RawLauncher::new(&gpu)?;
    let (blocking, nonblocking) = (gpu.stream()?, gpu.nonblocking_stream()?);
    let mut ways = Vec::new();
    for (kind, stream) in [("default-synchronising", &blocking), ("non-blocking", &nonblocking)] {
        let typed: Launch = Box::new(move |x| probe::increment(stream, x));
        let bare: Launch = Box::new(|x| raw.launch(stream, x));
        for (how, launch) in [("typed launcher", typed), ("raw cuLaunchKernel", bare)] {
            let x = gpu.upload(&vec![0.0f32; ELEMENTS as usize])?;
            let what = format!("{how}, {kind} stream");
            ways.push(Way { what, stream, x, launch, launched: 0, drain_us: vec![], issue_us: vec![], gpu_us: vec![] });
        }
    }
    for w in &mut ways {
        w.batch(LAUNCHES)?; // warm-up
    }
    for r in 0..ROUNDS {
        // Alternate the order so that no way always follows the same one.
        let n = ways.len();
        for i in 0..n {
            ways[if r % 2 == 0 { i } else { n - 1 - i }].round()?;
        }
    }
    for w in &ways {
        w.check()?;
    }

    // The same launches as one graph (captured once, replayed 5 + 1 times).
    // Captured on a non-blocking stream (graph::capture needs one), replayed
    // on a default one like the launches above.
    let stream = gpu.stream()?;
    let capturing = gpu.nonblocking_stream()?;
    let mut y = gpu.upload(&vec![0.0f32; ELEMENTS as usize])?;
    let g = graph::capture(&capturing, || {
        for _ in 0..LAUNCHES {
            probe::increment(&capturing, &mut y)?;
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

    println!("\nper launch of a {ELEMENTS}-element kernel, in us (medians of {ROUNDS} interleaved rounds):");
    println!(
        "{:<50} {:>14} {:>16} {:>10} {:>14}",
        "",
        format!("{LAUNCHES} + drain"),
        format!("{ISSUE_ONLY} calls only"),
        "GPU clock",
        "drain min-max"
    );
    for w in &ways {
        let (lo, hi) = w.drain_us.iter().fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
        println!(
            "{:<50} {:>14.2} {:>16.2} {:>10.2} {:>14}",
            w.what,
            median(&w.drain_us),
            median(&w.issue_us),
            median(&w.gpu_us),
            format!("{lo:.2}-{hi:.2}")
        );
    }
    println!(
        "{:<50} {:>14.2} {:>16} {:>10.2}",
        format!("CUDA graph of the {nodes} launches, per node"),
        graph_host * 1e3 / nodes as f64,
        "",
        graph_gpu.median_ms() * 1e3 / nodes as f64
    );
    // The launcher's own cost: typed minus raw within each round (same
    // stream, measured back to back), so the machine's drift cancels.
    for pair in ways.chunks(2) {
        let d: Vec<f64> = pair[0].drain_us.iter().zip(&pair[1].drain_us).map(|(t, r)| t - r).collect();
        let kind = pair[0].what.split(", ").nth(1).unwrap_or("");
        println!(
            "typed launcher minus raw, {kind}: {:+.3} us per launch (median of per-round differences)",
            median(&d)
        );
    }
    Ok(())
}
