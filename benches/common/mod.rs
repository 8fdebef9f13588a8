//! What every GPU bench shares: a criterion [`Measurement`] that reads CUDA
//! events instead of the host clock, and the one stream it times.
#![allow(dead_code)]

use coalesce::{Error, Gpu, Stream};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput};
use cust::event::{Event, EventFlags};
use cust::memory::{CopyDestination, DeviceBuffer};
use std::time::Duration;

/// GPU time between two CUDA events recorded on the benchmark's stream.
///
/// criterion calls `start`, runs the routine `iters` times, then `end`; the
/// events bracket exactly the work queued in between, so the value is what
/// the GPU spent (launch gaps included, host-side queueing excluded) and no
/// synchronisation happens inside the timed region.
pub struct GpuTime {
    stream: &'static Stream<'static>,
}

impl Measurement for GpuTime {
    type Intermediate = Event;
    type Value = f64; // nanoseconds

    fn start(&self) -> Event {
        let e = Event::new(EventFlags::DEFAULT).expect("cuEventCreate");
        e.record(self.stream.as_cust()).expect("cuEventRecord");
        e
    }
    fn end(&self, start: Event) -> f64 {
        let e = Event::new(EventFlags::DEFAULT).expect("cuEventCreate");
        e.record(self.stream.as_cust()).expect("cuEventRecord");
        e.synchronize().expect("cuEventSynchronize (a kernel failed?)");
        e.elapsed_time_f32(&start).expect("cuEventElapsedTime") as f64 * 1e6
    }
    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn zero(&self) -> f64 {
        0.0
    }
    fn to_f64(&self, v: &f64) -> f64 {
        *v
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &GpuTimeFormatter
    }
}

/// Times in ns/us/ms; throughput in decimal GB/s (1e9 bytes per second),
/// the unit of memory bandwidth on every datasheet and in our reports.
struct GpuTimeFormatter;

impl ValueFormatter for GpuTimeFormatter {
    fn scale_values(&self, typical_ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match typical_ns {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "us"),
            _ => (1e-6, "ms"),
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }
    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        match *throughput {
            // bytes per nanosecond is GB/s.
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => {
                values.iter_mut().for_each(|v| *v = b as f64 / *v);
                "GB/s"
            }
            Throughput::Elements(n) => {
                values.iter_mut().for_each(|v| *v = n as f64 / *v);
                "Gelem/s"
            }
        }
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// A criterion that times on the GPU and the stream to queue the timed work
/// on, or `None` (after saying so) when there is no GPU, so `cargo bench` on
/// a CPU-only machine exits cleanly. The GPU and stream live for the whole
/// bench binary (leaked on purpose).
pub fn gpu_criterion() -> Option<(Criterion<GpuTime>, &'static Stream<'static>)> {
    let gpu: &'static Gpu = match coalesce::init() {
        Ok(gpu) => Box::leak(Box::new(gpu)),
        Err(Error::NoDevice { reason }) => {
            eprintln!("skipping GPU benchmarks: no CUDA device ({reason})");
            return None;
        }
        Err(e) => panic!("CUDA initialisation failed: {e}"),
    };
    let stream: &'static Stream<'static> = Box::leak(Box::new(gpu.stream().expect("cuStreamCreate")));
    eprintln!("benchmarking on {} ({} SMs), GPU time from CUDA events", gpu.name(), gpu.sm_count());
    Some((
        Criterion::default()
            .with_measurement(GpuTime { stream })
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(1500))
            .configure_from_args(),
        stream,
    ))
}

/// Correct before fast, the run half of it: fills `output` with NaN, runs
/// `launch` into it once, waits for `stream`, and returns what `output`
/// holds (a NaN left there is an element the launch never wrote).
pub fn poisoned_run(
    stream: &Stream<'_>, output: &mut DeviceBuffer<f32>,
    launch: impl FnOnce(&mut DeviceBuffer<f32>) -> coalesce::Result<()>,
) -> coalesce::Result<Vec<f32>> {
    let len = output.len();
    output.copy_from(&vec![f32::NAN; len][..]).expect("cuMemcpyHtoD");
    launch(output)?;
    stream.synchronize()?;
    let mut got = vec![0.0f32; len];
    output.copy_to(&mut got[..]).expect("cuMemcpyDtoH");
    Ok(got)
}
