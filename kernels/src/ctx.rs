//! What a kernel body may ask of the thread running it.

/// A CUDA-style 3D extent or index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }
    pub const fn xy(x: u32, y: u32) -> Self {
        Dim3 { x, y, z: 1 }
    }
    /// Number of points in the extent (as u64: a grid can exceed u32).
    pub const fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    pub grid: Dim3,
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

/// The thread's view of the machine: on the GPU each method is one PTX
/// instruction; on the host emulator each is backed by real threads.
///
/// Kernel bodies take `&impl ThreadCtx` and nothing else machine-specific, so
/// the same code is compiled to PTX and run in CPU tests.
pub trait ThreadCtx {
    /// `threadIdx`
    fn thread_idx(&self) -> Dim3;
    /// `blockIdx`
    fn block_idx(&self) -> Dim3;
    /// `blockDim`
    fn block_dim(&self) -> Dim3;
    /// `gridDim`
    fn grid_dim(&self) -> Dim3;
    /// `__syncthreads()`: every thread of the block must reach the same call.
    fn sync_threads(&self);
    /// Start of this block's dynamic shared memory (`extern __shared__`),
    /// sized by the launch's [`LaunchDims::shared_bytes`] and aligned to at
    /// least `align_of::<T>()` (the emulator gives 16 bytes).
    fn shared_mem<T>(&self) -> *mut T;
    /// `__shfl_xor_sync(0xffffffff, value, lane_mask)`: all 32 lanes of the
    /// warp must take part.
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32;
    /// `cp.async.cg.shared.global [dst], [src], 16`: starts copying 16 bytes
    /// from global to shared memory without holding them in registers, so a
    /// thread can have many such copies in flight. This thread may read
    /// `dst` only after [`ThreadCtx::wait_async_copies`] (the emulator copies
    /// at once).
    ///
    /// # Safety
    /// `dst` 16-byte aligned inside this block's shared memory, `src`
    /// 16-byte aligned and valid for 16 bytes of global memory.
    unsafe fn copy_async_16(&self, dst: *mut f32, src: *const f32);
    /// `cp.async.commit_group; cp.async.wait_group 0`: waits until every
    /// copy this thread started has landed (other threads' copies need a
    /// barrier besides).
    fn wait_async_copies(&self);
}
