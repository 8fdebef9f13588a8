//! Single-precision GEMM, `C = alpha * A * B + beta * C`, f32, row-major, any
//! `M, N, K`: a ladder of kernels, each one idea on top of the last.
//!
//! `A` is `M x K`, `B` is `K x N`, `C` is `M x N`, all row-major and dense
//! (leading dimensions `K`, `N`, `N`). As in BLAS, `beta == 0` means `C` is
//! only written, never read (it may hold NaNs).
//!
//! The steps are listed on [`Variant`]; each file says what its step fixes
//! and what it costs, and `docs/gemm.md` measures them.
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
#[path = "09_wgmma.rs"]
mod wgmma_kernel;
#[path = "10_wgmma_3xtf32.rs"]
mod wgmma_3xtf32_kernel;
#[path = "11_wgmma_promoted.rs"]
mod wgmma_promoted_kernel;
#[path = "12_wgmma_tma.rs"]
mod wgmma_tma_kernel;
#[path = "13_wgmma_tma_3xtf32.rs"]
mod wgmma_tma_3xtf32_kernel;
pub mod fixup;
pub mod pack;

pub use blocktile_1d_kernel::{BT1_BK, BT1_BM, BT1_BN, BT1_THREADS, BT1_TM, blocktile_1d};
pub use blocktile_2d_kernel::{BT2_BK, BT2_BM, BT2_BN, BT2_THREADS, BT2_TM, BT2_TN, blocktile_2d};
pub use double_buffered_kernel::{DB, double_buffered, double_buffered_with};
pub use naive_kernel::{NAIVE_BLOCK, naive};
pub use smem_tiled_kernel::{SMEM_TILE, smem_tiled};
pub use tf32_kernel::{TF32_BK, TF32_BM, TF32_BN, TF32_SHARED_FLOATS, TF32_STRIDE, TF32_THREADS, tf32, to_tf32};
pub use vectorized_kernel::vectorized;
pub use warptile_kernel::{WT, WarpTiling, warptile, warptile_with};
pub use wgmma_3xtf32_kernel::{X3_SHARED_BYTES, split_tf32, wgmma_3xtf32};
pub(crate) use wgmma_kernel::swizzled;
pub use wgmma_kernel::{WG_BK, WG_BM, WG_BN, WG_SHARED_BYTES, WG_STAGES, WG_THREADS, k_major_128b, wgmma};
pub use wgmma_promoted_kernel::{PR_BM, PR_BN, PR_SHARED_BYTES, PR_THREADS, wgmma_promoted};
pub use wgmma_tma_3xtf32_kernel::{
    TX3_BK, TX3_BM, TX3_BN, TX3_SHARED_BYTES, TX3_STAGE_BYTES, TX3_STAGES, TX3_THREADS, wgmma_tma_3xtf32,
};
pub use wgmma_tma_kernel::{
    TMA_BK, TMA_BM, TMA_BN, TMA_GROUP_ROWS, TMA_SHARED_BYTES, TMA_STAGE_BYTES, TMA_STAGES, TMA_THREADS, wgmma_tma,
};

// The steps name it `super::F4`.
use crate::mem::GlobalMut;
use crate::registry::ladder;
pub use crate::vector::F4;
use crate::{Dim3, LaunchDims, ThreadCtx};

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

