//! Streams: the [`Stream`] that every launcher queues on, made by a [`Gpu`]
//! or borrowed from a program's own `cust` stream.

use super::Gpu;
use crate::error::{Context as _, check};
use crate::{Error, Result};
use cust::stream::StreamFlags;
use cust::sys;
use std::ptr;

impl Gpu {
    /// A new stream. It synchronises with the legacy default stream, so a
    /// plain (synchronous) `copy_to` after a launch sees the kernel's result.
    /// Graphs cannot be captured on it ([`Gpu::nonblocking_stream`]).
    pub fn stream(&self) -> Result<Stream<'_>> {
        self.new_stream(StreamFlags::DEFAULT)
    }

    /// A stream that does not synchronise with the legacy default stream
    /// (`CU_STREAM_NON_BLOCKING`). Launches on it skip the driver's
    /// implicit dependency on the default stream (cheaper per launch, see
    /// examples/04_launch_overhead.rs), and it can capture graphs. `cust`'s
    /// synchronous copies (`copy_to`, `copy_from`) are not ordered with its
    /// kernels: use [`Stream::upload`] and [`Stream::download`], or
    /// [`Stream::synchronize`] first.
    pub fn nonblocking_stream(&self) -> Result<Stream<'_>> {
        self.new_stream(StreamFlags::NON_BLOCKING)
    }

    fn new_stream(&self, flags: StreamFlags) -> Result<Stream<'_>> {
        self.bind()?;
        let inner = new_cust_stream(flags)?;
        Ok(Stream { inner: StreamRef::Owned(inner), gpu: self })
    }

    /// A program's own `cust` stream, for this crate's launchers. Checked
    /// once here: the stream must belong to this `Gpu`'s context
    /// ([`Error::WrongContext`] otherwise).
    pub fn borrow_stream<'s>(&'s self, stream: &'s cust::stream::Stream) -> Result<Stream<'s>> {
        let mut ctx = ptr::null_mut();
        // SAFETY: a live stream handle owned by `stream`; an out-pointer.
        check("cuStreamGetCtx", unsafe { sys::cuStreamGetCtx(stream.as_inner(), &mut ctx) })?;
        if ctx != self.context_handle() {
            return Err(Error::WrongContext { what: "the stream belongs to another context" });
        }
        Ok(Stream { inner: StreamRef::Borrowed(stream), gpu: self })
    }
}

/// A `cust` stream with exactly `flags`, on the current context.
///
/// `cust::stream::Stream::new` (0.3.2) drops `NON_BLOCKING` from its flags
/// (Rust-CUDA issue 15), so every stream it makes synchronises with the
/// legacy default stream. This calls `cuStreamCreate` itself and hands the
/// handle to a `cust` stream, which destroys it when dropped.
pub(super) fn new_cust_stream(flags: StreamFlags) -> Result<cust::stream::Stream> {
    let mut raw: sys::CUstream = ptr::null_mut();
    // SAFETY: an out-pointer to a local; flags are CU_STREAM_* bits.
    check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut raw, flags.bits()) })?;
    // SAFETY: cust 0.3's `Stream` is a struct whose one field is the
    // `CUstream` handle; `transmute` refuses to compile unless the two have
    // the same size, so the handle is the struct's whole content at offset 0.
    // The stream is new and owned by nothing else; cust's `Drop` destroys it.
    // tests/threads.rs reads the flags back through cust (`get_flags`).
    Ok(unsafe { std::mem::transmute::<sys::CUstream, cust::stream::Stream>(raw) })
}

/// A stream made by [`Gpu::stream`], or a program's own borrowed through
/// [`Gpu::borrow_stream`].
enum StreamRef<'g> {
    Owned(cust::stream::Stream),
    Borrowed(&'g cust::stream::Stream),
}

/// A CUDA stream tied to the [`Gpu`] whose kernels it launches.
///
/// `Send` and `Sync`: launches from several threads onto one stream are
/// sound, and run in the order the driver receives them.
pub struct Stream<'g> {
    inner: StreamRef<'g>,
    gpu: &'g Gpu,
}

impl<'g> Stream<'g> {
    /// The GPU this stream belongs to.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }
    /// The underlying `cust` stream (for events, copies, `launch!`).
    pub fn as_cust(&self) -> &cust::stream::Stream {
        match &self.inner {
            StreamRef::Owned(s) => s,
            StreamRef::Borrowed(s) => s,
        }
    }
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.as_cust().as_inner()
    }
    /// Whether the stream synchronises with the legacy default stream
    /// (made without `CU_STREAM_NON_BLOCKING`).
    pub fn is_blocking(&self) -> Result<bool> {
        let flags = self.as_cust().get_flags().during("cuStreamGetFlags")?;
        Ok(!flags.contains(StreamFlags::NON_BLOCKING))
    }
    /// Blocks until all work queued on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.as_cust().synchronize().during("cuStreamSynchronize")
    }
}
