//! Helpers shared by the integration tests.
#![allow(dead_code)]

use coalesce::{Error, Gpu, MatrixShape, Stream};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Bits of the NaN every output is filled with before a kernel runs: an
/// element the kernel forgot to write keeps it, and no real result has it.
pub const POISON_BITS: u32 = 0x7fc0_dead;

/// Shapes either side of a transpose step's grid limit, `(refused,
/// accepted)`: `refused` needs 65536 rows of blocks in y, past CUDA's 65535,
/// and `accepted` is its transpose. The grid's y counts the input's tile
/// rows, or its tile columns where the grid covers the output's tiles; the
/// other side is `other` long.
pub fn past_the_grid_y(variant: coalesce::transpose::Variant, other: usize) -> (MatrixShape, MatrixShape) {
    let g = variant.geometry();
    let past = 65_536 * g.tile as usize + 1;
    let (tall, wide) = (MatrixShape::new(past, other).unwrap(), MatrixShape::new(other, past).unwrap());
    if g.over_output { (wide, tall) } else { (tall, wide) }
}

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

/// The base cases, and the large ones too unless the tests run under
/// compute-sanitizer (see [`under_sanitizer`]).
pub fn with_large<T: Clone>(base: &[T], large: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut cases = base.to_vec();
    if !under_sanitizer() {
        cases.extend(large);
    }
    cases
}

/// Each `(rows, cols)` as a shape, with random values (see
/// [`random_matrix`]) to fill it, drawn in order.
pub fn random_matrices<'a>(
    rng: &'a mut StdRng, shapes: &'a [(usize, usize)],
) -> impl Iterator<Item = (MatrixShape, Vec<f32>)> + 'a {
    shapes.iter().map(|&(rows, cols)| {
        let shape = MatrixShape::new(rows, cols).unwrap();
        (shape, random_matrix(rng, shape.len()))
    })
}

/// The row-major transpose of the row-major `rows x cols` `input`, in f64
/// as every reference here (exact for a transpose).
pub fn transpose_reference(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = input[r * cols + c] as f64;
        }
    }
    out
}

/// Fails with the first mismatching (row, col) of a `shape` row-major
/// result that must equal `want` exactly (and never hold the poison).
pub fn check_exact(what: &str, shape: MatrixShape, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what} on {shape}: length");
    assert_eq!(got.len(), shape.len(), "{what} on {shape}: length");
    if let Some(i) = got.iter().zip(want).position(|(&g, &w)| g as f64 != w || g.to_bits() == POISON_BITS) {
        let bad = got.iter().zip(want).filter(|&(&g, &w)| g as f64 != w).count();
        panic!(
            "{what} on {shape}: output[{}][{}] = {} (bits {:#x}), expected {}; {bad} of {} elements wrong",
            i / shape.cols(),
            i % shape.cols(),
            got[i],
            got[i].to_bits(),
            want[i],
            got.len(),
        );
    }
}

/// What `buffer` holds, read into a poisoned host vector.
pub fn download(buffer: &DeviceSlice<f32>) -> Vec<f32> {
    let mut host = poison(buffer.len());
    buffer.copy_to(&mut host[..]).unwrap();
    host
}

/// Runs `launch` into a fresh poisoned device buffer of `len` floats, waits
/// for `stream`, and returns what the buffer holds.
pub fn run_poisoned(
    stream: &Stream<'_>, len: usize, launch: impl FnOnce(&mut DeviceBuffer<f32>) -> coalesce::Result<()>,
) -> Vec<f32> {
    let mut out = stream.gpu().upload(&poison(len)).unwrap();
    launch(&mut out).unwrap();
    stream.synchronize().unwrap();
    download(&out)
}

/// A launcher of a matrix op on the GPU, as the host crate writes them
/// (`transpose::tiled`, `softmax::softmax`): `(stream, input, output, shape)`.
pub type Launcher = fn(&Stream<'_>, &DeviceSlice<f32>, &mut DeviceSlice<f32>, MatrixShape) -> coalesce::Result<()>;

/// The error `launch` gives on an input of ones of `(rows, cols)` and an
/// output `short` floats shorter than it, which it must refuse before
/// launching.
fn launch_error(stream: &Stream<'_>, (rows, cols): (usize, usize), short: usize, launch: Launcher) -> Error {
    let shape = MatrixShape::new(rows, cols).unwrap();
    let input = stream.gpu().upload(&vec![1.0f32; shape.len()]).unwrap();
    let mut output = stream.gpu().alloc::<f32>(shape.len() - short).unwrap();
    launch(stream, &input, &mut output, shape).unwrap_err()
}

/// The error `launch` gives on `(rows, cols)` buffers, which it must refuse
/// before launching (a shape past the grid or the kernel), for the caller
/// to match.
pub fn refusal(stream: &Stream<'_>, shape: (usize, usize), launch: Launcher) -> Error {
    launch_error(stream, shape, 0, launch)
}

/// Asserts that `launch`, given an input of ones of `(rows, cols)` and an
/// output one float short of it, fails with a length mismatch of the output.
pub fn short_output_is_an_error(stream: &Stream<'_>, shape: (usize, usize), launch: Launcher) {
    let e = launch_error(stream, shape, 1, launch);
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", .. }), "{e}");
}

/// Empty matrices: no rows, no columns, neither. Every launcher takes them
/// as a successful no-op, as BLAS and PyTorch do.
pub fn empty_shapes() -> impl Iterator<Item = MatrixShape> {
    [(0, 0), (0, 7), (7, 0)].into_iter().map(|(rows, cols)| MatrixShape::new(rows, cols).unwrap())
}

/// Runs `launch` on empty windows in the middle of two poisoned device
/// buffers, then on two zero-length allocations, and asserts that it returns
/// `Ok` and leaves both buffers as they were: an empty problem launches
/// nothing (CUDA would refuse a grid of zero blocks).
pub fn empty_is_a_no_op(
    stream: &Stream<'_>, what: &str, launch: impl Fn(&DeviceSlice<f32>, &mut DeviceSlice<f32>) -> coalesce::Result<()>,
) {
    let gpu = stream.gpu();
    let (input, output) = (gpu.upload(&poison(64)).unwrap(), gpu.upload(&poison(64)).unwrap());
    launch(&input.index(32..32), &mut output.index(32..32)).unwrap_or_else(|e| panic!("{what} in windows: {e}"));
    let (none_in, mut none_out) = (gpu.alloc::<f32>(0).unwrap(), gpu.alloc::<f32>(0).unwrap());
    launch(&none_in, &mut none_out).unwrap_or_else(|e| panic!("{what} on zero-length buffers: {e}"));
    stream.synchronize().unwrap();
    for (name, buffer) in [("input", &input), ("output", &output)] {
        let touched = download(buffer).iter().position(|x| x.to_bits() != POISON_BITS);
        assert_eq!(touched, None, "{what}: the {name} buffer was written");
    }
}
