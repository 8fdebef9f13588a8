//! GPU timing with CUDA events: what the device spent, not what the host saw.
//!
//! Protocol (METHOD.md, llm.c, Triton's `do_bench`): warm up first so module
//! load and JIT stay out; bracket each repetition with two events on the
//! stream; never synchronise inside the timed region; report the median.
//! Callers use buffers well past the 50 MB L2 of an H100, so repetitions
//! measure DRAM, not cache.

use crate::error::Context as _;
use crate::{Result, Stream};
use cust::event::{Event, EventFlags};

/// Repeated measurements of one piece of GPU work, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    samples_ms: Vec<f64>,
}

impl Timing {
    /// Wraps measured samples (at least one).
    pub fn from_samples(mut samples_ms: Vec<f64>) -> Timing {
        assert!(!samples_ms.is_empty(), "a timing needs at least one sample");
        samples_ms.sort_by(f64::total_cmp);
        Timing { samples_ms }
    }
    /// The samples, sorted ascending.
    pub fn samples_ms(&self) -> &[f64] {
        &self.samples_ms
    }
    /// The `q`-quantile (0 = fastest, 0.5 = median, 1 = slowest), nearest rank.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let i = ((self.samples_ms.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        self.samples_ms[i]
    }
    pub fn median_ms(&self) -> f64 {
        self.quantile_ms(0.5)
    }
    /// Decimal GB/s (1e9 bytes per second) for `bytes` moved per repetition.
    pub fn gb_per_s(&self, bytes: u64) -> f64 {
        bytes as f64 / (self.median_ms() * 1e-3) / 1e9
    }
}

/// Runs `work` `warmup` times untimed, then `reps` times, each bracketed by
/// CUDA events recorded on `stream`; returns the per-repetition times.
///
/// `work` must only enqueue work on `stream` (no synchronisation).
pub fn time_on_stream(
    stream: &Stream<'_>, warmup: usize, reps: usize, mut work: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    let reps = reps.max(1);
    stream.gpu().bind()?;
    for _ in 0..warmup {
        work()?;
    }
    let s = stream.as_cust();
    let new = || Event::new(EventFlags::DEFAULT).during("cuEventCreate");
    let pairs: Vec<(Event, Event)> = (0..reps).map(|_| Ok((new()?, new()?))).collect::<Result<_>>()?;
    stream.synchronize()?;
    for (start, end) in &pairs {
        start.record(s).during("cuEventRecord")?;
        work()?;
        end.record(s).during("cuEventRecord")?;
    }
    stream.synchronize()?;
    let samples = pairs
        .iter()
        .map(|(start, end)| end.elapsed_time_f32(start).during("cuEventElapsedTime").map(f64::from))
        .collect::<Result<Vec<_>>>()?;
    Ok(Timing::from_samples(samples))
}

/// [`time_on_stream`] after at least `warmup` untimed repetitions and at
/// least `warmup_ms` of them (from one timed probe; [`crate::SUSTAIN_MS`]
/// is the report's), so that work that draws the GPU's power limit is timed
/// at the clock it can hold, not at the boost clock of an idle GPU;
/// PyTorch's figures beside ours (`scripts/gpu/peers`) are taken the same
/// way.
pub fn time_sustained(
    stream: &Stream<'_>, warmup: usize, warmup_ms: f64, reps: usize, mut work: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    let warm = if warmup_ms > 0.0 {
        sustained_warmups(time_on_stream(stream, 1, 1, &mut work)?.median_ms(), warmup, warmup_ms)
    } else {
        warmup
    };
    time_on_stream(stream, warm, reps, work)
}

/// The untimed repetitions that take at least `warmup_ms` when one takes
/// `probe_ms`, and at least `warmup`; at most 100 000 (a 1 us kernel needs
/// no more to reach its clock) unless `warmup` asks for more. For a caller
/// that has timed its probe already, as the report has.
pub fn sustained_warmups(probe_ms: f64, warmup: usize, warmup_ms: f64) -> usize {
    ((warmup_ms / probe_ms.max(1e-3)).ceil() as usize).clamp(warmup, 100_000.max(warmup))
}

#[cfg(test)]
mod tests {
    use super::sustained_warmups as warmups;

    #[test]
    fn warm_up_lasts_the_time_asked_and_the_repetitions_asked() {
        // An 8192^3 tensor-core GEMM (about 3 ms): 167 of them make 500 ms.
        assert_eq!(warmups(3.0, 5, 500.0), 167);
        // A slow kernel: the repetitions asked for, even past the time.
        assert_eq!(warmups(400.0, 5, 500.0), 5);
        // A tiny one: capped, and a zero probe does not divide by zero.
        assert_eq!(warmups(1e-4, 5, 500.0), 100_000);
        assert_eq!(warmups(0.0, 0, 500.0), 100_000);
        assert_eq!(warmups(0.5, 200_000, 500.0), 200_000);
    }
}