/// The GEMM ladder, handed to a generator (`ladder!` here, the launchers
/// in `coalesce-host`). See [`crate::registry`].
#[macro_export]
#[doc(hidden)]
macro_rules! gemm_steps {
    ($then:ident $($pass:tt)*) => {
        $then! {
            $($pass)*
            op: "gemm";
            /// The GEMM versions, in teaching order: the FP32 ladder, then the
            /// tensor cores: TF32 (steps 8, 9) and FP32-accurate 3xTF32 (steps
            /// 10, 11); steps 9-11 only on `sm_90a`, the H100's.
            pub enum Variant, geometry Geometry;
            unsafe fn run<C>(ctx, a: *const f32, b: *const f32, c: *mut f32, p: Problem);

            /// Step 1: one thread per element of `C`.
            Naive => naive {
                step: "1",
                idea: "one thread per `C` element, `K` loads of `A` and `B` each: 2 global loads per FMA",
                entry: "gemm_naive",
                file: "gemm/01_naive.rs",
                body: naive,
                geometry: Geometry { precision: Precision::Fp32, tile: (NAIVE_BLOCK.y, NAIVE_BLOCK.x), block: NAIVE_BLOCK, shared_floats: 0, tma: false },
            }
            /// Step 2: 32x32 shared-memory tiles.
            SmemTiled => smem_tiled {
                step: "2",
                idea: "32x32 tiles of `A` and `B` staged in shared memory: each global element loaded once per tile",
                entry: "gemm_smem_tiled",
                file: "gemm/02_smem_tiled.rs",
                body: smem_tiled,
                geometry: Geometry { precision: Precision::Fp32, tile: (SMEM_TILE, SMEM_TILE), block: Dim3::xy(SMEM_TILE, SMEM_TILE), shared_floats: 2 * SMEM_TILE * SMEM_TILE, tma: false },
            }
            /// Step 3: 8 outputs per thread along a column.
            Blocktile1d => blocktile_1d {
                step: "3",
                idea: "each thread computes a column of 8 outputs: one shared `B` value serves 8 FMAs",
                entry: "gemm_blocktile_1d",
                file: "gemm/03_blocktile_1d.rs",
                body: blocktile_1d,
                geometry: Geometry { precision: Precision::Fp32, tile: (BT1_BM, BT1_BN), block: Dim3::xy(BT1_THREADS, 1), shared_floats: BT1_BM * BT1_BK + BT1_BK * BT1_BN, tma: false },
            }
            /// Step 4: an 8x8 register tile per thread.
            Blocktile2d => blocktile_2d {
                step: "4",
                idea: "each thread computes an 8x8 outer product: 16 shared values serve 64 FMAs",
                entry: "gemm_blocktile_2d",
                file: "gemm/04_blocktile_2d.rs",
                body: blocktile_2d,
                geometry: Geometry { precision: Precision::Fp32, tile: (BT2_BM, BT2_BN), block: Dim3::xy(BT2_THREADS, 1), shared_floats: BT2_BM * BT2_BK + BT2_BK * BT2_BN, tma: false },
            }
            /// Step 5: 16-byte loads, `A` tile transposed.
            Vectorized => vectorized {
                step: "5",
                idea: "16-byte global loads; the `A` tile stored transposed; 16-byte shared loads",
                entry: "gemm_vectorized",
                file: "gemm/05_vectorized.rs",
                body: vectorized,
                geometry: Geometry { precision: Precision::Fp32, tile: (BT2_BM, BT2_BN), block: Dim3::xy(BT2_THREADS, 1), shared_floats: BT2_BM * BT2_BK + BT2_BK * BT2_BN, tma: false },
            }
            /// Step 6: 4x4 fragments interleaved over warp tiles.
            Warptile => warptile {
                step: "6",
                idea: "threads of a warp own 4x4 fragments interleaved over a warp tile: conflict-free, broadcast shared loads",
                entry: "gemm_warptile",
                file: "gemm/06_warptile.rs",
                body: warptile,
                geometry: Geometry { precision: Precision::Fp32, tile: (WT.bm, WT.bn), block: Dim3::xy(WT.threads(), 1), shared_floats: WT.shared_floats(), tma: false },
            }
            /// Step 7: the next tile loads during this one's FMAs.
            DoubleBuffered => double_buffered {
                step: "7",
                idea: "two shared buffers: the next tile's global loads fly during this tile's FMAs; a 128x256 tile, 8x16 outputs per thread",
                entry: "gemm_double_buffered",
                file: "gemm/07_double_buffered.rs",
                body: double_buffered,
                geometry: Geometry { precision: Precision::Fp32, tile: (DB.bm, DB.bn), block: Dim3::xy(DB.threads(), 1), shared_floats: 2 * DB.shared_floats(), tma: false },
            }
            /// Step 8: tensor cores, inputs rounded to TF32 (about 3 significant
            /// digits), f32 accumulation. Not an FP32 GEMM.
            Tf32 => tf32 {
                step: "8",
                idea: "tensor cores: TF32 `mma.sync.m16n8k8` with f32 accumulation; inputs rounded to 10 mantissa bits",
                entry: "gemm_tf32",
                file: "gemm/08_tf32.rs",
                body: tf32,
                geometry: Geometry { precision: Precision::Tf32, tile: (TF32_BM, TF32_BN), block: Dim3::xy(TF32_THREADS, 1), shared_floats: TF32_SHARED_FLOATS, tma: false },
            }
            /// Step 9: Hopper's warpgroup MMA, operands read from shared
            /// memory by the tensor cores. TF32, as step 8; `sm_90a` only.
            Wgmma => wgmma {
                step: "9",
                idea: "TF32 `wgmma.mma_async.m64n256k8` by two warpgroups, operands K-major in 128-byte-swizzled shared memory staged by the threads, three buffers",
                entry: "gemm_wgmma",
                file: "gemm/09_wgmma.rs",
                body: wgmma,
                geometry: Geometry { precision: Precision::Tf32, tile: (WG_BM, WG_BN), block: Dim3::xy(WG_THREADS, 1), shared_floats: WG_SHARED_BYTES / 4, tma: false },
                needs: "sm_90a",
            }
            /// Step 10: FP32 accuracy on the TF32 tensor cores, each input
            /// split in two TF32 halves; `sm_90a` only.
            Wgmma3xTf32 => wgmma_3xtf32 {
                step: "10",
                idea: "3xTF32: `x = hi + lo`, both TF32, and `a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi` on step 9's `wgmma`: each product exact to 2^-22, three tensor-core products per term",
                entry: "gemm_wgmma_3xtf32",
                file: "gemm/10_wgmma_3xtf32.rs",
                body: wgmma_3xtf32,
                geometry: Geometry { precision: Precision::Split3xTf32, tile: (WG_BM, WG_BN), block: Dim3::xy(WG_THREADS, 1), shared_floats: X3_SHARED_BYTES / 4, tma: false },
                needs: "sm_90a",
            }
            /// Step 11: step 10 with the tensor cores' partial sums promoted
            /// into f32 registers every 32 of `K`; `sm_90a` only.
            WgmmaPromoted => wgmma_promoted {
                step: "11",
                idea: "3xTF32 whose `wgmma` accumulators hold one 32-deep tile (scale-d 0 on its first product), added into a second set of f32 registers after each tile (`add.f32`, to nearest): the tensor cores' truncation no longer drifts with `K`; `m64n128k8`, 128x128 tiles",
                entry: "gemm_wgmma_promoted",
                file: "gemm/11_wgmma_promoted.rs",
                body: wgmma_promoted,
                geometry: Geometry { precision: Precision::Split3xTf32, tile: (PR_BM, PR_BN), block: Dim3::xy(PR_THREADS, 1), shared_floats: PR_SHARED_BYTES / 4, tma: false },
                needs: "sm_90a",
            }
            /// Step 12: step 9's TF32 products fed by the TMA through an
            /// mbarrier pipeline, a producer warp beside two consumer
            /// warpgroups; the operands made K-major in a workspace first;
            /// `sm_90a` only.
            WgmmaTma => wgmma_tma {
                step: "12",
                idea: "TF32 `wgmma` fed by TMA copies (`cp.async.bulk.tensor`, tensor maps) into four stages with full/empty mbarriers: one producer warp issues the copies, two consumer warpgroups only multiply; both operands made K-major and rounded to TF32 by `gemm_pack` first (`B` transposed)",
                entry: "gemm_wgmma_tma",
                file: "gemm/12_wgmma_tma.rs",
                body: wgmma_tma,
                geometry: Geometry { precision: Precision::Tf32, tile: (TMA_BM, TMA_BN), block: Dim3::xy(TMA_THREADS, 1), shared_floats: TMA_SHARED_BYTES / 4, tma: true },
                needs: "sm_90a",
            }
            /// Step 13: step 11's promoted 3xTF32 on step 12's TMA pipeline,
            /// the operands split into TF32 halves in the workspace first;
            /// `sm_90a` only.
            WgmmaTma3xTf32 => wgmma_tma_3xtf32 {
                step: "13",
                idea: "promoted 3xTF32 (step 11's products and f32 promotion every 32 of `K`) on step 12's TMA pipeline: `gemm_pack` splits `A` and `B^T` into TF32 halves once, the TMA copies four 128x32 tiles a stage into three stages; 128x128 tiles",
                entry: "gemm_wgmma_tma_3xtf32",
                file: "gemm/13_wgmma_tma_3xtf32.rs",
                body: wgmma_tma_3xtf32,
                geometry: Geometry { precision: Precision::Split3xTf32, tile: (TX3_BM, TX3_BN), block: Dim3::xy(TX3_THREADS, 1), shared_floats: TX3_SHARED_BYTES / 4, tma: true },
                needs: "sm_90a",
            }
        }
    };
}
gemm_steps!(ladder);

