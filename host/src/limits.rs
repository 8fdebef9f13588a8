//! What a launch may ask of a GPU, and the checks every launcher makes
//! before anything reaches the driver (or the emulator): the plans are
//! shared by both, so the emulator refuses what a GPU would.

use crate::{Dim3, Error, LaunchDims, Result};

/// The largest grid a launch may use. CUDA's limits since compute capability
/// 3.0; [`Gpu::grid_limits`](crate::Gpu::grid_limits) reads the device's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridLimits {
    pub max_grid: Dim3,
    pub max_threads_per_block: u32,
    /// Dynamic shared memory a block may have without opting in (48 KiB).
    pub max_shared_bytes_per_block: u32,
    /// Dynamic shared memory a block may opt in to
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: 227 KiB on
    /// an H100). [`Gpu::load`](crate::Gpu::load) opts in the kernels of
    /// `coalesce_kernels::OPT_IN_SHARED`.
    pub max_shared_bytes_optin: u32,
}

impl GridLimits {
    /// The limits every CUDA GPU of compute capability 3.0 or later has,
    /// with the opt-in shared memory of sm_90 (the default build target): the
    /// emulator enforces these, so that CPU tests reject what an H100 would.
    pub const CUDA: GridLimits = GridLimits {
        max_grid: Dim3::new(i32::MAX as u32, 65_535, 65_535),
        max_threads_per_block: 1024,
        max_shared_bytes_per_block: 48 * 1024,
        max_shared_bytes_optin: 227 * 1024,
    };

    /// Checks a launch against these limits.
    pub(crate) fn check(&self, kernel: &'static str, shape: &dyn std::fmt::Display, dims: LaunchDims) -> Result<()> {
        let (g, m) = (dims.grid, self.max_grid);
        if g.x > m.x || g.y > m.y || g.z > m.z {
            return Err(Error::GridTooLarge { kernel, shape: shape.to_string(), grid: g, limit: m });
        }
        debug_assert!(dims.block.count() <= self.max_threads_per_block as u64);
        // The opt-in list is consulted only past 48 KiB: every launch passes
        // here, and almost none asks for that much.
        if dims.shared_bytes <= self.max_shared_bytes_per_block {
            return Ok(());
        }
        let limit = if coalesce_kernels::OPT_IN_SHARED.contains(&kernel) {
            self.max_shared_bytes_optin
        } else {
            self.max_shared_bytes_per_block
        };
        if dims.shared_bytes > limit {
            return Err(Error::SharedMemoryTooLarge {
                kernel,
                shape: shape.to_string(),
                bytes: dims.shared_bytes,
                limit,
            });
        }
        Ok(())
    }
}

/// Checks both buffers against a `shape` matrix and `entry`'s launch `dims`
/// against `limits`: the plan of every `(input, output, rows, cols)` kernel,
/// on the GPU and on the emulator. `None` for an empty matrix, once its
/// buffers match: there is nothing to launch (CUDA refuses a grid of zero
/// blocks), so no launch limit applies.
pub(crate) fn plan_matrix(
    entry: &'static str, dims: LaunchDims, shape: crate::MatrixShape, (input_len, output_len): (usize, usize),
    limits: &GridLimits,
) -> Result<Option<LaunchDims>> {
    shape.check_len("input", input_len)?;
    shape.check_len("output", output_len)?;
    if shape.is_empty() {
        return Ok(None);
    }
    limits.check(entry, &shape, dims)?;
    Ok(Some(dims))
}

/// DRAM bandwidth in GB/s from the memory clock (kHz, as
/// `CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE` gives it) and the bus width
/// (bits): HBM and GDDR move data on both clock edges, so bytes/s =
/// 2 x clock x bus bits / 8.
pub fn dram_spec_gb_per_s(memory_clock_khz: u32, bus_bits: u32) -> f64 {
    2.0 * memory_clock_khz as f64 * 1e3 * bus_bits as f64 / 8.0 / 1e9
}
