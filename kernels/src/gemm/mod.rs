//! Tiled GEMM ladder (issue 5): not written yet.

/// The `.entry` kernels of this module.
pub const ENTRIES: &[&str] = &[];