/// What a GEMM version computes its products in, and so what it is held to
/// and compared with: cuBLAS SGEMM's accuracy and speed, or TF32's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// FP32 FMAs (the SIMT ladder).
    Fp32,
    /// Inputs rounded to TF32 (10 mantissa bits) on the tensor cores.
    Tf32,
    /// Each input split into two TF32 halves, three tensor-core products:
    /// FP32-level accuracy.
    Split3xTf32,
}

/// How a GEMM version is launched: one block per `tile` of `C`; and the
/// precision of its products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// What the products are computed in.
    pub precision: Precision,
    /// The `(BM, BN)` tile of `C` one block computes.
    pub tile: (u32, u32),
    /// Threads per block.
    pub block: Dim3,
    /// Floats of shared memory per block.
    pub shared_floats: u32,
    /// Whether the kernel reads `A` and `B` through TMA tensor maps (the
    /// host passes their addresses as `a` and `b` and makes `B` K-major
    /// first) rather than as row-major matrices.
    pub tma: bool,
}

impl Variant {
    /// How many steps compute in [`Precision::Fp32`].
    const FP32_COUNT: usize = {
        let (mut n, mut i) = (0, 0);
        while i < Self::ALL.len() {
            n += matches!(Self::ALL[i].geometry().precision, Precision::Fp32) as usize;
            i += 1;
        }
        n
    };

