//! Matrix transpose, `out[c][r] = in[r][c]`, f32, row-major: a ladder of
//! versions, each one idea (the table is on [`Variant`]; measured in
//! `docs/transpose.md`).
//!
//! A transpose does no arithmetic: it is a copy whose read and write orders
//! disagree, so its only cost is memory traffic and the only question is how
//! close it gets to a plain device-to-device copy of the same bytes.
//!
//! Steps 1-5 share one geometry (a `TILE x BLOCK_ROWS` block per
//! `TILE x TILE` tile, `TILE / BLOCK_ROWS` elements per thread) so that the
//! measurements isolate the idea; step 2 mirrors step 1's grid. Steps 3-6
//! are one kernel body ([`tiled_with`]) with a different tile layout or
//! tile size.

use crate::registry::ladder;
use crate::{Dim3, LaunchDims};

/// The transpose ladder, handed to a generator (`ladder!` here, the
/// launchers in `coalesce-host`). See [`crate::registry`].
#[macro_export]
#[doc(hidden)]
macro_rules! transpose_steps {
    ($then:ident $($pass:tt)*) => {
        $then! {
            $($pass)*
            op: "transpose";
            /// The transpose versions, in teaching order.
            pub enum Variant, geometry Geometry;
            unsafe fn run<C>(ctx, input: *const f32, output: *mut f32, rows: u32, cols: u32);

            /// Step 1: coalesced reads, strided writes.
            Naive => naive {
                step: "1",
                idea: "one thread per element, global to global, threads along input rows: strided writes",
                entry: "transpose_naive",
                file: "transpose/01_naive.rs",
                body: naive,
                geometry: Geometry::tiles(TILE, BLOCK_ROWS, 0),
            }
            /// Step 2: strided reads, coalesced writes.
            NaiveCols => naive_cols {
                step: "2",
                idea: "the same, threads along output rows: strided reads",
                entry: "transpose_naive_cols",
                file: "transpose/02_naive_cols.rs",
                body: naive_cols,
                geometry: Geometry::tiles(TILE, BLOCK_ROWS, 0).over_output(),
            }
            /// Step 3: coalesced both ways, 32-way bank conflicts.
            Tiled => tiled {
                step: "3",
                idea: "stage a 32x32 tile in shared memory so both global sides coalesce; its columns sit in one bank",
                entry: "transpose_tiled",
                file: "transpose/03_tiled.rs",
                body: tiled,
                geometry: Geometry::tiles(TILE, BLOCK_ROWS, TILE * TILE),
            }
            /// Step 4: the tile padded by one column, conflict-free.
            Padded => padded {
                step: "4",
                idea: "the same tile with one extra column (`TILE + 1`): a column spans 32 banks",
                entry: "transpose_padded",
                file: "transpose/04_padded.rs",
                body: padded,
                geometry: Geometry::tiles(TILE, BLOCK_ROWS, TILE * (TILE + 1)),
            }
            /// Step 5: the tile XOR-swizzled, conflict-free without padding.
            Swizzled => swizzled {
                step: "5",
                idea: "the same tile, columns XOR-permuted per row (`col ^ row`) instead of padded",
                entry: "transpose_swizzled",
                file: "transpose/05_swizzled.rs",
                body: swizzled,
                geometry: Geometry::tiles(TILE, BLOCK_ROWS, TILE * TILE),
            }
            /// Step 6: step 4 on a 64x64 tile, 16 elements per thread.
            Wide => wide {
                step: "6",
                idea: "step 4 on a 64x64 tile: 16 loads in flight per thread instead of 4",
                entry: "transpose_wide",
                file: "transpose/06_wide.rs",
                body: wide,
                geometry: Geometry::tiles(WIDE_TILE, WIDE_BLOCK_ROWS, WIDE_TILE * (WIDE_TILE + 1)),
            }
            /// Step 7, the fastest: step 6 with 16-byte global accesses.
            Vec4 => vec4 {
                step: "7",
                idea: "step 6 with 16-byte global loads and stores: 4 per thread instead of 16",
                entry: "transpose_vec4",
                file: "transpose/07_vec4.rs",
                body: vec4,
                geometry: Geometry {
                    tile: WIDE_TILE,
                    block: VEC4_BLOCK,
                    shared_floats: WIDE_TILE * (WIDE_TILE + 1),
                    over_output: false,
                },
            }
        }
    };
}
transpose_steps!(ladder);

#[path = "01_naive.rs"]
mod naive_kernel;
#[path = "02_naive_cols.rs"]
mod naive_cols_kernel;
#[path = "03_tiled.rs"]
mod tiled_kernel;
#[path = "04_padded.rs"]
mod padded_kernel;
#[path = "05_swizzled.rs"]
mod swizzled_kernel;
#[path = "06_wide.rs"]
mod wide_kernel;
#[path = "07_vec4.rs"]
mod vec4_kernel;

pub use naive_cols_kernel::naive_cols;
pub use naive_kernel::naive;
pub use padded_kernel::{Padded, padded};
pub use swizzled_kernel::{Swizzled, swizzled};
pub use tiled_kernel::{Plain, TileLayout, tiled, tiled_with};
pub use vec4_kernel::{VEC4_BLOCK, vec4};
pub use wide_kernel::{WIDE_BLOCK_ROWS, WIDE_TILE, wide};

/// Side of the square tile one block transposes (steps 1-5).
pub const TILE: u32 = 32;
/// Rows of threads per block; each thread covers `TILE / BLOCK_ROWS` rows of the tile.
pub const BLOCK_ROWS: u32 = 8;

/// How a transpose version is launched: square tiles of `tile` elements,
/// one block each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Side of the square tile one block covers.
    pub tile: u32,
    /// Threads per block.
    pub block: Dim3,
    /// Floats of shared memory per block.
    pub shared_floats: u32,
    /// Whether the grid covers the output's tiles (threads along output
    /// rows) instead of the input's.
    pub over_output: bool,
}

impl Geometry {
    /// `tile x tile` tiles, `tile x block_rows` threads each.
    pub const fn tiles(tile: u32, block_rows: u32, shared_floats: u32) -> Geometry {
        Geometry { tile, block: Dim3::xy(tile, block_rows), shared_floats, over_output: false }
    }

    /// The same, with the grid over the output's tiles.
    pub const fn over_output(self) -> Geometry {
        Geometry { over_output: true, ..self }
    }
}

impl Variant {
    /// The fastest version: what `MatrixView::contiguous` and the report's
    /// headline use.
    pub const BEST: Variant = Variant::Vec4;

    /// Grid, block and shared memory for a `rows x cols` input. The grid is
    /// not checked against device limits here; the host does that.
    pub const fn launch_dims(self, rows: u32, cols: u32) -> LaunchDims {
        let g = self.geometry();
        let (across, down) = if g.over_output { (rows, cols) } else { (cols, rows) };
        LaunchDims {
            grid: Dim3::xy(across.div_ceil(g.tile), down.div_ceil(g.tile)),
            block: g.block,
            shared_bytes: g.shared_floats * 4,
        }
    }
}
