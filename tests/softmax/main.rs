//! Row softmax against a float64 reference: every kernel on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present), at odd
//! shapes, misaligned buffers, the hard cases (masks, all `-inf`, +-1e30,
//! NaN, +inf) and, on the GPU, the benchmark shapes.
//!
//! One test binary (`cargo test --test softmax`), one idea per file:
//!
//! - `reference.rs`: the f64 reference, the tolerance, the inputs, and
//!   running every kernel that takes a row length through the check;
//! - `emulator.rs`: every kernel on the emulator at odd shapes, misaligned
//!   buffers, multi-chunk rows and the hard cases;
//! - `checker.rs`: the kernels under the emulator's checker, and what its
//!   memory counters show of the vector, scalar and stash paths;
//! - `launch.rs`: which kernel a row length gets, the launch geometry, the
//!   register file at 1024 threads, and what the launchers refuse;
//! - `gpu.rs`: every kernel on the GPU, the benchmark shapes' `accuracy:`
//!   lines, and the probe that `ncu` runs;
//! - `empty.rs`: empty matrices are no-ops, on the emulator and the GPU.

#[path = "../common/mod.rs"]
mod common;
mod checker;
mod emulator;
mod empty;
mod gpu;
mod launch;
mod reference;
