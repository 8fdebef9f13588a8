//! Copy-compute overlap: batches of (host-to-device copy, kernel,
//! device-to-host copy) spread over several streams.
//!
//! One stream runs every step of every batch in order: the copy engines and
//! the SMs take turns. With `k` streams, batch `i` goes to stream `i % k`, so
//! while one batch computes, the next is being copied in and the previous
//! copied out (an H100 has separate engines for each direction). With two
//! streams this is the classic double buffer.
//!
//! Safety by construction: [`Pipeline::run`] borrows every host buffer for
//! its whole duration and returns only after every stream has finished (also
//! on error), so no asynchronous copy can outlive the memory it reads or
//! writes. For copies to overlap, the host buffers must be page-locked
//! ([`crate::Gpu::pinned`] or [`crate::memory::Registered`]); with pageable
//! memory the driver makes them synchronous and the pipeline still gives the
//! right answer, just without overlap.

use crate::error::Context as _;
use crate::{Error, Gpu, Result, Stream};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceSlice};

/// Streams and their device buffers for batched copy-compute-copy work.
pub struct Pipeline<'g> {
    streams: Vec<Stream<'g>>,
    /// Per stream: device input and output of the batch in flight there.
    slots: Vec<(DeviceBuffer<f32>, DeviceBuffer<f32>)>,
}

impl<'g> Pipeline<'g> {
    /// `streams` streams, each with room for one batch of `in_len` input and
    /// `out_len` output floats on the device.
    pub fn new(gpu: &'g Gpu, streams: usize, in_len: usize, out_len: usize) -> Result<Self> {
        if streams == 0 || in_len == 0 || out_len == 0 {
            return Err(Error::ZeroDimension { rows: streams, cols: in_len.min(out_len) });
        }
        let streams = (0..streams).map(|_| gpu.stream()).collect::<Result<Vec<_>>>()?;
        let slots = streams.iter().map(|_| Ok((gpu.alloc(in_len)?, gpu.alloc(out_len)?))).collect::<Result<_>>()?;
        Ok(Pipeline { streams, slots })
    }

    /// Number of streams.
    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    /// Runs batch `i` = copy `inputs[i]` in, `kernel(stream, input, output)`,
    /// copy the output back into `outputs[i]`, on stream `i % streams`.
    /// Returns when every batch has finished.
    pub fn run<F>(&mut self, inputs: &[&[f32]], outputs: &mut [&mut [f32]], mut kernel: F) -> Result<()>
    where
        F: FnMut(&Stream<'g>, &DeviceSlice<f32>, &mut DeviceSlice<f32>) -> Result<()>,
    {
        if inputs.len() != outputs.len() {
            return Err(Error::LengthMismatch {
                buffer: "pipeline outputs",
                shape: format!("a pipeline of {} input batches", inputs.len()),
                expected: inputs.len(),
                actual: outputs.len(),
            });
        }
        let (in_len, out_len) = (self.slots[0].0.len(), self.slots[0].1.len());
        for (i, (inp, out)) in inputs.iter().zip(outputs.iter()).enumerate() {
            if inp.len() != in_len || out.len() != out_len {
                return Err(Error::LengthMismatch {
                    buffer: if inp.len() != in_len { "pipeline input" } else { "pipeline output" },
                    shape: format!("the pipeline's slot (batch {i})"),
                    expected: if inp.len() != in_len { in_len } else { out_len },
                    actual: if inp.len() != in_len { inp.len() } else { out.len() },
                });
            }
        }
        self.streams[0].gpu().bind()?;
        let queued = self.queue(inputs, outputs, &mut kernel);
        // Whatever happened, wait for everything queued: the host buffers
        // are borrowed only until we return.
        let synced = self.synchronize();
        queued.and(synced)
    }

    fn queue<F>(&mut self, inputs: &[&[f32]], outputs: &mut [&mut [f32]], kernel: &mut F) -> Result<()>
    where
        F: FnMut(&Stream<'g>, &DeviceSlice<f32>, &mut DeviceSlice<f32>) -> Result<()>,
    {
        let k = self.streams.len();
        for (i, (inp, out)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
            let stream = &self.streams[i % k];
            let (d_in, d_out) = &mut self.slots[i % k];
            // SAFETY: lengths checked; `inp` and `out` stay borrowed until
            // `run` has synchronised every stream.
            unsafe { d_in.async_copy_from(*inp, stream.as_cust()) }.during("cuMemcpyHtoDAsync")?;
            kernel(stream, d_in, d_out)?;
            // SAFETY: as above.
            unsafe { d_out.async_copy_to(*out, stream.as_cust()) }.during("cuMemcpyDtoHAsync")?;
        }
        Ok(())
    }

    /// Waits for every stream.
    pub fn synchronize(&self) -> Result<()> {
        self.streams.iter().try_for_each(|s| s.synchronize())
    }

    /// The streams, to time the parts of a pipeline on their own.
    pub fn stream(&self, i: usize) -> &Stream<'g> {
        &self.streams[i % self.streams.len()]
    }
}
