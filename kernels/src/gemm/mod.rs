//! Single-precision GEMM, `C = alpha * A * B + beta * C`, f32, row-major, any
//! `M, N, K`: a ladder of kernels, each one idea on top of the last.
//!
//! `A` is `M x K`, `B` is `K x N`, `C` is `M x N`, all row-major and dense
//! (leading dimensions `K`, `N`, `N`). As in BLAS, `beta == 0` means `C` is
//! only written, never read (it may hold NaNs).
//!
//! | step | kernel | idea | what it fixes | what it costs |
//! | --- | --- | --- | --- | --- |
//! | 1 | [`naive`] | one thread per `C` element, `K` loads of `A` and `B` each | - | 2 global loads per FMA: bound by L1/L2 |
//! | 2 | [`smem_tiled`] | 32x32 tiles of `A` and `B` staged in shared memory | each global element is loaded once per tile, not once per thread | 2 shared values (1.25 load instructions) per FMA: bound by shared memory |
//! | 3 | [`blocktile_1d`] | each thread computes a column of 8 outputs | one `B` value from shared memory serves 8 FMAs | still one shared `A` value per FMA |
//! | 4 | [`blocktile_2d`] | each thread computes an 8x8 outer product | 16 shared values serve 64 FMAs (ptxas merges them into 4 16-byte loads) | scalar global loads; 168 registers, one block per SM; conflicting shared reads |
//! | 5 | [`vectorized`] | 16-byte global loads; `A` tile stored transposed; 16-byte shared loads written out | 4x fewer global load instructions; 122 registers, two blocks per SM | `B` fragment reads of a warp are bank-conflicted |
//! | 6 | [`warptile`] | threads of a warp own 4x4 fragments interleaved over a warp tile | conflict-free, broadcast 16-byte shared loads | loads and compute of a tile are serialised by two barriers |
//! | 7 | [`double_buffered`] | two shared buffers; the next tile's global loads fly during this tile's FMAs; a measured 128x256 geometry, 8x16 outputs per thread | global latency hidden; one barrier per tile; 6 shared loads per 128 FMAs | ~245 registers: one block (8 warps) per SM |
//! | 8 | [`tf32`] | tensor cores: TF32 `mma.sync.m16n8k8`, f32 accumulation (reported apart) | 1024 multiply-adds (16x8x8) per warp instruction instead of 32 | inputs rounded to 10 mantissa bits; tested with a TF32 bound |
//!
//! Every step handles any `M, N, K`: tiles that stick out of the matrices
//! are loaded with bounds checks and zero fill, and stores are guarded. The
//! interior (whole tiles, `K % 4 == 0`, `N % 4 == 0`, 16-byte aligned
//! buffers for the vector steps) takes a path without checks.
//!
//! Launch geometry (tile sizes, threads, shared bytes) is defined here and
//! read by the host through [`Variant::launch_dims`].

#[path = "03_blocktile_1d.rs"]
mod blocktile_1d_kernel;
#[path = "04_blocktile_2d.rs"]
mod blocktile_2d_kernel;
#[path = "07_double_buffered.rs"]
mod double_buffered_kernel;
#[path = "07_double_buffered_v1.rs"]
mod legacy_kernel;
#[path = "01_naive.rs"]
mod naive_kernel;
#[path = "02_smem_tiled.rs"]
mod smem_tiled_kernel;
#[path = "08_tf32.rs"]
mod tf32_kernel;
mod tiles;
#[path = "05_vectorized.rs"]
mod vectorized_kernel;
#[path = "06_warptile.rs"]
mod warptile_kernel;

pub use blocktile_1d_kernel::{BT1_BK, BT1_BM, BT1_BN, BT1_THREADS, BT1_TM, blocktile_1d};
pub use blocktile_2d_kernel::{BT2_BK, BT2_BM, BT2_BN, BT2_THREADS, BT2_TM, BT2_TN, blocktile_2d};
pub use double_buffered_kernel::{DB, double_buffered, double_buffered_interior, double_buffered_with};
pub use naive_kernel::{NAIVE_BLOCK, naive};
pub use smem_tiled_kernel::{SMEM_TILE, smem_tiled};
pub use tf32_kernel::{TF32_BK, TF32_BM, TF32_BN, TF32_SHARED_FLOATS, TF32_STRIDE, TF32_THREADS, tf32, to_tf32};
pub use vectorized_kernel::vectorized;
pub use warptile_kernel::{WT, WarpTiling, warptile, warptile_with};

// The steps name it `super::F4`.
pub use crate::vector::F4;
use crate::{Dim3, LaunchDims, ThreadCtx};

