//! Row softmax (issue 6): not written yet.

/// The `.entry` kernels of this module.
pub const ENTRIES: &[&str] = &[];
