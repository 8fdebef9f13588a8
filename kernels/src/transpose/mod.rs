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
//! tile size; step 8 is step 7's body ([`vec4_with`]) with its grid over the
//! output's tiles, as step 2 is step 1's.

use crate::registry::ladder;
use crate::{Dim3, LaunchDims};

/// The transpose ladder, handed to a generator (`ladder!` here, the
/// launchers in `coalesce-host`): each step's idea, variant, name, place
/// and file (see [`crate::registry`]).
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

            /// one thread per element, global to global, threads along input rows: strided writes
            Naive => naive: "1" in "01_naive.rs";
            /// the same, threads along output rows: strided reads
            NaiveCols => naive_cols: "2" in "02_naive_cols.rs";
            /// stage a 32x32 tile in shared memory so both global sides coalesce; its columns sit in one bank
            Tiled => tiled: "3" in "03_tiled.rs";
            /// the same tile with one extra column (`TILE + 1`): a column spans 32 banks
            Padded => padded: "4" in "04_padded.rs";
            /// the same tile, columns XOR-permuted per row (`col ^ row`) instead of padded
            Swizzled => swizzled: "5" in "05_swizzled.rs";
            /// step 4 on a 64x64 tile: 16 loads in flight per thread instead of 4
            Wide => wide: "6" in "06_wide.rs";
            /// step 6 with 16-byte global loads and stores: 4 per thread instead of 16
            Vec4 => vec4: "7" in "07_vec4.rs";
            /// step 7 with its grid over the output's tiles: the blocks running at once write whole output rows
            Vec4Cols => vec4_cols: "8" in "08_vec4_cols.rs";
        }
    };
}
transpose_steps!(ladder);

pub use padded::Padded;
pub use swizzled::Swizzled;
pub use tiled::{Plain, TileLayout, tiled_with};
pub use vec4::{VEC4_BLOCK, vec4_with};
pub use wide::{WIDE_BLOCK_ROWS, WIDE_TILE};

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
    /// No transpose needs more than 48 KiB of shared memory.
    pub const fn opt_in_shared(self) -> bool {
        false
    }

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
    /// The fastest version: what `MatrixView::contiguous` uses. Its grid's y
    /// counts the input's tile columns, so the host refuses more than
    /// 4,194,240 columns (`Error::GridTooLarge`), where step 7, over the
    /// input's tiles, refuses as many rows.
    pub const BEST: Variant = Variant::Vec4Cols;

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