/// The `.entry` kernels of this module: one per [`Variant`], then step 7's
/// interior-only twin ([`INTERIOR_ENTRY`]).
pub const ENTRIES: &[&str] = &{
    let per_variant = crate::entries_of_variants!(Variant);
    let mut names = [""; Variant::ALL.len() + 1];
    let mut i = 0;
    while i < per_variant.len() {
        names[i] = per_variant[i];
        i += 1;
    }
    names[i] = INTERIOR_ENTRY;
    names
};

/// Step 7 compiled with its interior loop alone ([`double_buffered_interior`]),
/// which the host launches when every block of the grid is interior.
pub const INTERIOR_ENTRY: &str = "gemm_double_buffered_interior";

/// Whether every block of step 7's grid is interior (`M`, `N`, `K`
/// multiples of the 128x256x8 tile, all three buffers 16-byte aligned), so
/// that [`INTERIOR_ENTRY`] may run it.
pub fn all_interior(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *const f32) -> bool {
    m.is_multiple_of(DB.bm) && n.is_multiple_of(DB.bn) && k.is_multiple_of(DB.bk) && aligned16(a, b, c)
}

/// The scalars of one GEMM: the shape and the epilogue's `alpha`, `beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Problem {
    /// Rows of `A` and `C`.
    pub m: u32,
    /// Columns of `B` and `C`.
    pub n: u32,
    /// Columns of `A`, rows of `B`.
    pub k: u32,
    pub alpha: f32,
    pub beta: f32,
}

/// The GEMM versions, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    Naive,
    SmemTiled,
    Blocktile1d,
    Blocktile2d,
    Vectorized,
    Warptile,
    DoubleBuffered,
    Tf32,
}

impl Variant {
    /// Every version, in teaching order: the FP32 ladder, then TF32.
    pub const ALL: [Variant; 8] = [
        Variant::Naive,
        Variant::SmemTiled,
        Variant::Blocktile1d,
        Variant::Blocktile2d,
        Variant::Vectorized,
        Variant::Warptile,
        Variant::DoubleBuffered,
        Variant::Tf32,
    ];

    /// The FP32 (FMA, non-tensor-core) steps.
    pub const FP32: [Variant; 7] = [
        Variant::Naive,
        Variant::SmemTiled,
        Variant::Blocktile1d,
        Variant::Blocktile2d,
        Variant::Vectorized,
        Variant::Warptile,
        Variant::DoubleBuffered,
    ];

    /// Whether this version rounds its inputs to TF32 (tensor cores).
    pub const fn is_tf32(self) -> bool {
        matches!(self, Variant::Tf32)
    }

    /// The fastest FP32 version: what `gemm::sgemm` launches.
    pub const BEST: Variant = Variant::DoubleBuffered;

    /// Step number in the ladder (1-based), as in the file names.
    pub const fn step(self) -> u32 {
        match self {
            Variant::Naive => 1,
            Variant::SmemTiled => 2,
            Variant::Blocktile1d => 3,
            Variant::Blocktile2d => 4,
            Variant::Vectorized => 5,
            Variant::Warptile => 6,
            Variant::DoubleBuffered => 7,
            Variant::Tf32 => 8,
        }
    }

