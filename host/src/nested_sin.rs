//! Launchers for `coalesce_kernels::nested_sin` (issue 4): not written yet.
