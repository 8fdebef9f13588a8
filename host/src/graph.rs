//! CUDA graphs by stream capture: record the launches a closure queues on a
//! [`Stream`] once, then replay all of them with one driver call.
//!
//! A launch costs the host a few microseconds; for small kernels that is the
//! whole runtime. A graph pays it once, at capture and instantiation, and a
//! replay ([`Graph::launch`]) is one `cuGraphLaunch` for any number of
//! kernels. What the launchers check (lengths, grids) is checked at capture.
//!
//! ```no_run
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.nonblocking_stream()?; // capture needs one (see below)
//! let x = gpu.upload(&vec![0.5f32; 1024])?;
//! let mut y = gpu.alloc::<f32>(1024)?;
//! // Four launches recorded, not run:
//! let unfused = graph::capture(&stream, || nested_sin::unfused(&stream, &x, &mut y))?;
//! assert_eq!(unfused.node_count(), 4);
//! for _ in 0..100 {
//!     unfused.launch(&stream)?; // one call, four kernels
//! }
//! stream.synchronize()?;
//! drop(unfused); // ends the borrow of `y`
//! # Ok(()) }
//! ```
//!
//! # Threads
//! A capture records only what the capturing thread queues on its stream
//! (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`): other threads keep launching,
//! allocating and copying meanwhile. The stream must be non-blocking
//! ([`crate::Gpu::nonblocking_stream`]): a blocking stream synchronises with
//! the legacy default stream, so a synchronous copy in any other thread of
//! the process (cust's `copy_from`, `copy_to`) would have to wait on the
//! capture. The driver then fails that copy
//! (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`), invalidates the capture, and, on
//! the 580 driver, can crash inside `cuMemcpyHtoD`. [`capture`] refuses such
//! a stream with [`crate::Error::CaptureNeedsNonBlockingStream`].
//!
//! # Why this is safe
//! A graph holds raw device pointers to the buffers its kernels use. Here
//! the [`Graph`] keeps the capturing closure, with everything it borrowed
//! or owns, for as long as the graph lives: a buffer it writes stays
//! mutably borrowed (the host cannot read it half-written or free it), one
//! it reads stays borrowed, and one moved into the closure lives inside the
//! graph. Dropping the graph destroys the executable graph and the graph.

use crate::error::check;
use crate::{Error, Result, Stream};
use cust::sys as cu;
use std::ptr;

/// Anything, kept alive (the closure and its captures).
trait Keep {}
impl<T: ?Sized> Keep for T {}

/// An instantiated CUDA graph: the launches one closure queued, replayable.
///
/// `'a` is the lifetime of what the captured work borrowed (buffers, the
/// stream); the graph cannot outlive it.
pub struct Graph<'a> {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
    nodes: usize,
    _work: Box<dyn Keep + 'a>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("nodes", &self.nodes).finish_non_exhaustive()
    }
}

/// Ends a capture that did not finish normally (an error or a panic in the
/// work), so the stream is usable again, and destroys the partial graph.
struct CaptureGuard {
    stream: cu::CUstream,
    armed: bool,
}

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        if self.armed {
            let mut graph = ptr::null_mut();
            // SAFETY: the stream is capturing (begun by `capture`); ending it
            // returns the partial graph, or null if the capture was invalidated.
            unsafe {
                let _ = cu::cuStreamEndCapture(self.stream, &mut graph);
                if !graph.is_null() {
                    let _ = cu::cuGraphDestroy(graph);
                }
            }
        }
    }
}

/// Records the work `work` queues on `stream` (kernel launches, async copies)
/// into a graph, without running it, and instantiates it.
///
/// `work` runs once, now. It must queue only on `stream`; it must not
/// synchronise, allocate or free device memory, or copy synchronously: the
/// driver refuses those during a capture, and the error is returned (the
/// stream is left usable). An error from `work` itself is returned as is.
///
/// Errors: [`Error::CaptureNeedsNonBlockingStream`] unless `stream` was made
/// non-blocking (see [the module documentation](self)).
pub fn capture<'a, F>(stream: &'a Stream<'_>, mut work: F) -> Result<Graph<'a>>
where
    F: FnMut() -> Result<()> + 'a,
{
    if stream.is_blocking()? {
        return Err(Error::CaptureNeedsNonBlockingStream);
    }
    stream.gpu().bind()?;
    let raw = stream.as_cust().as_inner();
    // SAFETY: a live non-blocking stream (never the legacy default stream,
    // which cannot be captured). Thread-local mode: calls other threads
    // make meanwhile are not recorded and not refused.
    check("cuStreamBeginCapture", unsafe {
        cu::cuStreamBeginCapture_v2(raw, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    })?;
    let mut guard = CaptureGuard { stream: raw, armed: true };
    work()?;
    guard.armed = false;
    let mut graph = ptr::null_mut();
    // SAFETY: the stream is capturing; on success `graph` is a new graph we own.
    check("cuStreamEndCapture", unsafe { cu::cuStreamEndCapture(raw, &mut graph) })?;
    let mut exec = ptr::null_mut();
    // SAFETY: `graph` is valid; flags 0.
    let instantiated = check("cuGraphInstantiate", unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
    let mut nodes = 0usize;
    let counted = instantiated.and_then(|()| {
        // SAFETY: a null node array asks only for the count.
        check("cuGraphGetNodes", unsafe { cu::cuGraphGetNodes(graph, ptr::null_mut(), &mut nodes) })
    });
    let built = Graph { graph, exec, nodes, _work: Box::new(work) };
    counted.map(|()| built)
}

impl Graph<'_> {
    /// Queues one replay of the whole graph on `stream` (any stream of the
    /// same GPU). Replays on one stream run in order, like launches.
    pub fn launch(&self, stream: &Stream<'_>) -> Result<()> {
        stream.gpu().bind()?;
        // SAFETY: `exec` is a live executable graph; every buffer it touches
        // is kept borrowed or owned by `self` (see the module docs).
        check("cuGraphLaunch", unsafe { cu::cuGraphLaunch(self.exec, stream.as_cust().as_inner()) })
    }

    /// Nodes in the graph: one per captured kernel launch or copy.
    pub fn node_count(&self) -> usize {
        self.nodes
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // SAFETY: we own both handles (null when instantiation failed); the
        // driver defers the destruction of a graph still running until it ends.
        unsafe {
            if !self.exec.is_null() {
                let _ = cu::cuGraphExecDestroy(self.exec);
            }
            if !self.graph.is_null() {
                let _ = cu::cuGraphDestroy(self.graph);
            }
        }
    }
}
