//! Fused nested sin (issue 4): not written yet.

/// The `.entry` kernels of this module.
pub const ENTRIES: &[&str] = &[];
