//! Helpers shared by the integration tests.
#![allow(dead_code)]

use coalesce::{Error, Gpu};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Bits of the NaN every output is filled with before a kernel runs: an
/// element the kernel forgot to write keeps it, and no real result has it.
pub const POISON_BITS: u32 = 0x7fc0_dead;

pub fn poison(len: usize) -> Vec<f32> {
    vec![f32::from_bits(POISON_BITS); len]
}

/// The GPU, or `None` (after saying so) on a machine without one, so that
/// GPU tests skip cleanly in CI. Any other error fails the test.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match coalesce::init() {
        Ok(gpu) => Some(gpu),
        Err(Error::NoDevice { reason }) => {
            eprintln!("skipping {test}: no CUDA device ({reason})");
            None
        }
        Err(e) => panic!("{test}: CUDA initialisation failed: {e}"),
    }
}

/// Set (COALESCE_SANITIZER=1) when the tests run under compute-sanitizer:
/// large cases are skipped (the tools are 10-100x slower) and so are
/// deliberate driver errors (the tool counts them as errors).
pub fn under_sanitizer() -> bool {
    std::env::var_os("COALESCE_SANITIZER").is_some()
}

/// A fresh seeded RNG; the seed is printed so that a failure can be replayed
/// with COALESCE_SEED=<seed>.
pub fn rng(test: &str) -> StdRng {
    let seed =
        std::env::var("COALESCE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| rand::rng().random::<u64>());
    eprintln!("{test}: seed {seed}");
    StdRng::seed_from_u64(seed)
}

/// Random values, all distinct in practice and never zero, so a misplaced
/// or unwritten element cannot pass by accident.
pub fn random_matrix(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0e3f32..1.0e3) + 1.0e-3).collect()
}
