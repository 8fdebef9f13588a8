//! Lesson 4 (seeds 002, 003): what one launch costs.
//!
//!     cargo run --release --example 04_launch_overhead
//!
//! 10 000 launches of a kernel that increments 1024 floats, through the
//! typed launcher (shape checks, `cuLaunchKernel`), timed on
//! the host until the stream drains; the same count queued on the GPU
//! measured with CUDA events; and the result checked (every element
//! incremented). Beside it, the same launch as a bare `cuLaunchKernel` with
//! no checks: the driver's own cost. Then the same 10 000 launches captured once
//! into a CUDA graph and replayed with one `cuGraphLaunch`: the cost per
//! node. PyTorch's tiny-op launch on the same machine is in `torch_peers.py`
//! (`torch_launch_us`).

mod common;

use coalesce::{graph, probe, time_on_stream};
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
    // Baseline: the driver call alone, no checks, function looked up once.
    let f = gpu.module().get_function("probe_increment").map_err(common::cuda("cuModuleGetFunction"))?;
    let (mut p, mut n) = (x.as_device_ptr(), 1024u32);
    let mut args =
        [(&mut p as *mut cust::memory::DevicePointer<f32>).cast::<std::ffi::c_void>(), (&mut n as *mut u32).cast()];
    let dims = coalesce::kernels::probe::increment_dims(n);
    let (g, b) = (dims.grid, dims.block);
    let raw = common::host_median_ms(5, || {
        for _ in 0..LAUNCHES {
            // SAFETY: probe_increment(f32*, u32) with a live 1024-float buffer;
            // the same launch the typed launcher makes, minus its checks.
            let r = unsafe {
                cust::sys::cuLaunchKernel(
                    f.to_raw(),
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
            assert_eq!(r, cust::sys::cudaError_enum::CUDA_SUCCESS);
        }
        stream.synchronize()
    })?;

    stream.synchronize()?;
    let mut back = vec![0.0f32; 1024];
    x.copy_to(&mut back[..]).map_err(common::cuda("cuMemcpyDtoH"))?;
    // 3 x (1 warm-up + 5 rounds): launcher host-timed, launcher GPU-timed, raw.
    let expected = (18 * LAUNCHES) as f32;
    assert!(back.iter().all(|&v| v == expected), "increment result {} != {expected}", back[0]);
    // The same launches as one graph (captured once, replayed 5 + 1 times).
    let mut y = gpu.upload(&vec![0.0f32; 1024])?;
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
    let mut back_y = vec![0.0f32; 1024];
    y.copy_to(&mut back_y[..]).map_err(common::cuda("cuMemcpyDtoH"))?;
    assert!(back_y.iter().all(|&v| v == (12 * LAUNCHES) as f32), "graph result {}", back_y[0]);

    println!("\n{LAUNCHES} launches of a 1024-element kernel (median of 5 rounds):");
    println!("  {:>7.2} us per launch, host clock, launch + drain", host * 1e3 / LAUNCHES as f64);
    println!(
        "  {:>7.2} us per launch, GPU clock (CUDA events around the queued launches)",
        gpu_time.median_ms() * 1e3 / LAUNCHES as f64
    );
    println!(
        "  {:>7.2} us per launch, raw cuLaunchKernel with no checks (the driver's own cost, for comparison)",
        raw * 1e3 / LAUNCHES as f64
    );
    println!("the same {nodes} launches captured as one CUDA graph, replayed:");
    println!("  {:>7.2} us per node, host clock, cuGraphLaunch + drain", graph_host * 1e3 / nodes as f64);
    println!("  {:>7.2} us per node, GPU clock", graph_gpu.median_ms() * 1e3 / nodes as f64);
    Ok(())
}
