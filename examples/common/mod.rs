//! What the lesson examples share.
#![allow(dead_code)]

use coalesce::{Error, Gpu};
use std::time::Instant;

/// The GPU, or exit with status 2 and a clear message when there is none.
pub fn gpu_or_exit(lesson: &str) -> Gpu {
    match coalesce::init() {
        Ok(gpu) => {
            println!("{lesson} on {} ({} SMs)", gpu.name(), gpu.sm_count());
            gpu
        }
        Err(Error::NoDevice { reason }) => {
            eprintln!("error: {lesson} needs an NVIDIA GPU and its driver: no CUDA device ({reason})");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("error: CUDA initialisation failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Names the driver call a `cust` error came from (`.map_err(common::cuda("cuMemcpyHtoD"))`).
pub fn cuda(op: &'static str) -> impl Fn(cust::error::CudaError) -> Error {
    move |source| Error::Cuda { op, source }
}

/// Median of `reps` host-timed runs of `f` (after one warm-up), in ms.
pub fn host_median_ms(reps: usize, mut f: impl FnMut() -> coalesce::Result<()>) -> coalesce::Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Peak resident set size of this process so far (VmHWM), in MiB.
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Runs this example again in a fresh process with `args` and `envs` added,
/// and returns what it printed, trimmed: a measurement that must not share
/// the parent's state (its memory peak, a warm context or JIT cache).
pub fn rerun_self(args: &[&str], envs: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("own path");
    let out = std::process::Command::new(exe).args(args).envs(envs.iter().copied()).output().expect("child");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