    /// The FP32 (FMA, non-tensor-core) steps, in ladder order.
    pub const FP32: [Variant; Self::FP32_COUNT] = {
        let (mut out, mut n, mut i) = ([Variant::Naive; Self::FP32_COUNT], 0, 0);
        while i < Self::ALL.len() {
            if matches!(Self::ALL[i].geometry().precision, Precision::Fp32) {
                out[n] = Self::ALL[i];
                n += 1;
            }
            i += 1;
        }
        out
    };

    /// Whether this version rounds its inputs to TF32 (tensor cores).
    pub const fn is_tf32(self) -> bool {
        matches!(self.geometry().precision, Precision::Tf32)
    }

    /// The factor `f` of the error bound `|c - ref| <= f * (|alpha| sum_k
    /// |a_ik b_kj| + |beta c0|)` (tests/gemm.rs derives each), for depth `k`,
    /// with `gamma_n = n u / (1 - n u)`, `u = 2^-24`:
    ///
    /// - FP32 (FMA) steps: `gamma_{k+3}`;
    /// - TF32 steps: `2^-10 + 2^-22 + 2 gamma_{k+3}` (each input rounded to
    ///   TF32, relative error `2^-11`; the tensor cores' f32 accumulation
    ///   allowed twice FP32's);
    /// - 3xTF32: `3 * 2^-22 (1 + 2^-20) + 2 gamma_{3k+3}` (the split drops
    ///   below `2^-22` per input and the `lo * lo` product; three products
    ///   per term accumulated);
    /// - 3xTF32 promoted every 32 of `K` (steps 11, 13): `3 * 2^-22 (1 + 2^-20)
    ///   + 2 gamma_{3 min(k, 32)} + gamma_{ceil(k/32)+3}` (the split's; the
    ///   tensor cores' accumulation of one tile's products, twice FP32's;
    ///   the promoted sum of `ceil(k/32)` partial sums and the epilogue,
    ///   rounded to nearest). Below FP32's `gamma_{k+3}` from `k = 256` on
    ///   (12 times at 4096); not below it for small `k`, where the split's
    ///   `12 u` alone passes `gamma_4`.
    pub fn error_bound(self, k: usize) -> f64 {
        const U: f64 = 1.0 / (1u64 << 24) as f64;
        let gamma = |n: usize| n as f64 * U / (1.0 - n as f64 * U);
        let p = |e: u32| 1.0 / (1u64 << e) as f64;
        let split = 3.0 * p(22) * (1.0 + p(20));
        match self {
            Variant::Wgmma3xTf32 => split + 2.0 * gamma(3 * k + 3),
            Variant::WgmmaPromoted | Variant::WgmmaTma3xTf32 => {
                split + 2.0 * gamma(3 * k.min(32)) + gamma(k.div_ceil(32) + 3)
            }
            v if v.is_tf32() => p(10) + p(22) + 2.0 * gamma(k + 3),
            _ => gamma(k + 3),
        }
    }

