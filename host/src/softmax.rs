//! Typed launchers for the row softmax kernels (see
//! `coalesce_kernels::softmax`): `output[r][c] = exp(input[r][c] - max_r) /
//! sum_c' exp(input[r][c'] - max_r)` over the last dimension of a row-major
//! f32 matrix.
//!
//! [`softmax`] picks the strategy by row length ([`Strategy::for_cols`]):
//! a warp per row up to 1024 columns, a block per row (the row in registers)
//! up to 16384, a cluster of 4 or 8 blocks per row up to 114688 where the module
//! has the cluster kernels (`sm_90a`: Hopper; without them, a block per row
//! up to 32768), and online (running max and
//! rescaled sum) beyond, or past 32768 without them: the online kernel
//! stashes the row in shared memory up to 57344 columns where the device
//! allows it (227 KiB per block on an H100), and re-reads it from L2 and
//! DRAM past that.
//! [`with_strategy`] and [`launch`] force a strategy or one instantiation,
//! for tests and benches.
//!
// GPU examples compile only with the `cuda` feature (`coalesce::init`).
#![cfg_attr(feature = "cuda", doc = "```no_run")]
#![cfg_attr(not(feature = "cuda"), doc = "```ignore")]
//! use coalesce::prelude::*;
//! # fn main() -> coalesce::Result<()> {
//! let gpu = coalesce::init()?;
//! let stream = gpu.stream()?;
//! let shape = MatrixShape::new(4096, 1000)?;
//! let logits = gpu.upload(&vec![0.5f32; shape.len()])?;
//! let mut probs = gpu.alloc::<f32>(shape.len())?;
//! softmax::softmax(&stream, &logits, &mut probs, shape)?; // 1000 columns: a warp per row
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! Special values follow `torch.softmax`: `-inf` entries give 0, a row of
//! only `-inf` gives NaN, a NaN or `+inf` anywhere in a row makes that row NaN.

use crate::limits::plan_matrix;
use crate::{Error, GridLimits, LaunchDims, MatrixShape, Result};
pub use coalesce_kernels::softmax::{CLUSTER_MIN_COLS, Kernel, Strategy};

#[cfg(feature = "cuda")]
use crate::{Stream, gpu::launch_matrix};
#[cfg(feature = "cuda")]
use cust::memory::DeviceSlice;

/// Checks buffer lengths, the launch against `limits` and the row length
/// against the kernel; returns the launch geometry, or `None` for an empty
/// matrix (nothing to launch). Shared by the GPU and emulator launchers.
///
/// A row too long for the kernel is an error even with no rows: the kernel
/// was asked for a matrix it cannot take.
fn plan(
    kernel: Kernel, shape: MatrixShape, input_len: usize, output_len: usize, limits: &GridLimits,
) -> Result<Option<LaunchDims>> {
    // The buffers first, then the row length: `launch_dims` sizes blocks
    // and shared memory for rows the kernel holds, and assumes it.
    shape.check_len("input", input_len)?;
    shape.check_len("output", output_len)?;
    if shape.cols_u32() > kernel.max_cols() {
        return Err(Error::ShapeTooLarge { rows: shape.rows(), cols: shape.cols(), why: too_long(kernel).into() });
    }
    let dims = kernel.launch_dims(shape.rows_u32(), shape.cols_u32());
    plan_matrix(kernel.entry_point(), dims, shape, (input_len, output_len), limits)
}

/// Why `kernel` cannot take a longer row: its limit, and what sets it.
fn too_long(kernel: Kernel) -> String {
    use coalesce_kernels::softmax::{MAX_BLOCK_THREADS, WARP};
    let (floats, max) = (kernel.floats_per_thread(), kernel.max_cols());
    let by = match kernel.strategy() {
        Strategy::WarpPerRow => format!("a warp of {WARP} lanes of {floats} floats"),
        Strategy::BlockPerRow => format!("a block of at most {MAX_BLOCK_THREADS} threads of {floats} floats"),
        Strategy::Online => "its shared-memory stash; `online` takes any length".to_string(),
        Strategy::Cluster => format!(
            "a cluster of {} blocks of at most {} threads of {floats} floats",
            kernel.cluster(),
            kernel.geometry().threads
        ),
    };
    format!("softmax {} holds rows of at most {max} columns ({by})", kernel.name())
}

/// Why no kernel of `strategy` takes a longer row.
fn too_long_for(strategy: Strategy) -> String {
    let longest = Kernel::ALL.iter().filter(|k| k.strategy() == strategy).max_by_key(|k| k.max_cols());
    longest.map_or_else(|| format!("no {} kernel", strategy.name()), |&k| too_long(k))
}

/// The kernel `strategy` uses for `shape`'s rows (for rows of 0 columns,
/// the one it uses for 1), or [`Error::ShapeTooLarge`] if they are too long
/// for it.
pub fn kernel_for(strategy: Strategy, shape: MatrixShape) -> Result<Kernel> {
    strategy.kernel(shape.cols_u32().max(1)).ok_or_else(|| Error::ShapeTooLarge {
        rows: shape.rows(),
        cols: shape.cols(),
        why: too_long_for(strategy).into(),
    })
}

