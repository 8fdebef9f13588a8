//! The nested sine, `sin(sin(sin(sin(x))))`: every version on the CPU
//! emulator (always) and on the GPU (skipped without one), and the accuracy
//! of each against a float64 reference.
//!
//! On the host, `sin` is libdevice's algorithm ported bit for bit
//! (`math::libdevice_sinf_port`), so emulator results are compared with
//! 0 ulp tolerance, and the GPU tests check the port against the GPU too.
//!
//! One test binary (`cargo test --test nested_sin`), one idea per file:
//!
//! - `reference.rs`: the inputs, the f64 reference and the host's bits,
//!   the error units, and the bit-for-bit comparisons of output windows;
//! - `emulator.rs`: every version on the emulator at odd lengths and
//!   offsets, in place, and the launchers' errors and registry;
//! - `checker.rs`: every version under the emulator's checker, and the
//!   sectors its loops take in the memory counters;
//! - `accuracy.rs`: the bounds against f64, on the CPU (the port), on the
//!   emulator (`poly`) and on the GPU (the `ACCURACY` lines);
//! - `gpu.rs`: every version on the GPU at odd lengths and offsets, in
//!   place, the unfused launches as a CUDA graph, and empty arrays.

#[path = "../common/mod.rs"]
mod common;
mod accuracy;
mod checker;
mod emulator;
mod gpu;
mod reference;
