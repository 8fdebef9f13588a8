//! Matrix transpose, `out[c][r] = in[r][c]`, f32, row-major, in three steps.
//!
//! A transpose does no arithmetic: it is a copy whose read and write orders
//! disagree, so its only cost is memory traffic and the only question is how
//! close it gets to a plain device-to-device copy of the same bytes.
//!
//! | step | kernel | idea | what it costs |
//! | --- | --- | --- | --- |
//! | 1 | [`naive`] | one element per thread, straight from global to global | reads coalesce, writes stride by `rows` floats: 32 sectors per warp store |
//! | 2 | [`tiled`] | stage a 32x32 tile in shared memory so both global sides coalesce | reading the tile by column hits one bank 32 times: 32-way bank conflicts |
//! | 3 | [`padded`] | the same tile with one extra column (`TILE + 1`) | none of the above; 4 bytes of shared memory per tile row |
//!
//! All three use the same geometry so that the measurement isolates the idea:
//! a block of `TILE x BLOCK_ROWS` threads handles one `TILE x TILE` tile, each
//! thread `TILE / BLOCK_ROWS` elements of it.

#[path = "01_naive.rs"]
mod naive_kernel;
#[path = "03_padded.rs"]
mod padded_kernel;
#[path = "02_tiled.rs"]
mod tiled_kernel;

pub use naive_kernel::naive;
pub use padded_kernel::padded;
pub use tiled_kernel::tiled;

use crate::{Dim3, LaunchDims, ThreadCtx};

/// Side of the square tile one block transposes.
pub const TILE: u32 = 32;
/// Rows of threads per block; each thread covers `TILE / BLOCK_ROWS` rows of the tile.
pub const BLOCK_ROWS: u32 = 8;

/// The transpose versions, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    Naive,
    Tiled,
    Padded,
}

impl Variant {
    /// Every version, in teaching order.
    pub const ALL: [Variant; 3] = [Variant::Naive, Variant::Tiled, Variant::Padded];

    /// Short name used by benches, reports and the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Tiled => "tiled",
            Variant::Padded => "padded",
        }
    }

    /// Name of the `.entry` kernel in the PTX module.
    pub const fn entry_point(self) -> &'static str {
        match self {
            Variant::Naive => "transpose_naive",
            Variant::Tiled => "transpose_tiled",
            Variant::Padded => "transpose_padded",
        }
    }

    /// Grid, block and shared memory for a `rows x cols` input. The grid is
    /// not checked against device limits here; the host does that.
    pub const fn launch_dims(self, rows: u32, cols: u32) -> LaunchDims {
        let grid = Dim3::xy(cols.div_ceil(TILE), rows.div_ceil(TILE));
        let block = Dim3::xy(TILE, BLOCK_ROWS);
        let shared_bytes = match self {
            Variant::Naive => 0,
            Variant::Tiled => TILE * TILE * 4,
            Variant::Padded => TILE * (TILE + 1) * 4,
        };
        LaunchDims { grid, block, shared_bytes }
    }

    /// Runs this version's body for the calling thread.
    ///
    /// # Safety
    /// As for each kernel: `input` holds `rows * cols` floats, `output` as
    /// many, they do not overlap, and the launch uses [`Variant::launch_dims`].
    #[inline(always)]
    pub unsafe fn run<C: ThreadCtx>(self, ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Variant::Naive => naive(ctx, input, output, rows, cols),
                Variant::Tiled => tiled(ctx, input, output, rows, cols),
                Variant::Padded => padded(ctx, input, output, rows, cols),
            }
        }
    }
}

/// The body shared by the two shared-memory versions: they differ only in the
/// row stride of the tile (`TILE` or `TILE + 1`), which is the whole lesson.
///
/// # Safety
/// See [`tiled`]; shared memory must hold `TILE * stride` floats.
#[inline(always)]
unsafe fn through_shared_tile<C: ThreadCtx, const STRIDE: usize>(
    ctx: &C,
    input: *const f32,
    output: *mut f32,
    rows: u32,
    cols: u32,
) {
    let tile = ctx.shared_mem::<f32>();
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let (tx, ty) = (t.x as usize, t.y as usize);
    let (rows, cols) = (rows as usize, cols as usize);
    let (tile_n, block_rows) = (TILE as usize, BLOCK_ROWS as usize);

    let row0 = b.y as usize * tile_n;
    let col = b.x as usize * tile_n + tx;
    // Interior tiles (all but the right and bottom edges) take a path with
    // no bounds checks, so each thread's loads issue back to back.
    let interior = row0 + tile_n <= rows && b.x as usize * tile_n + tile_n <= cols;
    const PER_THREAD: usize = (TILE / BLOCK_ROWS) as usize;

    // Load: a warp reads 32 consecutive floats of one input row (coalesced)
    // and stores them along one tile row: 32 different banks.
    if interior {
        let mut v = [0.0f32; PER_THREAD];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: interior tile: every row and column is in bounds.
            *v = unsafe { *input.add((row0 + ty + k * block_rows) * cols + col) };
        }
        for (k, v) in v.into_iter().enumerate() {
            // SAFETY: tile index < TILE * STRIDE.
            unsafe { *tile.add((ty + k * block_rows) * STRIDE + tx) = v };
        }
    } else {
        for k in 0..PER_THREAD {
            let j = ty + k * block_rows;
            let row = row0 + j;
            if row < rows && col < cols {
                // SAFETY: row < rows, col < cols; tile index < TILE * STRIDE.
                unsafe { *tile.add(j * STRIDE + tx) = *input.add(row * cols + col) };
            }
        }
    }
    ctx.sync_threads();

    // Store: a warp writes 32 consecutive floats of one output row (coalesced)
    // and reads them down one tile column: addresses STRIDE floats apart,
    // which is one bank (STRIDE = 32) or 32 banks (STRIDE = 33).
    let out_col = row0 + tx; // an input row
    let out_row0 = b.x as usize * tile_n; // an input column
    for k in 0..PER_THREAD {
        let j = ty + k * block_rows;
        let out_row = out_row0 + j;
        if interior || (out_row < cols && out_col < rows) {
            // SAFETY: out_row < cols, out_col < rows: inside the rows x cols output.
            unsafe { *output.add(out_row * rows + out_col) = *tile.add(tx * STRIDE + j) };
        }
    }
}
