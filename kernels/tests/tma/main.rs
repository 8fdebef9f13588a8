//! The emulator's mbarriers and bulk tensor copies (TMA), and what its
//! checker makes of them. One test binary (`cargo test -p coalesce-kernels
//! --test tma`), one idea per file:
//!
//! - `maps.rs`: tensor maps: [`TmaMap`] encodes and decodes, and refuses
//!   what is not one; the 128-byte swizzle puts each element where the
//!   `wgmma` descriptors of the same layout read it.
//! - `pipelines.rs`: kernels that synchronise through mbarriers run with no
//!   finding and the right output: a 2-stage producer/consumer pipeline
//!   over several phases (consumers read through views), copies at the
//!   tensor's edges (zeros outside, negative coordinates), and `wgmma`s on
//!   copied operands over two rounds of one stage.
//! - `findings.rs`: kernels broken on purpose are caught by the checker: a
//!   read that no wait orders after the copy (a `sync_threads` is not
//!   enough, a skipped wait), a stage released before it is read (races,
//!   at the right lines), a copy to a misaligned or too short destination,
//!   a view on a barrier's bytes.
//! - `errors.rs`: kernels broken on purpose fail the launch: a wait that
//!   can never complete and barriers that can never meet (errors, not
//!   hangs), a barrier never initialised, a map that is not one.
//!
//! The helpers below (tensors, their maps, a checked launch, the line of a
//! marker comment) are the files' common ground.

mod errors;
mod findings;
mod maps;
mod pipelines;

use coalesce_kernels::emu::{self, EmuCtx, Report, TmaMap, TmaSwizzle};
use coalesce_kernels::vector::F4;
use coalesce_kernels::{Dim3, LaunchDims};

/// The sources whose lines findings are checked against.
const SOURCES: [&str; 2] = [include_str!("pipelines.rs"), include_str!("findings.rs")];

/// The line, in its file of [`SOURCES`], that ends with the comment
/// `marker` (one line in all of them).
fn line_of(marker: &str) -> u32 {
    let quoted = format!("\"{marker}");
    let mut lines = SOURCES
        .iter()
        .flat_map(|src| src.lines().enumerate())
        .filter(|(_, l)| l.ends_with(marker) && !l.contains(&quoted));
    let (i, _) = lines.next().unwrap_or_else(|| panic!("no line ends with {marker:?}"));
    assert!(lines.next().is_none(), "more than one line ends with {marker:?}");
    i as u32 + 1
}

fn dims(threads: u32, shared_bytes: u32) -> LaunchDims {
    LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(threads, 1), shared_bytes }
}

/// Floats in a 16-byte aligned buffer, as `cuMemAlloc` gives them (a
/// tensor map's base must be).
struct Floats(Vec<F4>, usize);

impl core::ops::Deref for Floats {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: the F4s are contiguous floats, at least `self.1` of them.
        unsafe { core::slice::from_raw_parts(self.0.as_ptr().cast(), self.1) }
    }
}

fn aligned(v: &[f32]) -> Floats {
    let mut buf = vec![F4::ZERO; v.len().div_ceil(4)];
    for (i, &x) in v.iter().enumerate() {
        buf[i / 4].0[i % 4] = x;
    }
    Floats(buf, v.len())
}

/// A `rows x cols` tensor of distinct floats (1-based, so that a zero
/// stands out), rows `stride` floats apart (the padding is NaN).
fn tensor(rows: usize, cols: usize, stride: usize) -> Floats {
    let mut t = vec![f32::NAN; rows * stride];
    for r in 0..rows {
        for c in 0..cols {
            t[r * stride + c] = (1 + r * cols + c) as f32;
        }
    }
    aligned(&t)
}

/// The map of `t` (as [`tensor`] made it), with a `box_cols x box_rows` box.
fn map_of(
    t: &[f32], (rows, cols, stride): (usize, usize, usize), (box_cols, box_rows): (u32, u32), swizzle: TmaSwizzle,
) -> TmaMap {
    TmaMap {
        base: t.as_ptr() as u64,
        cols: cols as u32,
        rows: rows as u32,
        row_stride: 4 * stride as u64,
        box_cols,
        box_rows,
        swizzle,
        tf32: false,
    }
}

/// The launch's report; the launch must not fail otherwise.
fn run<F: Fn(&EmuCtx<'_>) + Sync>(dims: LaunchDims, kernel: F) -> Report {
    emu::launch_checked(dims, kernel).unwrap_or_else(|e| panic!("{e}"))
}