/// Row softmax of the `shape` matrix in `input` into `output`, with the
/// strategy for its row length ([`Kernel::for_cols`]), queued on `stream`.
/// An empty matrix (0 rows, or rows of 0 columns, as `torch.softmax` takes
/// them) queues nothing and returns `Ok` once the buffers match it.
///
/// Errors: [`Error::LengthMismatch`] if a buffer does not hold exactly
/// `shape.len()` elements, [`Error::GridTooLarge`] past the device's grid
/// (more than 2^31 - 1 rows for the block strategies), [`Error::Aliased`] when
/// the output overlaps the input, and driver errors from the launch itself.
#[cfg(feature = "cuda")]
pub fn softmax(
    stream: &Stream<'_>, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape,
) -> Result<()> {
    let kernel = Kernel::for_cols(shape.cols_u32());
    // Without the cluster kernels (a module other than sm_90a), the rows
    // they would take go to a block while it holds them, else online.
    let kernel =
        if stream.gpu().has_kernel(kernel.entry_point()) { kernel } else { without_clusters(shape.cols_u32()) };
    launch(stream, kernel_on(&stream.gpu().grid_limits(), kernel, shape), input, output, shape)
}

/// The dispatch's kernel for rows of `cols` columns where the module has no
/// cluster kernels: [`Kernel::for_cols`]'s, except that the rows it gives a
/// cluster go to a block while one holds the row, else online.
pub fn without_clusters(cols: u32) -> Kernel {
    let kernel = Kernel::for_cols(cols);
    if kernel.strategy() != Strategy::Cluster {
        return kernel;
    }
    let strategy = if cols <= Strategy::BlockPerRow.max_cols() { Strategy::BlockPerRow } else { Strategy::Online };
    strategy.kernel(cols).unwrap_or(Kernel::Online)
}

/// `kernel`, or [`Kernel::Online`] where `kernel` is the shared-memory stash
/// and this device cannot give a block that much shared memory (GPUs before
/// the H100's 227 KiB).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the GPU launchers' and the tests'
fn kernel_on(limits: &GridLimits, kernel: Kernel, shape: MatrixShape) -> Kernel {
    let needs = kernel.launch_dims(shape.rows_u32().max(1), shape.cols_u32().max(1)).shared_bytes;
    if kernel == Kernel::OnlineStash && needs > limits.max_shared_bytes_optin { Kernel::Online } else { kernel }
}

/// [`softmax`] with a given strategy (its instantiation for the row length).
/// [`Error::ShapeTooLarge`] if the rows are too long for it.
#[cfg(feature = "cuda")]
pub fn with_strategy(
    stream: &Stream<'_>, strategy: Strategy, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>,
    shape: MatrixShape,
) -> Result<()> {
    let kernel = kernel_on(&stream.gpu().grid_limits(), kernel_for(strategy, shape)?, shape);
    launch(stream, kernel, input, output, shape)
}

/// [`softmax`] with one given kernel. [`Error::ShapeTooLarge`] if the rows
/// are longer than [`Kernel::max_cols`].
#[cfg(feature = "cuda")]
pub fn launch(
    stream: &Stream<'_>, kernel: Kernel, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>, shape: MatrixShape,
) -> Result<()> {
    let dims = plan(kernel, shape, input.len(), output.len(), &stream.gpu().grid_limits())?;
    launch_matrix(stream, (kernel.entry_point(), kernel.cluster()), dims, input, output, shape)
}

/// One launcher per strategy: [`with_strategy`] with the strategy named.
#[cfg(feature = "cuda")]
macro_rules! strategy_launchers {
    ($($(#[$doc:meta])* $name:ident => $strategy:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            stream: &Stream<'_>,
            input: &DeviceSlice<f32>,
            output: &mut DeviceSlice<f32>,
            shape: MatrixShape,
        ) -> Result<()> {
            with_strategy(stream, Strategy::$strategy, input, output, shape)
        }
    )*};
}

#[cfg(feature = "cuda")]
coalesce_kernels::softmax_steps!(kernel_params);
// Softmax launches through `launch_matrix`, which builds transpose's
// arguments: the two parameter lists must be one type.
#[cfg(feature = "cuda")]
const _: fn(KernelParams) -> crate::transpose::KernelParams = |same| same;

#[cfg(feature = "cuda")]
strategy_launchers! {
    /// Step 1, [`Strategy::WarpPerRow`]: a warp per row, up to 1024 columns.
    warp_per_row => WarpPerRow;
    /// Step 2, [`Strategy::BlockPerRow`]: a block per row, the row in
    /// registers, up to 32768 columns.
    block_per_row => BlockPerRow;
    /// Step 3, [`Strategy::Online`]: a block per row, online (max, sum) pass
    /// then a backward re-read; any row length.
    online => Online;
    /// Step 4, [`Strategy::Cluster`]: a cluster of 4 or 8 blocks per row, the row
    /// in their registers, up to 114688 columns (the `sm_90a` module:
    /// [`crate::Error::ArchitectureRequired`] on other GPUs).
    cluster => Cluster;
}

