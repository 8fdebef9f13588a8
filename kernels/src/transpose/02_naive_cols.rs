//! Step 2: naive transpose the other way round.
//!
//! **Idea:** step 1 with the thread mapping flipped: the 32 threads of a warp
//! now have consecutive *output* columns, so the warp writes 128 contiguous
//! bytes (coalesced) and reads 32 floats `cols * 4` bytes apart.
//!
//! **What it teaches:** which side to leave uncoalesced is not a matter of
//! taste. A strided load makes the warp wait for 32 separate sectors before
//! it can go on; a strided store is fire-and-forget, and L2 can merge the
//! partial sectors of neighbouring warps before they reach DRAM. Measure both.

use super::{BLOCK_ROWS, TILE};
use crate::ThreadCtx;

/// Transposes a `rows x cols` row-major matrix into `cols x rows`, threads
/// mapped along the output.
///
/// # Parameters
/// As [`super::naive`].
///
/// # Thread mapping
/// Block `TILE x BLOCK_ROWS`, grid `ceil(rows/TILE) x ceil(cols/TILE)` (the
/// output's tiles); thread `(tx, ty)` of block `(bx, by)` writes output row
/// `by*TILE + ty + k*BLOCK_ROWS`, column `bx*TILE + tx`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn naive_cols<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    const PER_THREAD: usize = (TILE / BLOCK_ROWS) as usize;
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (rows, cols) = (rows as usize, cols as usize);
    // Output is cols x rows: out_col indexes input rows, out_row input columns.
    let out_col = (b.x * TILE + t.x) as usize;
    let out_row0 = (b.y * TILE) as usize;
    if out_col >= rows {
        return;
    }
    let out_row_of = |k: usize| out_row0 + t.y as usize + k * BLOCK_ROWS as usize;
    if out_row0 + TILE as usize <= cols {
        let mut v = [0.0f32; PER_THREAD];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: out_row_of(k) < cols and out_col < rows.
            *v = unsafe { *input.add(out_col * cols + out_row_of(k)) };
        }
        for (k, v) in v.into_iter().enumerate() {
            // SAFETY: as above, in the cols x rows output.
            unsafe { *output.add(out_row_of(k) * rows + out_col) = v };
        }
    } else {
        for k in 0..PER_THREAD {
            let out_row = out_row_of(k);
            if out_row < cols {
                // SAFETY: out_row < cols and out_col < rows.
                unsafe { *output.add(out_row * rows + out_col) = *input.add(out_col * cols + out_row) };
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn transpose_naive_cols(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: the host launcher checked lengths and launch geometry.
    unsafe { naive_cols(&crate::gpu::Gpu, input, output, rows, cols) }
}
