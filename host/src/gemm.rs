//! Launchers for `coalesce_kernels::gemm` (issue 5): not written yet.
