//! Lesson 1: pinned, pageable and registered host memory.
//!
//!     cargo run --release --example 01_host_memory
//!
//! Prints H2D and D2H GB/s for each kind from 1 MiB to 1 GiB (median of
//! synchronous copies, host-timed: what a caller waits for), then the peak
//! resident memory of getting 1 GiB of data into pinned memory three ways,
//! each in a fresh child process so the peaks do not mix.

mod common;

use coalesce::memory::Registered;
use cust::memory::CopyDestination;

const MIB: usize = 1 << 20;

fn main() -> coalesce::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(mode) = args.iter().position(|a| a == "--rss").map(|i| args[i + 1].clone()) {
        return rss_child(&mode);
    }
    let gpu = common::gpu_or_exit("host memory lesson");
    println!(
        "\n{:>9} | {:>22} | {:>22} | {:>22}",
        "size", "pageable H2D / D2H", "pinned H2D / D2H", "registered H2D / D2H"
    );
    for mib in [1, 4, 16, 64, 256, 1024] {
        let len = mib * MIB / 4;
        let reps = if mib >= 256 { 5 } else { 20 };
        let mut dev = gpu.alloc::<f32>(len)?;
        let mut row = format!("{:>5} MiB", mib);
        let mut pageable = vec![1.0f32; len];
        let mut pinned = gpu.pinned(len, 1.0f32)?;
        let mut reg_data = vec![1.0f32; len];
        let mut registered = Registered::new(&gpu, &mut reg_data)?;
        for host in [&mut pageable[..], pinned.as_mut_slice(), registered.as_mut_slice()] {
            let gbs = |ms: f64| (len * 4) as f64 / (ms * 1e-3) / 1e9;
            let h2d = common::host_median_ms(reps, || dev.copy_from(&*host).map_err(common::cuda("cuMemcpyHtoD")))?;
            let d2h = common::host_median_ms(reps, || dev.copy_to(&mut *host).map_err(common::cuda("cuMemcpyDtoH")))?;
            row += &format!(" | {:>9.1} / {:>9.1}", gbs(h2d), gbs(d2h));
        }
        println!("{row}   GB/s");
    }

    println!("\npeak resident memory to hold 1 GiB of data in pinned memory (fresh process each):");
    for (mode, what) in [
        ("alloc-pinned", "pinned at allocation (cuMemHostAlloc), filled in place"),
        ("pin-later-copy", "pageable, then copied into new pinned memory (PyTorch's pin_memory())"),
        ("register", "pageable, then registered in place (cuMemHostRegister)"),
    ] {
        println!("  {:>9} MiB  {what}", common::rerun_self(&["--rss", mode], &[]));
    }
    Ok(())
}

/// One scenario, in its own process: print the peak RSS in MiB.
fn rss_child(mode: &str) -> coalesce::Result<()> {
    let gpu = coalesce::init()?;
    let len = 1024 * MIB / 4;
    match mode {
        "alloc-pinned" => {
            let mut p = gpu.pinned(len, 0.0f32)?;
            p.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
            std::hint::black_box(&p);
        }
        "pin-later-copy" => {
            let data: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let p = gpu.pinned_copy_of(&data)?;
            std::hint::black_box((&data, &p));
        }
        _ => {
            let mut data: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let r = Registered::new(&gpu, &mut data)?;
            std::hint::black_box(&r);
        }
    }
    println!("{:.0}", common::peak_rss_mib());
    Ok(())
}
