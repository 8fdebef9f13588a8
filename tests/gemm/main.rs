//! Every GEMM version against a float64 reference: on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present).
//!
//! One test binary (`cargo test --test gemm`), one idea per file:
//!
//! - `reference.rs`: the f64 reference and each version's error bound, and
//!   why the bounds are what they are;
//! - `emulator.rs`: every version on the emulator at odd shapes, at every
//!   kind of edge and on misaligned buffers;
//! - `gpu.rs`: the same on the GPU, at large shapes and at 4096^3, and the
//!   TMA steps in a CUDA graph and beside another thread;
//! - `tensor_cores.rs`: TF32 rounding and splitting, the `wgmma`
//!   descriptors, and the tensor cores' truncation, on the emulator;
//! - `counters.rs`: steps 1-8 under the emulator's checker, and what each
//!   step changes in its memory counters;
//! - `specials.rs`: special values and subnormals, as FP32 gives them, and
//!   `gemm_pack`'s split;
//! - `ozaki.rs`: step 17 against the Ozaki scheme's arithmetic, bit for
//!   bit;
//! - `empty.rs`: empty products, as BLAS defines them;
//! - `shapes.rs`: the shapes and buffers the launchers refuse, and the
//!   shape accessors;
//! - `sgemm.rs`: which version `sgemm` runs with which PTX module;
//! - `split_k.rs`: step 15's split `K`, how many runs a shape gets and
//!   the split products;
//! - `walk.rs`: step 15's blocks walking several tiles each, where `C`
//!   has more tiles than the GPU has SMs.
//!
//! The shapes and scalars here are shared by the emulator's tests and the
//! GPU's.

#[path = "../common/mod.rs"]
mod common;
mod counters;
mod emulator;
mod empty;
mod gpu;
mod ozaki;
mod reference;
mod sgemm;
mod shapes;
mod specials;
mod split_k;
mod tensor_cores;
mod walk;

use coalesce::gemm::{AlphaBeta, Variant};

/// Shapes for step 7's three ways of loading a block (INTERIOR, EDGE,
/// CHECKED in `07_double_buffered.rs`): `N < 4` over several `K` tiles
/// (checked loads), a vector crossing `N` near the end of `B` (the shifted
/// window of `load_b_clamped`: shifts 1, 2 and 3), `N = 4` exactly, every
/// `K` residue from 1 to 7 and none, and blocks past `M` and `N` in a
/// second block row and column.
#[rustfmt::skip] // a table: three shapes a row
const EDGE_SHAPES: [(usize, usize, usize); 9] = [
    (5, 3, 21), (9, 1, 40), (2, 6, 9),
    (3, 4, 17), (7, 7, 26), (130, 259, 23),
    (129, 257, 16), (33, 5, 44), (12, 263, 11),
];

/// Shapes for steps 9-17 (`wgmma`, 128x256 tiles, 128x128 for steps 11,
/// 13, 15 and 16, 256x128 for 14, 32 deep, 128 for 17): `K = 1`, `N < 4` (checked
/// loads of `B` everywhere), `K` below, at and past one tile with residues,
/// `M` and `N` just past a tile (a second block row and column that is
/// almost empty), `N` a multiple of 4 just past 128 (step 11's second block
/// column, vector rows, not whole), and a shape whose interior blocks take
/// the vector paths.
#[rustfmt::skip] // a table: three shapes a row
const WGMMA_SHAPES: [(usize, usize, usize); 9] = [
    (1, 1, 1), (5, 3, 1), (9, 1, 40),
    (3, 2, 33), (130, 259, 33), (129, 257, 64),
    (64, 300, 7), (192, 132, 97), (256, 512, 96),
];

/// The steps whose registry entry and geometry `pick` accepts, in ladder
/// order: the sets of steps the tests run are queries, so that a new step
/// joins the tests its launch and precision call for.
fn steps(pick: impl Fn(&Variant) -> bool) -> Vec<Variant> {
    Variant::ALL.into_iter().filter(pick).collect()
}

/// The steps that run `wgmma`: those only the `sm_90a` module has.
fn wgmma_steps() -> Vec<Variant> {
    steps(|v| v.registry().needs == Some("sm_90a"))
}

/// The steps that read their operands through TMA tensor maps.
fn tma_steps() -> Vec<Variant> {
    steps(|v| v.geometry().tma())
}

/// The steps that may split `K` (one run a block, summed after).
fn split_k_steps() -> Vec<Variant> {
    steps(|v| v.geometry().splits_k)
}

/// The steps whose blocks walk tiles where `C` has many tiles of few passes.
fn walking_steps() -> Vec<Variant> {
    steps(|v| v.geometry().walks_tiles > 0)
}

/// What `sgemm` may run, step 7 ([`Variant::BEST`], every module) and the
/// FP32-accurate steps fed by the TMA (`sm_90a`), and step 17: the steps
/// that rebuild the elements of non-finite inputs after their product
/// (`gemm_fixup`) or compute in FP32.
fn fixup_steps() -> Vec<Variant> {
    std::iter::once(Variant::BEST).chain(steps(|v| v.geometry().tma_fixes_up())).collect()
}

/// The epilogue cases: the plain product (C is NaN-poisoned and must not be
/// read), a scaled product (also poisoned), the general update, and
/// `alpha = 0` (C scaled only).
const SCALARS: [AlphaBeta; 4] =
    [AlphaBeta::PRODUCT, AlphaBeta::new(0.5, 0.0), AlphaBeta::new(1.5, -0.75), AlphaBeta::new(0.0, 2.0)];
