//! [`ThreadCtx`] on the GPU: each method is one PTX special-register read or
//! instruction, and `#[inline(always)]` makes the context vanish.

use crate::{Dim3, ThreadCtx};
use core::arch::nvptx;

/// The zero-sized context of a thread running on the GPU.
pub struct Gpu;

unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.bfly.f32"]
    fn shfl_sync_bfly_f32(member_mask: u32, value: f32, lane_mask: u32, clamp: u32) -> f32;
}

impl ThreadCtx for Gpu {
    #[inline(always)]
    fn thread_idx(&self) -> Dim3 {
        // SAFETY: reading special registers has no preconditions.
        unsafe { Dim3::new(nvptx::_thread_idx_x(), nvptx::_thread_idx_y(), nvptx::_thread_idx_z()) }
    }
    #[inline(always)]
    fn block_idx(&self) -> Dim3 {
        // SAFETY: as above.
        unsafe { Dim3::new(nvptx::_block_idx_x(), nvptx::_block_idx_y(), nvptx::_block_idx_z()) }
    }
    #[inline(always)]
    fn block_dim(&self) -> Dim3 {
        // SAFETY: as above.
        unsafe { Dim3::new(nvptx::_block_dim_x(), nvptx::_block_dim_y(), nvptx::_block_dim_z()) }
    }
    #[inline(always)]
    fn grid_dim(&self) -> Dim3 {
        // SAFETY: as above.
        unsafe { Dim3::new(nvptx::_grid_dim_x(), nvptx::_grid_dim_y(), nvptx::_grid_dim_z()) }
    }
    #[inline(always)]
    fn sync_threads(&self) {
        // SAFETY: the kernel bodies call this from block-uniform control flow.
        unsafe { nvptx::_syncthreads() }
    }
    #[inline(always)]
    fn shared_mem<T>(&self) -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
    #[inline(always)]
    fn shfl_xor_f32(&self, value: f32, lane_mask: u32) -> f32 {
        // SAFETY: all lanes take part (full member mask), as the trait requires.
        unsafe { shfl_sync_bfly_f32(u32::MAX, value, lane_mask, 0x1f) }
    }
    #[inline(always)]
    unsafe fn copy_async_16(&self, dst: *mut f32, src: *const f32) {
        // Inline PTX: LLVM's cp.async intrinsics take address-space pointers,
        // which Rust cannot name. The asm is not `nomem`, so the compiler
        // treats it as touching memory and keeps it in order.
        // SAFETY: the caller's contract; the addresses are converted from
        // generic to the shared and global windows the instruction expects.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 s, g; .reg .u32 s32;",
                "cvta.to.shared.u64 s, {dst}; cvt.u32.u64 s32, s; cvta.to.global.u64 g, {src};",
                "cp.async.cg.shared.global [s32], [g], 16; }}",
                dst = in(reg64) dst,
                src = in(reg64) src,
                options(nostack),
            )
        }
    }
    #[inline(always)]
    fn wait_async_copies(&self) {
        // SAFETY: waits on this thread's own copies; no operands.
        unsafe { core::arch::asm!("cp.async.commit_group;", "cp.async.wait_group 0;", options(nostack)) }
    }
}

/// A kernel must never unwind or call into `core::panicking` (that would leave
/// an `.extern .func` in the PTX, which the driver refuses). Bodies index
/// through raw pointers; should a panic path ever survive, it traps.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; nothing to uphold.
    unsafe { nvptx::trap() }
}