    /// Short name used by benches, reports and tests.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::SmemTiled => "smem_tiled",
            Variant::Blocktile1d => "blocktile_1d",
            Variant::Blocktile2d => "blocktile_2d",
            Variant::Vectorized => "vectorized",
            Variant::Warptile => "warptile",
            Variant::DoubleBuffered => "double_buffered",
            Variant::Tf32 => "tf32",
        }
    }

    /// Name of the `.entry` kernel in the PTX module.
    pub const fn entry_point(self) -> &'static str {
        match self {
            Variant::Naive => "gemm_naive",
            Variant::SmemTiled => "gemm_smem_tiled",
            Variant::Blocktile1d => "gemm_blocktile_1d",
            Variant::Blocktile2d => "gemm_blocktile_2d",
            Variant::Vectorized => "gemm_vectorized",
            Variant::Warptile => "gemm_warptile",
            Variant::DoubleBuffered => "gemm_double_buffered",
            Variant::Tf32 => "gemm_tf32",
        }
    }

    /// The `(BM, BN)` tile of `C` one block computes.
    pub const fn block_tile(self) -> (u32, u32) {
        match self {
            Variant::Naive => (NAIVE_BLOCK.y, NAIVE_BLOCK.x),
            Variant::SmemTiled => (SMEM_TILE, SMEM_TILE),
            Variant::Blocktile1d => (BT1_BM, BT1_BN),
            Variant::Blocktile2d | Variant::Vectorized => (BT2_BM, BT2_BN),
            Variant::Warptile => (WT.bm, WT.bn),
            Variant::DoubleBuffered => (DB.bm, DB.bn),
            Variant::Tf32 => (TF32_BM, TF32_BN),
        }
    }

    /// Grid, block and shared memory for an `M x N` output. The grid is not
    /// checked against device limits here; the host does that.
    pub const fn launch_dims(self, m: u32, n: u32) -> LaunchDims {
        let (bm, bn) = self.block_tile();
        let grid = Dim3::xy(n.div_ceil(bn), m.div_ceil(bm));
        let (block, shared_floats) = match self {
            Variant::Naive => (NAIVE_BLOCK, 0),
            Variant::SmemTiled => (Dim3::xy(SMEM_TILE, SMEM_TILE), 2 * SMEM_TILE * SMEM_TILE),
            Variant::Blocktile1d => (Dim3::xy(BT1_THREADS, 1), BT1_BM * BT1_BK + BT1_BK * BT1_BN),
            Variant::Blocktile2d | Variant::Vectorized => (Dim3::xy(BT2_THREADS, 1), BT2_BM * BT2_BK + BT2_BK * BT2_BN),
            Variant::Warptile => (Dim3::xy(WT.threads(), 1), WT.shared_floats()),
            Variant::DoubleBuffered => (Dim3::xy(DB.threads(), 1), 2 * DB.shared_floats()),
            Variant::Tf32 => (Dim3::xy(TF32_THREADS, 1), TF32_SHARED_FLOATS),
        };
        LaunchDims { grid, block, shared_bytes: shared_floats * 4 }
    }

    /// Runs this version's body for the calling thread.
    ///
    /// # Safety
    /// As for each kernel: `a` holds `m * k` floats, `b` holds `k * n`, `c`
    /// holds `m * n` and overlaps neither, and the launch uses
    /// [`Variant::launch_dims`].
    #[inline(always)]
    pub unsafe fn run<C: ThreadCtx>(self, ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Variant::Naive => naive(ctx, a, b, c, p),
                Variant::SmemTiled => smem_tiled(ctx, a, b, c, p),
                Variant::Blocktile1d => blocktile_1d(ctx, a, b, c, p),
                Variant::Blocktile2d => blocktile_2d(ctx, a, b, c, p),
                Variant::Vectorized => vectorized(ctx, a, b, c, p),
                Variant::Warptile => warptile(ctx, a, b, c, p),
                Variant::DoubleBuffered => double_buffered(ctx, a, b, c, p),
                Variant::Tf32 => tf32(ctx, a, b, c, p),
            }
        }
    }
}

/// The epilogue of every step: `alpha * acc + beta * old`, where `old` is
/// read only when `beta != 0` (BLAS: with `beta == 0`, `C` may be garbage).
///
/// # Safety
/// `c` must be valid for reads (when `beta != 0`) and writes.
#[inline(always)]
pub(crate) unsafe fn store_c(c: *mut f32, acc: f32, alpha: f32, beta: f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        *c = if beta == 0.0 { alpha * acc } else { alpha * acc + beta * *c };
    }
}

/// [`store_c`] for four adjacent elements, one 16-byte load and store.
///
/// # Safety
/// `c` must be 16-byte aligned and valid for 4 floats.
#[inline(always)]
pub(crate) unsafe fn store_c4(c: *mut f32, acc: [f32; 4], alpha: f32, beta: f32) {
    let c = c.cast::<F4>();
    let [x, y, z, w] = acc;
    let v = if beta == 0.0 {
        F4([alpha * x, alpha * y, alpha * z, alpha * w])
    } else {
        // SAFETY: forwarded from the caller.
        let F4([ox, oy, oz, ow]) = unsafe { *c };
        F4([alpha * x + beta * ox, alpha * y + beta * oy, alpha * z + beta * oz, alpha * w + beta * ow])
    };
    // SAFETY: forwarded from the caller.
    unsafe { *c = v };
}

/// Whether every pointer is 16-byte aligned (the vector paths need it).
#[inline(always)]
pub(crate) fn aligned16(a: *const f32, b: *const f32, c: *const f32) -> bool {
    (a as usize | b as usize | c as usize).is_multiple_of(16)
}

/// One `.entry` per step: `(a, b, c, m, n, k, alpha, beta)`.
#[cfg(target_arch = "nvptx64")]
macro_rules! gemm_entry {
    ($entry:ident, $body:path) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "gpu-kernel" fn $entry(
            a: *const f32,
            b: *const f32,
            c: *mut f32,
            m: u32,
            n: u32,
            k: u32,
            alpha: f32,
            beta: f32,
        ) {
            // SAFETY: the host launcher checked lengths and launch geometry.
            unsafe { $body(&crate::gpu::Gpu, a, b, c, crate::gemm::Problem { m, n, k, alpha, beta }) }
        }
    };
}
#[cfg(target_arch = "nvptx64")]
pub(crate) use gemm_entry;
