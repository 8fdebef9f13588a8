//! Step 1: naive transpose.
//!
//! **Idea:** each thread copies its elements straight from `in[r][c]` to
//! `out[c][r]`; no shared memory.
//!
//! **Memory pattern:** the 32 threads of a warp have consecutive `c`, so the
//! warp reads 128 contiguous bytes of one input row (coalesced: 4 sectors) but
//! writes 32 floats that lie `rows * 4` bytes apart in the output (32 sectors,
//! each of which carries 4 useful bytes of 32). The write side moves up to 8x
//! the bytes it needs, and the caches only partly rescue it.

use super::{BLOCK_ROWS, TILE};
use crate::ThreadCtx;

/// Transposes a `rows x cols` row-major matrix into `cols x rows`.
///
/// # Parameters
/// `input`: `rows * cols` floats; `output`: `rows * cols` floats, written as
/// the `cols x rows` transpose.
///
/// # Thread mapping
/// Block `TILE x BLOCK_ROWS`, grid `ceil(cols/TILE) x ceil(rows/TILE)`; thread
/// `(tx, ty)` of block `(bx, by)` handles column `bx*TILE + tx` and rows
/// `by*TILE + ty + k*BLOCK_ROWS`.
///
/// # Safety
/// `input` and `output` must be valid for `rows * cols` floats and not
/// overlap; the launch must use [`super::Variant::launch_dims`].
#[inline(always)]
pub unsafe fn naive<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (rows, cols) = (rows as usize, cols as usize);
    let col = (b.x * TILE + t.x) as usize;
    let row0 = (b.y * TILE) as usize;
    if col >= cols {
        return;
    }
    const PER_THREAD: usize = (TILE / BLOCK_ROWS) as usize;
    let row_of = |k: usize| row0 + t.y as usize + k * BLOCK_ROWS as usize;
    if row0 + TILE as usize <= rows {
        // Interior: no bounds checks, so the four loads issue back to back.
        let mut v = [0.0f32; PER_THREAD];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: row_of(k) < rows and col < cols.
            *v = unsafe { *input.add(row_of(k) * cols + col) };
        }
        for (k, v) in v.into_iter().enumerate() {
            // SAFETY: as above, in the cols x rows output.
            unsafe { *output.add(col * rows + row_of(k)) = v };
        }
    } else {
        for k in 0..PER_THREAD {
            let row = row_of(k);
            if row < rows {
                // SAFETY: row < rows and col < cols, so both offsets are in bounds.
                unsafe { *output.add(col * rows + row) = *input.add(row * cols + col) };
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn transpose_naive(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: the host launcher checked lengths and launch geometry.
    unsafe { naive(&crate::gpu::Gpu, input, output, rows, cols) }
}