/// The softmax launchers on the CPU emulator: the same checks (grids against
/// [`GridLimits::CUDA`]), the same kernel bodies, host slices instead of
/// device buffers. Every access is checked: keep shapes small.
///
/// Every launch runs under the emulator's checker;
/// [`launch_checked`](emu::launch_checked) also returns its memory counters
/// (see [`crate::emu`]).
pub mod emu {
    use super::{Kernel, Strategy, kernel_for, plan};
    use crate::emu::{Report, launch_matrix, launch_matrix_checked, misalignment};
    use crate::{GridLimits, MatrixShape, Result};

    /// [`super::softmax`] on the emulator.
    pub fn softmax(input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<()> {
        launch(Kernel::for_cols(shape.cols_u32()), input, output, shape)
    }

    /// [`super::with_strategy`] on the emulator.
    pub fn with_strategy(strategy: Strategy, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<()> {
        launch(kernel_for(strategy, shape)?, input, output, shape)
    }

    /// [`super::launch`] on the emulator (an empty matrix launches nothing).
    pub fn launch(kernel: Kernel, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<()> {
        let dims = plan(kernel, shape, input.len(), output.len(), &GridLimits::CUDA)?;
        // SAFETY: lengths and cols checked by `plan`; `&` and `&mut` slices
        // cannot alias.
        launch_matrix((dims, kernel.cluster()), input, output, shape, |ctx, i, o, r, c| unsafe {
            kernel.run(ctx, i, o, r, c)
        })
    }

    /// [`launch`] with the memory counters: returns the [`Report`] (the
    /// checker's findings are in it, not an error). The buffers are staged in
    /// copies placed as device buffers would be: 256-byte aligned, or as far
    /// past that as `input` and `output` are off 16-byte alignment (a view
    /// one float into a buffer stays one float off), so the kernel takes the
    /// same vector or scalar path and counts the sectors a GPU would touch.
    /// An empty matrix launches nothing: an empty report.
    ///
    /// ```
    /// use coalesce::{MatrixShape, emu::Op, softmax::{Kernel, emu}};
    /// # fn main() -> coalesce::Result<()> {
    /// let shape = MatrixShape::new(4, 128)?;
    /// let input = vec![0.5f32; shape.len()];
    /// let mut output = vec![0.0f32; shape.len()];
    /// let report = emu::launch_checked(Kernel::Warp4, &input, &mut output, shape)?;
    /// assert!(report.findings.is_empty());
    /// // One 16-byte load per lane: a warp reads 512 contiguous bytes, 16 sectors.
    /// assert_eq!(report.counters.total(Op::GlobalLoad).per_request(), 16.0);
    /// # Ok(()) }
    /// ```
    pub fn launch_checked(kernel: Kernel, input: &[f32], output: &mut [f32], shape: MatrixShape) -> Result<Report> {
        let dims = plan(kernel, shape, input.len(), output.len(), &GridLimits::CUDA)?;
        let at = (misalignment(input), misalignment(output));
        // SAFETY: lengths and cols checked by `plan`; the staged copies are
        // distinct.
        launch_matrix_checked(
            (dims, kernel.cluster()),
            (input, at.0),
            (output, at.1),
            shape,
            |ctx, i, o, r, c| unsafe { kernel.run(ctx, i, o, r, c) },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU with less opt-in shared memory than the stash needs: the
    /// dispatch falls back to the re-reading kernel, and forcing the stash is
    /// an error value naming both sizes.
    #[test]
    fn the_stash_needs_the_shared_memory_it_asks_for() {
        let small = GridLimits { max_shared_bytes_optin: 163 * 1024, ..GridLimits::CUDA }; // an A100
        let (fits, too_long) = (MatrixShape::new(4, 40_000).unwrap(), MatrixShape::new(4, 50_000).unwrap());
        assert_eq!(kernel_on(&small, Kernel::OnlineStash, fits), Kernel::OnlineStash);
        assert_eq!(kernel_on(&small, Kernel::OnlineStash, too_long), Kernel::Online);
        assert_eq!(kernel_on(&GridLimits::CUDA, Kernel::OnlineStash, too_long), Kernel::OnlineStash);
        let n = too_long.len();
        match plan(Kernel::OnlineStash, too_long, n, n, &small) {
            Err(Error::SharedMemoryTooLarge { kernel, bytes, limit, .. }) => {
                assert_eq!((kernel, bytes, limit), ("softmax_online_stash", 256 + 200_000, 163 * 1024));
            }
            other => panic!("expected SharedMemoryTooLarge, got {other:?}"),
        }
        // Kernels that do not opt in keep the 48 KiB limit.
        assert!(plan(Kernel::Online, too_long, n, n, &small).is_ok());
    }
}
