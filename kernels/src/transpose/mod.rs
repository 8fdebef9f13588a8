//! Matrix transpose, `out[c][r] = in[r][c]`, f32, row-major: a ladder of
//! versions, each one idea.
//!
//! A transpose does no arithmetic: it is a copy whose read and write orders
//! disagree, so its only cost is memory traffic and the only question is how
//! close it gets to a plain device-to-device copy of the same bytes.
//!
//! | step | kernel | idea | what it costs |
//! | --- | --- | --- | --- |
//! | 1 | [`naive`] | one thread per element, global to global, threads along input rows | reads coalesce, writes stride by `rows` floats: 32 sectors per warp store |
//! | 2 | [`naive_cols`] | the same, threads along output rows | writes coalesce, reads stride: 32 sectors per warp load |
//! | 3 | [`tiled`] | stage a 32x32 tile in shared memory so both global sides coalesce | reading the tile by column hits one bank 32 times: 32-way bank conflicts |
//! | 4 | [`padded`] | the same tile with one extra column (`TILE + 1`) | 4 bytes of shared memory per tile row |
//! | 5 | [`swizzled`] | the same tile, columns XOR-permuted per row instead of padded | an XOR per shared access |
//! | 6 | [`vec4`] | 64x64 tile, 16-byte global loads and stores, 16 elements per thread | needs rows and cols multiples of 4 for the vector path (else a scalar path) |
//!
//! Steps 1 and 3-5 share one geometry (a `TILE x BLOCK_ROWS` block per
//! `TILE x TILE` tile, `TILE / BLOCK_ROWS` elements per thread) so that the
//! measurements isolate the idea; step 2 mirrors step 1's grid.

#[path = "02_naive_cols.rs"]
mod naive_cols_kernel;
#[path = "01_naive.rs"]
mod naive_kernel;
#[path = "04_padded.rs"]
mod padded_kernel;
#[path = "05_swizzled.rs"]
mod swizzled_kernel;
#[path = "03_tiled.rs"]
mod tiled_kernel;
#[path = "06_vec4.rs"]
mod vec4_kernel;

pub use naive_cols_kernel::naive_cols;
pub use naive_kernel::naive;
pub use padded_kernel::padded;
pub use swizzled_kernel::swizzled;
pub use tiled_kernel::tiled;
pub use vec4_kernel::{VEC4_BLOCK, VEC4_SHARED_STRIDE, VEC4_TILE, vec4};

use crate::{Dim3, LaunchDims, ThreadCtx};

/// The `.entry` kernels of this module, one per [`Variant`].
pub const ENTRIES: &[&str] = &crate::entries_of_variants!(Variant);

/// Side of the square tile one block transposes (steps 1-5).
pub const TILE: u32 = 32;
/// Rows of threads per block; each thread covers `TILE / BLOCK_ROWS` rows of the tile.
pub const BLOCK_ROWS: u32 = 8;

/// The transpose versions, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    Naive,
    NaiveCols,
    Tiled,
    Padded,
    Swizzled,
    Vec4,
}

impl Variant {
    /// Every version, in teaching order.
    pub const ALL: [Variant; 6] =
        [Variant::Naive, Variant::NaiveCols, Variant::Tiled, Variant::Padded, Variant::Swizzled, Variant::Vec4];

    /// The fastest version: what `MatrixView::contiguous` and the report's
    /// headline use.
    pub const BEST: Variant = Variant::Vec4;

