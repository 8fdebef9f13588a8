//! A dependent of `coalesce`, built with stable Rust: transposes a random
//! odd-shaped matrix with `coalesce::transpose::vec4` and checks every
//! element against the CPU. On a GPU it launches in its own `cust` context,
//! on its own stream and buffers; on a machine without one it says so and
//! runs the same kernel body on coalesce's CPU emulator instead.
//!
//! Exit status: 0 when the transpose is exact, 1 on a mismatch or an error.
//! `COALESCE_SEED` replays a run (the seed is printed).

use coalesce::prelude::*;
use coalesce::transpose::Variant;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::stream::StreamFlags;
use std::process::ExitCode;

/// Odd on purpose: neither dimension is a multiple of the 64x64 tile or of 4,
/// so the kernel's edge blocks and its scalar path both run.
const ROWS: usize = 1000;
const COLS: usize = 3001;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The way a cust program that has its own context, stream and buffers uses
/// the kernels: load them into that context, launch on that stream.
fn on_my_context(input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<String, Box<dyn std::error::Error>> {
    let ctx = cust::quick_init()?;
    let stream = cust::stream::Stream::new(StreamFlags::DEFAULT, None)?;
    let d_input = DeviceBuffer::from_slice(input)?;
    let mut d_output = DeviceBuffer::from_slice(output)?;
    let gpu = coalesce::load_into(&ctx)?;
    let on_mine = gpu.borrow_stream(&stream)?;
    transpose::vec4(&on_mine, &d_input, &mut d_output, shape)?;
    stream.synchronize()?;
    d_output.copy_to(output)?;
    Ok(format!("{} (sm_{} module, in this program's own context and stream)", gpu.name(), gpu.ptx_arch().unwrap_or(0)))
}

/// Transposes and compares; `Ok(false)` on a mismatch.
fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let seed = match std::env::var("COALESCE_SEED") {
        Ok(s) => s.parse().map_err(|e| format!("COALESCE_SEED={s:?}: {e}"))?,
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos() as u64,
    };
    let shape = MatrixShape::new(ROWS, COLS)?;
    let input = random_matrix(seed, shape.len());
    // NaN everywhere, so an element the kernel never writes cannot pass.
    let mut output = vec![f32::NAN; shape.len()];

    let ran_on = match coalesce::init() {
        Ok(probe) => {
            drop(probe);
            on_my_context(&input, &mut output, shape)?
        }
        Err(Error::NoDevice { reason }) => {
            println!("no CUDA device ({reason}): running vec4 on coalesce's CPU emulator instead");
            coalesce::transpose::emu::launch(Variant::Vec4, &input, &mut output, shape)?;
            "the CPU emulator".to_owned()
        }
        Err(e) => return Err(e.into()),
    };

    // A transpose moves bits: compare them exactly.
    let mut mismatches = 0usize;
    for r in 0..ROWS {
        for c in 0..COLS {
            let (want, got) = (input[r * COLS + c], output[c * ROWS + r]);
            if want.to_bits() != got.to_bits() {
                if mismatches < 5 {
                    eprintln!("mismatch at output[{c}][{r}]: got {got}, want input[{r}][{c}] = {want}");
                }
                mismatches += 1;
            }
        }
    }
    if mismatches == 0 {
        println!("vec4 transpose of {ROWS}x{COLS} on {ran_on}: exact (seed {seed})");
        Ok(true)
    } else {
        eprintln!("vec4 transpose of {ROWS}x{COLS} on {ran_on}: {mismatches} elements differ (COALESCE_SEED={seed})");
        Ok(false)
    }
}

/// Uniform values in [-1000, 1000) from SplitMix64: reproducible from `seed`
/// without a random-number crate.
fn random_matrix(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            // The top 24 bits: exactly representable in an f32.
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 2000.0 - 1000.0
        })
        .collect()
}