    /// The fastest FP32 version that every module has (step 7, FMA units
    /// only): what `gemm::sgemm` launches where step 13 is missing.
    pub const BEST: Variant = Variant::DoubleBuffered;

    /// What `gemm::sgemm` launches with the module built for `module`
    /// (`"sm_90a"`, `"sm_90"`, ..): step 13, promoted 3xTF32 on the tensor
    /// cores fed by the TMA, where the module has it (`sm_90a`, the H100's):
    /// measured faster than cuBLAS SGEMM and more accurate, at every shape
    /// of docs/gemm.md's table (its operand pass pads rows, so neither the
    /// shape nor the buffers' alignment matter). Else step 7
    /// ([`Variant::BEST`]).
    pub fn sgemm_for(module: &str) -> Variant {
        if Variant::WgmmaTma3xTf32.registry().in_module(module) { Variant::WgmmaTma3xTf32 } else { Variant::BEST }
    }

    /// The `(BM, BN)` tile of `C` one block computes.
    pub const fn block_tile(self) -> (u32, u32) {
        self.geometry().tile
    }

    /// Grid, block and shared memory for an `M x N` output. The grid is not
    /// checked against device limits here; the host does that.
    pub const fn launch_dims(self, m: u32, n: u32) -> LaunchDims {
        let g = self.geometry();
        let (bm, bn) = g.tile;
        LaunchDims { grid: Dim3::xy(n.div_ceil(bn), m.div_ceil(bm)), block: g.block, shared_bytes: g.shared_floats * 4 }
    }
}

/// The epilogue of every step, on element `i` of the view `c`:
/// `alpha * acc + beta * old`, where `old` is read only when `beta != 0`
/// (BLAS: with `beta == 0`, `C` may be garbage). On the emulator the load
/// and the store count at the caller's line.
///
/// The element is taken as a sub-view first, so that the load and the
/// store share one address computed before the branch on `beta`, as with a
/// pointer to the element (two computations, one per branch, let LLVM
/// reassociate the address differently).
///
/// # Safety
/// Element `i` inside `c`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn store_c_at<C: ThreadCtx>(c: GlobalMut<'_, C, f32>, i: usize, acc: f32, alpha: f32, beta: f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let c = c.at(i, 1usize);
        let v = if beta == 0.0 { alpha * acc } else { alpha * acc + beta * c.load(0) };
        c.store(0, v);
    }
}

/// [`store_c_at`] for the four adjacent elements `i..i + 4`, one 16-byte
/// load and store.
///
/// # Safety
/// Elements `i..i + 4` inside `c`, element `i` 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn store_c4_at<C: ThreadCtx>(
    c: GlobalMut<'_, C, f32>,
    i: usize,
    acc: [f32; 4],
    alpha: f32,
    beta: f32,
) {
    // SAFETY: forwarded from the caller.
    let c = unsafe { c.at(i, 4usize) }.cast::<F4>(1usize);
    let [x, y, z, w] = acc;
    let v = if beta == 0.0 {
        F4([alpha * x, alpha * y, alpha * z, alpha * w])
    } else {
        // SAFETY: forwarded from the caller.
        let F4([ox, oy, oz, ow]) = unsafe { c.load(0) };
        F4([alpha * x + beta * ox, alpha * y + beta * oy, alpha * z + beta * oz, alpha * w + beta * ow])
    };
    // SAFETY: forwarded from the caller.
    unsafe { c.store(0, v) };
}

/// The first 1024-byte boundary of the block's `bytes` of shared memory,
/// as a view of the bytes from there and as the shared-space address
/// `wgmma` descriptors take: the tensor-core steps' 128-byte swizzle repeats
/// every 1024 bytes, and their launches reserve 1024 bytes for this skew.
#[inline(always)]
pub(crate) fn swizzle_base<C: crate::ThreadCtx>(ctx: &C, bytes: u32) -> (crate::Shared<'_, C, u8>, u32) {
    let raw = ctx.shared::<F4>(bytes / 16).cast::<u8>(bytes);
    let skew = (1024 - ctx.shared_addr(raw.as_ptr()) as usize % 1024) % 1024;
    // SAFETY: the launch reserves 1024 bytes for this skew.
    let base = unsafe { raw.at(skew, bytes as usize - skew) };
    (base, ctx.shared_addr(base.as_ptr()))
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