    /// Short name used by benches, reports and the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::NaiveCols => "naive_cols",
            Variant::Tiled => "tiled",
            Variant::Padded => "padded",
            Variant::Swizzled => "swizzled",
            Variant::Vec4 => "vec4",
        }
    }

    /// Name of the `.entry` kernel in the PTX module.
    pub const fn entry_point(self) -> &'static str {
        match self {
            Variant::Naive => "transpose_naive",
            Variant::NaiveCols => "transpose_naive_cols",
            Variant::Tiled => "transpose_tiled",
            Variant::Padded => "transpose_padded",
            Variant::Swizzled => "transpose_swizzled",
            Variant::Vec4 => "transpose_vec4",
        }
    }

    /// Grid, block and shared memory for a `rows x cols` input. The grid is
    /// not checked against device limits here; the host does that.
    pub const fn launch_dims(self, rows: u32, cols: u32) -> LaunchDims {
        let tiles = Dim3::xy(cols.div_ceil(TILE), rows.div_ceil(TILE));
        let block = Dim3::xy(TILE, BLOCK_ROWS);
        let (grid, block, shared_floats) = match self {
            Variant::Naive => (tiles, block, 0),
            // Threads run along output rows: the grid covers the output.
            Variant::NaiveCols => (Dim3::xy(rows.div_ceil(TILE), cols.div_ceil(TILE)), block, 0),
            Variant::Tiled | Variant::Swizzled => (tiles, block, TILE * TILE),
            Variant::Padded => (tiles, block, TILE * (TILE + 1)),
            Variant::Vec4 => (
                Dim3::xy(cols.div_ceil(VEC4_TILE), rows.div_ceil(VEC4_TILE)),
                VEC4_BLOCK,
                VEC4_TILE * VEC4_SHARED_STRIDE,
            ),
        };
        LaunchDims { grid, block, shared_bytes: shared_floats * 4 }
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
                Variant::NaiveCols => naive_cols(ctx, input, output, rows, cols),
                Variant::Tiled => tiled(ctx, input, output, rows, cols),
                Variant::Padded => padded(ctx, input, output, rows, cols),
                Variant::Swizzled => swizzled(ctx, input, output, rows, cols),
                Variant::Vec4 => vec4(ctx, input, output, rows, cols),
            }
        }
    }
}

/// Where element `(row, col)` of a `TILE x TILE` tile lives in shared memory.
/// Steps 3, 4 and 5 differ only in this function: it is the whole lesson.
pub trait TileLayout {
    fn at(row: usize, col: usize) -> usize;
}

/// Step 3: `[32][32]`, row-major. A column is 32 floats apart: one bank.
pub struct PlainTile;
/// Step 4: `[32][33]`. A column steps 33 floats: 33 mod 32 = 1 bank apart.
pub struct PaddedTile;
/// Step 5: `[32][32]` with column `col ^ row`: within a row the XOR is a
/// permutation (rows still hit 32 banks), down a column it spreads the
/// 32 rows over 32 banks.
pub struct SwizzledTile;

impl TileLayout for PlainTile {
    #[inline(always)]
    fn at(row: usize, col: usize) -> usize {
        row * TILE as usize + col
    }
}
impl TileLayout for PaddedTile {
    #[inline(always)]
    fn at(row: usize, col: usize) -> usize {
        row * (TILE as usize + 1) + col
    }
}
impl TileLayout for SwizzledTile {
    #[inline(always)]
    fn at(row: usize, col: usize) -> usize {
        row * TILE as usize + (col ^ row)
    }
}

/// The body shared by the shared-memory versions (steps 3-5).
///
/// # Safety
/// As [`tiled`]; shared memory must hold every index `L::at` yields.
#[inline(always)]
unsafe fn through_shared_tile<C: ThreadCtx, L: TileLayout>(
    ctx: &C,
    input: *const f32,
    output: *mut f32,
    rows: u32,
    cols: u32,
) {
    const PER_THREAD: usize = (TILE / BLOCK_ROWS) as usize;
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

    // Load: a warp reads 32 consecutive floats of one input row (coalesced)
    // and stores them along one tile row.
    if interior {
        let mut v = [0.0f32; PER_THREAD];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: interior tile: every row and column is in bounds.
            *v = unsafe { *input.add((row0 + ty + k * block_rows) * cols + col) };
        }
        for (k, v) in v.into_iter().enumerate() {
            // SAFETY: L::at stays inside the tile's shared memory.
            unsafe { *tile.add(L::at(ty + k * block_rows, tx)) = v };
        }
    } else {
        for k in 0..PER_THREAD {
            let j = ty + k * block_rows;
            let row = row0 + j;
            if row < rows && col < cols {
                // SAFETY: row < rows, col < cols; L::at inside the tile.
                unsafe { *tile.add(L::at(j, tx)) = *input.add(row * cols + col) };
            }
        }
    }
    ctx.sync_threads();

    // Store: a warp writes 32 consecutive floats of one output row (coalesced)
    // and reads them down one tile column: where the bank conflicts are.
    let out_col = row0 + tx; // an input row
    let out_row0 = b.x as usize * tile_n; // an input column
    for k in 0..PER_THREAD {
        let j = ty + k * block_rows;
        let out_row = out_row0 + j;
        if interior || (out_row < cols && out_col < rows) {
            // SAFETY: out_row < cols, out_col < rows: inside the rows x cols output.
            unsafe { *output.add(out_row * rows + out_col) = *tile.add(L::at(tx, j)) };
        }
    }
}
