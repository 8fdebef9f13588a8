//! What a GEMM launch does, decided on the host for the GPU and the
//! emulator alike: the checks, and which step runs for a shape ([`Plan`]).

use super::{AlphaBeta, GemmShape, Variant};
use crate::{GridLimits, LaunchDims, Result};
use coalesce_kernels::gemm::Feed;

/// What a GEMM launch runs, once its buffers are checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Plan {
    /// `m = 0` or `n = 0` (`C` has no element), or `k = 0` with `beta ==
    /// 1` (`C = C`): nothing.
    Nothing,
    /// The product by a step with these scalars: the version asked for,
    /// or step 7 where that version cannot give FP32's result
    /// ([`fp32_for`]); for `k = 0`, `C = beta * C` by step 1 with `alpha =
    /// 0` and no terms (its epilogue writes `0` where `beta == 0`, without
    /// reading `C`, and `+0` is added whatever `alpha` is, as BLAS's). Every
    /// module has step 1, and the TMA steps cannot describe a 0-wide operand.
    Product(Variant, LaunchDims, AlphaBeta),
    /// The same by a TMA step, fed as it declares ([`super::run`]).
    Tma(Variant, Feed, LaunchDims),
}

/// The version that computes `C = alpha * A * B + beta * C` for `variant`:
/// itself, but for a TMA step that fixes up (13, 15, 16, 17) with a non-finite
/// `alpha`, which step 7 ([`Variant::DoubleBuffered`], FP32 FMAs, in every
/// module) computes instead. Such a step's fix-up (`gemm_fixup`) rebuilds
/// the elements of inputs holding an inf or NaN from the product's value
/// `alpha * acc + beta * C0`, taking it to be non-finite only where
/// `beta * C0` is; with `alpha` inf or NaN every element is non-finite, so
/// `beta * C0` is lost (an inf row of `A` would come out NaN where FP32
/// gives inf). Every element of such a product is inf or NaN, and step 7's
/// are FP32's.
pub(crate) fn fp32_for(variant: Variant, scalars: AlphaBeta) -> Variant {
    let fixes_up = variant.geometry().tma_fixes_up();
    if fixes_up && !scalars.alpha.is_finite() { Variant::DoubleBuffered } else { variant }
}

/// Checks buffer lengths against `shape` and the launch against `limits`;
/// returns what to launch on a GPU of `sm_count` SMs (a step that splits
/// `K` gets its runs as the grid's `z`, [`coalesce_kernels::gemm::split_k`]).
/// Shared by the GPU and emulator launchers.
pub(crate) fn plan(
    variant: Variant, shape: GemmShape, lens: (usize, usize, usize), scalars: AlphaBeta, limits: &GridLimits,
    sm_count: u32,
) -> Result<Plan> {
    shape.a().check_len("A", lens.0)?;
    shape.b().check_len("B", lens.1)?;
    shape.c().check_len("C", lens.2)?;
    if shape.c().is_empty() || (shape.k() == 0 && scalars.beta == 1.0) {
        return Ok(Plan::Nothing);
    }
    let (m, n) = (shape.m() as u32, shape.n() as u32);
    if shape.k() == 0 {
        let dims = Variant::Naive.launch_dims(m, n);
        limits.check(Variant::Naive.entry_point(), &shape, dims)?;
        return Ok(Plan::Product(Variant::Naive, dims, AlphaBeta { alpha: 0.0, beta: scalars.beta }));
    }
    let variant = fp32_for(variant, scalars);
    let mut dims = variant.launch_dims(m, n);
    // The passes over `K` of a TMA step's tile (tiles of `TMA_BK`).
    let k_tiles = shape.k().div_ceil(coalesce_kernels::gemm::TMA_BK as usize).min(u32::MAX as usize) as u32;
    if variant.geometry().splits_k {
        dims.grid.z =
            coalesce_kernels::gemm::split_k::splits_for(dims.grid.x.saturating_mul(dims.grid.y), k_tiles, sm_count);
    }
    // The grid of one block a tile is what the limits judge, walking or not.
    limits.check(variant.entry_point(), &shape, dims)?;
    // More tiles than SMs, unsplit, few passes a tile: one block an SM, each
    // walking its tiles, so that no tile waits for a block to start and fill
    // its pipeline.
    if dims.grid.z == 1 && variant.geometry().walks(dims.grid.x.saturating_mul(dims.grid.y), k_tiles, sm_count) {
        dims.grid = coalesce_kernels::Dim3::xy(sm_count.max(1), 1);
    }
    Ok(variant.geometry().feed.map_or(Plan::Product(variant, dims, scalars), |feed| Plan::Tma(variant, feed, dims)))
}
