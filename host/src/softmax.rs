//! Launchers for `coalesce_kernels::softmax` (issue 6): not written yet.
