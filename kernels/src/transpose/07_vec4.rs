//! Step 7: step 6 with 16-byte global loads and stores
//! (`docs/transpose.md`, "7. vec4").
//!
//! **Idea:** step 6's tile and padding, with each thread moving 4 adjacent
//! floats as one 16-byte access: four `ld.global.v4.f32` and four
//! `st.global.v4.f32` per thread instead of 16 of each, so a warp moves 512
//! bytes per instruction instead of 128. The block becomes 16x16 threads (16
//! threads of 4 floats span a tile row).
//!
//! **Shared memory:** step 6's rows of 65 floats. A 65-float row is not
//! 16-byte aligned, so the loaded vectors are stored as four scalars and the
//! column reads gather four scalars into one vector: the shared side stays
//! 4 bytes wide, where padding is as good as a swizzle. With 16 threads per
//! tile row, addresses `4 * tx` apart, both sides land 2 lanes per bank: 2
//! wavefronts per request instead of 1, which costs nothing here, since
//! shared memory has about 10x the bandwidth DRAM can feed. (16-byte shared
//! accesses would need the swizzle of step 5, at 16-byte granularity.)
//!
//! **What it costs:** the vector path needs `rows % 4 == 0`,
//! `cols % 4 == 0` and 16-byte aligned buffers (so every row starts aligned on
//! both sides); other shapes, and the right and bottom edge tiles, take a
//! scalar path with bounds checks.

use super::{Geometry, WIDE_TILE};
use crate::ThreadCtx;
use crate::vector::F4;

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry { tile: WIDE_TILE, block: VEC4_BLOCK, shared_floats: WIDE_TILE * (WIDE_TILE + 1), over_output: false };

/// 16 threads of 4 floats span a tile row; 16 rows of threads.
pub const VEC4_BLOCK: crate::Dim3 = crate::Dim3::xy(16, 16);

/// Transposes a `rows x cols` row-major matrix into `cols x rows` through a
/// `64 x 65` shared tile, with 16-byte global accesses where aligned.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: `64 * 65` floats (16.25 KiB).
///
/// # Thread mapping
/// Block 16x16, grid `ceil(cols/64) x ceil(rows/64)`. Load: thread
/// `(tx, ty)` reads input row `by*64 + ty + 16k`, columns `bx*64 + 4tx ..+4`,
/// k = 0..4. Store: it writes output row `bx*64 + ty + 16k`, columns
/// `by*64 + 4tx ..+4`.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn vec4<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; the launch is this step's geometry, over the input's tiles.
    unsafe { vec4_with::<C, false>(ctx, input, output, rows, cols) }
}

/// The body of steps 7 and 8: block `b` transposes input tile
/// `(b.y, b.x)`, or `(b.x, b.y)` where the grid covers the output's tiles
/// (`OVER_OUTPUT`, step 8).
///
/// # Safety
/// As [`super::naive`], launched with the grid its `OVER_OUTPUT` names.
#[inline(always)]
pub unsafe fn vec4_with<C: ThreadCtx, const OVER_OUTPUT: bool>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    const T: usize = WIDE_TILE as usize;
    const S: usize = T + 1; // floats per tile row, as step 6
    const STEP: usize = 16; // rows of threads
    const PASSES: usize = T / STEP;
    let tile = ctx.shared::<f32>(T * S);
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty) = (t.x as usize, t.y as usize);
    let (rows, cols) = (rows as usize, cols as usize);
    let (tile_row, tile_col) = if OVER_OUTPUT { (b.x, b.y) } else { (b.y, b.x) };
    let (row0, col0) = (tile_row as usize * T, tile_col as usize * T);
    let aligned = (input.as_ptr() as usize | output.as_ptr() as usize).is_multiple_of(16);
    let fast = aligned && rows.is_multiple_of(4) && cols.is_multiple_of(4) && row0 + T <= rows && col0 + T <= cols;

    if fast {
        let mut v = [F4([0.0; 4]); PASSES];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: interior tile; an aligned base, cols % 4 == 0 and
            // 4*tx % 4 == 0 keep the address 16-byte aligned.
            *v = unsafe { input.load_as::<F4>((row0 + ty + STEP * k) * cols + col0 + 4 * tx) };
        }
        for (k, v) in v.into_iter().enumerate() {
            for q in 0..4 {
                // SAFETY: row < T, column < T <= S: inside the tile.
                unsafe { tile.store((ty + STEP * k) * S + 4 * tx + q, v.0[q]) };
            }
        }
    } else {
        for k in 0..PASSES {
            let (r, row) = (ty + STEP * k, row0 + ty + STEP * k);
            for q in 0..4 {
                let (c, col) = (4 * tx + q, col0 + 4 * tx + q);
                if row < rows && col < cols {
                    // SAFETY: row < rows, col < cols; (r, c) inside the tile.
                    let x = unsafe { input.load(row * cols + col) };
                    // SAFETY: (r, c) inside the tile.
                    unsafe { tile.store(r * S + c, x) };
                }
            }
        }
    }
    ctx.sync_threads();

    // Output tile: rows are input columns col0.., columns are input rows row0...
    if fast {
        for k in 0..PASSES {
            let oc = ty + STEP * k; // tile-local input column = output row
            let mut v = F4([0.0; 4]);
            for (i, x) in v.0.iter_mut().enumerate() {
                // SAFETY: inside the tile.
                *x = unsafe { tile.load((4 * tx + i) * S + oc) };
            }
            // SAFETY: output row col0+oc < cols, columns row0+4tx..+4 <= rows;
            // rows % 4 == 0 keeps the address 16-byte aligned.
            unsafe { output.store_as::<F4>((col0 + oc) * rows + row0 + 4 * tx, v) };
        }
    } else {
        for k in 0..PASSES {
            let (oc, out_row) = (ty + STEP * k, col0 + ty + STEP * k);
            for i in 0..4 {
                let out_col = row0 + 4 * tx + i;
                if out_row < cols && out_col < rows {
                    // SAFETY: (4tx + i, oc) inside the tile.
                    let x = unsafe { tile.load((4 * tx + i) * S + oc) };
                    // SAFETY: out_row < cols, out_col < rows.
                    unsafe { output.store(out_row * rows + out_col, x) };
                }
            }
        }
    }
}
