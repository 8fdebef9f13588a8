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

mod ring;
mod tiles;
mod warpgroup;
pub mod fixup;
pub mod ozaki;
pub mod pack;
pub mod scale;
pub mod split_k;

// What code outside the steps uses (the host's plans, the lessons, the
// tests); the steps' other constants stay in their files, and a step that
// builds on another names it by its module (`super::wgmma::WG_BM`).
pub use blocktile_1d::{BT1_BK, BT1_BM, BT1_BN, BT1_THREADS, BT1_TM};
pub use double_buffered::DB;
pub use tf32::to_tf32;
pub use warpgroup::k_major_128b;
pub(crate) use warpgroup::{swizzle_base, swizzled};
pub use warptile::{WT, WarpTiling};
pub use wgmma_3xtf32::split_tf32;
pub use wgmma_direct::{DIRECT_B_BOX, DIRECT_BK, DIRECT_BM, pair_of};
pub use wgmma_direct_3xtf32::{DX3_MARKS_OFFSET, low_half};
pub use wgmma_ozaki::{OZ_SCRATCH_WORDS, oz_scratch_offset};
pub use wgmma_tma::TMA_BK;

// The steps name it `super::F4`.
use crate::mem::{Global, GlobalMut, Shared};
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
            /// The GEMM versions, in teaching order: the FP32 ladder (steps
            /// 1-7), then the tensor cores: TF32 (steps 8, 9, 12, 14),
            /// FP32-accurate 3xTF32 (steps 10, 11, 13, 15, 16) and INT8
            /// products by Ozaki scheme II (step 17); steps 9-17 only on
            /// `sm_90a`, the H100's.
            pub enum Variant, geometry Geometry;
            unsafe fn run<C>(ctx, a: *const f32, b: *const f32, c: *mut f32, p: Problem);
            kernel(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, alpha: f32, beta: f32)
                => (a, b, c, Problem { m, n, k, alpha, beta });

            /// one thread per `C` element, `K` loads of `A` and `B` each: 2 global loads per FMA
            Naive => naive: "1" in "01_naive.rs";
            /// 32x32 tiles of `A` and `B` staged in shared memory: each global element loaded once per tile
            SmemTiled => smem_tiled: "2" in "02_smem_tiled.rs";
            /// each thread computes a column of 8 outputs: one shared `B` value serves 8 FMAs
            Blocktile1d => blocktile_1d: "3" in "03_blocktile_1d.rs";
            /// each thread computes an 8x8 outer product: 16 shared values serve 64 FMAs
            Blocktile2d => blocktile_2d: "4" in "04_blocktile_2d.rs";
            /// 16-byte global loads; the `A` tile stored transposed; 16-byte shared loads
            Vectorized => vectorized: "5" in "05_vectorized.rs";
            /// threads of a warp own 4x4 fragments interleaved over a warp tile: conflict-free, broadcast shared loads
            Warptile => warptile: "6" in "06_warptile.rs";
            /// two shared buffers: the next tile's global loads fly during this tile's FMAs; a 128x256 tile, 8x16 outputs per thread
            DoubleBuffered => double_buffered: "7" in "07_double_buffered.rs";
            /// tensor cores: TF32 `mma.sync.m16n8k8` with f32 accumulation; inputs rounded to 10 mantissa bits
            Tf32 => tf32: "8" in "08_tf32.rs";
            /// TF32 `wgmma.mma_async.m64n256k8` by two warpgroups, operands K-major in 128-byte-swizzled shared memory staged by the threads, three buffers
            Wgmma => wgmma: "9" in "09_wgmma.rs" { needs: "sm_90a", };
            /// 3xTF32: `x = hi + lo`, both TF32, and `a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi` on step 9's `wgmma`: each product exact to 2^-22, three tensor-core products per term
            Wgmma3xTf32 => wgmma_3xtf32: "10" in "10_wgmma_3xtf32.rs" { needs: "sm_90a", };
            /// 3xTF32 whose `wgmma` accumulators hold one 32-deep tile (scale-d 0 on its first product), added into a second set of f32 registers after each tile (`add.f32`, to nearest): the tensor cores' truncation no longer drifts with `K`; `m64n128k8`, 128x128 tiles
            WgmmaPromoted => wgmma_promoted: "11" in "11_wgmma_promoted.rs" { needs: "sm_90a", };
            /// TF32 `wgmma` fed by TMA copies (`cp.async.bulk.tensor`, tensor maps) into four stages with full/empty mbarriers: one producer warp issues the copies, two consumer warpgroups only multiply; both operands made K-major and rounded to TF32 by `gemm_pack` first (`B` transposed)
            WgmmaTma => wgmma_tma: "12" in "12_wgmma_tma.rs" { needs: "sm_90a", };
            /// promoted 3xTF32 (step 11's products and f32 promotion every 32 of `K`) on step 12's TMA pipeline: `gemm_pack` splits `A` and `B^T` into TF32 halves once, the TMA copies four 128x32 tiles a stage into three stages; 128x128 tiles
            WgmmaTma3xTf32 => wgmma_tma_3xtf32: "13" in "13_wgmma_tma_3xtf32.rs" { needs: "sm_90a", };
            /// step 12's TMA pipeline on `A` and `B` as they are, no operand pass: tensor maps of type TF32 round in the copy, and `C^T = B^T A^T` takes the N-major `B` through registers (`wgmma` with `A` in registers); 256x128 tiles
            WgmmaDirect => wgmma_direct: "14" in "14_wgmma_direct.rs" { needs: "sm_90a", };
            /// step 13's promoted 3xTF32 on `A` and `B` as they are, no operand pass: the TMA copies f32 tiles, whose top 19 bits the tensor cores read as the high halves; `C^T = B^T A^T` takes `B`'s low half from the consumers' registers, and a splitter warpgroup writes `A`'s beside its tile; 128x128 tiles
            WgmmaDirect3xTf32 => wgmma_direct_3xtf32: "15" in "15_wgmma_direct_3xtf32.rs" { needs: "sm_90a", };
            /// step 15 with `A`'s halves made by `gemm_pack` first and copied by the TMA (one map over `A_hi` and the `A_lo` rows below it), `B`'s still split in the consumers' registers: no splitter warpgroup, no shared-memory traffic from the threads for `A`
            WgmmaSplitA3xTf32 => wgmma_split_a_3xtf32: "16" in "16_wgmma_split_a_3xtf32.rs" { needs: "sm_90a", };
            /// Ozaki scheme II: `A` and `B` scaled by rows and columns and rounded to integers, their residues modulo 9 coprime moduli multiplied exactly by `wgmma` `m64n256k32` on signed bytes (step 12's pipeline), `C` rebuilt by the Chinese remainder theorem: nine INT8 products a term, no TF32
            WgmmaOzaki => wgmma_ozaki: "17" in "17_wgmma_ozaki.rs" { needs: "sm_90a", };
        }
    };
}
gemm_steps!(ladder);

/// What a GEMM version computes its products in, and so what it is held to
/// ([`Variant::error_bound`]) and compared with: cuBLAS SGEMM's accuracy
/// and speed, or TF32's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// FP32 FMAs (the SIMT ladder).
    Fp32,
    /// Inputs rounded to TF32 (10 mantissa bits) on the tensor cores.
    Tf32,
    /// Each input split into two TF32 halves, three tensor-core products:
    /// FP32-level accuracy where the sum is `promoted`, each 32-deep
    /// partial sum added into f32 registers rounded to nearest; without,
    /// the tensor cores' accumulator, which truncates, holds all of `K`.
    Split3xTf32 { split: Split, promoted: bool },
    /// Ozaki scheme II ([`ozaki`]): each row of `A` and column of `B`
    /// rounded to integers of `alpha` bits, `alpha` as many as `moduli`
    /// moduli allow at the depth; their product exact, from `moduli` INT8
    /// products.
    Ozaki { moduli: u32 },
}

/// How a 3xTF32 step splits an f32 `x` into its halves `hi + lo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `hi = tf32(x)`, `lo = tf32(x - hi)`, both rounded to nearest
    /// ([`split_tf32`]).
    Rounded,
    /// `hi` is the f32's top 19 bits, as the tensor cores read an f32 tile
    /// the TMA copied (truncated), `lo = tf32(x - hi)`.
    TopBits,
}

impl Precision {
    /// Whether the products are 3xTF32's (FP32's accuracy, a third of the
    /// TF32 roof).
    pub const fn is_3xtf32(self) -> bool {
        matches!(self, Precision::Split3xTf32 { .. })
    }

    /// Whether the products see only finite inputs, the non-finite ones
    /// marked for `gemm_fixup` to rebuild their rows and columns of `C` in
    /// FP32: 3xTF32 (whose split of an inf is NaN) and Ozaki (whose
    /// integers have no inf).
    pub const fn fixes_up(self) -> bool {
        matches!(self, Precision::Split3xTf32 { .. } | Precision::Ozaki { .. })
    }

    /// Whether the error bound scales the operands' peaks, `max |a_i.| sum
    /// |b_.j| + sum |a_i.| max |b_.j|`, instead of `sum |a b|`
    /// ([`Variant::error_bound`]).
    pub const fn bounds_peaks(self) -> bool {
        matches!(self, Precision::Ozaki { .. })
    }
}

/// How a TMA step's operands reach its tensor maps. The step declares it;
/// the host's runner derives from it the workspace, the passes before the
/// product and the kernels after it: `gemm_maxima` where `scaled`, a
/// `gemm_pack` pass for each operand that is copied, the product,
/// `gemm_sum_splits` where `K` is split, and for 3xTF32 `gemm_fixup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feed {
    pub a: Operand,
    pub b: Operand,
    /// Whether the product runs on `A` and `B` scaled by exact powers of
    /// two, by rows and by columns, and unscales `C` ([`scale`]):
    /// `gemm_maxima` finds the peaks first, and `A`'s pass (an
    /// [`Operand::Stacked`]) scales as it splits. FP32's accuracy then
    /// holds on subnormal and near-`FLT_MAX` operands.
    pub scaled: bool,
}

/// How one operand of a TMA step reaches its tensor map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// As it is, row-major (`B` N-major), in a map of element type TF32 for
    /// a TF32 step (the copy rounds) or f32 for 3xTF32; where its rows are
    /// not 16-byte aligned (a map needs them so), a copy with its rows
    /// padded ([`pack::PACK_KEEP`]).
    AsItIs,
    /// A K-major copy (`B` transposed) by `gemm_pack`: rounded to TF32, or
    /// for 3xTF32 split into its TF32 halves, a map each.
    KMajor,
    /// Split into TF32 halves by `gemm_pack`: `m` rows of `A_hi`, then `m`
    /// of `A_lo`, one map over both.
    Stacked,
    /// Scaled, rounded to integers and reduced to signed-byte residues by
    /// `gemm_pack` ([`pack::PACK_RESIDUES`]), K-major (`B` transposed):
    /// one plane a modulus, one map over all of them, its elements 4 bytes.
    Residues,
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
    /// For a TMA step, how `A` and `B` reach its tensor maps (the host
    /// passes the maps' addresses as `a` and `b`); `None`: the kernel reads
    /// them as row-major matrices.
    pub feed: Option<Feed>,
    /// Whether the kernel reads a run of `K` from `blockIdx.z` and writes
    /// its partial product to slice `z` of `c` ([`split_k`]): the host
    /// may then split `K` where `C` has too few tiles for the GPU.
    pub splits_k: bool,
    /// The most passes over `K` (tiles of [`TMA_BK`]) a tile of `C` may
    /// take for the host to launch one block an SM where `C` has more tiles
    /// than the GPU has SMs, each block computing tiles `i, i + G, ..` (`G`
    /// blocks in the grid); 0: never.
    pub walks_tiles: u32,
}

impl Geometry {
    /// `precision` products, one block of `block` threads per `tile` of `C`,
    /// `shared_floats` of shared memory, operands read as row-major matrices.
    pub const fn of(precision: Precision, tile: (u32, u32), block: Dim3, shared_floats: u32) -> Geometry {
        Geometry { precision, tile, block, shared_floats, feed: None, splits_k: false, walks_tiles: 0 }
    }

    /// The same, with `A` and `B` read through TMA tensor maps as `feed`
    /// says.
    pub const fn fed_by(self, feed: Feed) -> Geometry {
        Geometry { feed: Some(feed), ..self }
    }

    /// Whether the kernel reads `A` and `B` through TMA tensor maps.
    pub const fn tma(self) -> bool {
        self.feed.is_some()
    }

    /// Whether the step is FP32-accurate on the tensor cores: 3xTF32 fed by
    /// TMA (steps 13, 15 and 16), marking inputs that hold an inf or NaN
    /// and rebuilding those elements after the product (`gemm_fixup`).
    /// `sgemm` chooses among these and step 7. Step 17 (Ozaki) fixes up
    /// too, but its bound scales its operands' peaks, not `sum |a b|`: an
    /// element far below its row's peak keeps few bits.
    pub const fn fp32_accurate_tma(self) -> bool {
        self.tma() && self.precision.is_3xtf32()
    }

    /// Whether the step is fed by TMA and rebuilds the elements of
    /// non-finite inputs after the product ([`Precision::fixes_up`]).
    pub const fn tma_fixes_up(self) -> bool {
        self.tma() && self.precision.fixes_up()
    }

    /// The same, reading its run of `K` from `blockIdx.z` ([`split_k`]).
    pub const fn splitting_k(self) -> Geometry {
        Geometry { splits_k: true, ..self }
    }

    /// The same, walking the tiles of `C` from its block's index in steps of
    /// the grid's blocks where a tile takes at most `passes` passes over `K`.
    pub const fn walking_tiles(self, passes: u32) -> Geometry {
        Geometry { walks_tiles: passes, ..self }
    }

    /// Whether a `C` of `tiles` tiles over `k_tiles` passes of `K` runs on
    /// one block an SM of `sm_count`, each walking its tiles: more tiles
    /// than SMs, each of at most [`Geometry::walks_tiles`] passes.
    pub const fn walks(self, tiles: u32, k_tiles: u32, sm_count: u32) -> bool {
        tiles > sm_count && k_tiles <= self.walks_tiles
    }

    /// Whether the block's shared memory passes the 48 KiB a launch gets
    /// without opting in.
    pub const fn opt_in_shared(self) -> bool {
        self.shared_floats * 4 > 48 * 1024
    }
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
    /// |a_ik b_kj| + |beta c0|)` (tests/gemm/reference.rs derives each), for depth `k`,
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
    ///   `12 u` alone passes `gamma_4`;
    /// - the split by the tensor cores' truncated top bits ([`Split::TopBits`],
    ///   steps 15 and 16): step 13's, with each split's high half truncated
    ///   (`x = hi + r`, `|r| < 2^-10 |x|`, `lo = tf32(r)` within `2^-21 |x|`):
    ///   `2^-19` for the split (the two residues and the dropped `lo lo`).
    ///   Step 16 splits `A` by rounding, tighter, and `B` by its top bits:
    ///   the looser holds;
    /// - Ozaki scheme II (step 17), against the operands' peaks `P_ij =
    ///   max |a_i.| sum |b_.j| + sum |a_i.| max |b_.j|` (at least `sum |a
    ///   b|`) in place of `sum |a b|` ([`Precision::bounds_peaks`]): `g +
    ///   gamma_4 (1 + g)`, `g = 2^-alpha (1 + k 2^-alpha)`, `alpha` the
    ///   operands' bits ([`ozaki::alpha`]): each rounded operand is within
    ///   `2^-alpha` of its row's (column's) peak, and the product of two
    ///   adds their cross term; the integer product and its reconstruction
    ///   are exact to f64, then one rounding to f32 and the epilogue's.
    pub fn error_bound(self, k: usize) -> f64 {
        const U: f64 = 1.0 / (1u64 << 24) as f64;
        let gamma = |n: usize| n as f64 * U / (1.0 - n as f64 * U);
        let p = |e: u32| 1.0 / (1u64 << e) as f64;
        match self.geometry().precision {
            Precision::Fp32 => gamma(k + 3),
            Precision::Tf32 => p(10) + p(22) + 2.0 * gamma(k + 3),
            Precision::Split3xTf32 { split, promoted } => {
                let split = match split {
                    Split::Rounded => 3.0 * p(22) * (1.0 + p(20)),
                    Split::TopBits => p(19),
                };
                let sums = if promoted {
                    2.0 * gamma(3 * k.min(32)) + gamma(k.div_ceil(32) + 3)
                } else {
                    2.0 * gamma(3 * k + 3)
                };
                split + sums
            }
            Precision::Ozaki { moduli } => {
                let bits = p(ozaki::alpha(moduli as usize, k));
                let g = bits * (1.0 + k as f64 * bits);
                g + gamma(4) * (1.0 + g)
            }
        }
    }

    /// What [`Variant::error_bound`]'s factor multiplies at one element of
    /// `C = A B`, from its row `a` of `A` and column `b` of `B`: `sum |a
    /// b|`, or for a bound on the peaks ([`Precision::bounds_peaks`]) `max
    /// |a| sum |b| + sum |a| max |b|` ([`peaks_scale`]).
    pub fn error_scale(self, a: impl Iterator<Item = f32>, b: impl Iterator<Item = f32>) -> f64 {
        if self.geometry().precision.bounds_peaks() {
            peaks_scale(peak_and_sum(a), peak_and_sum(b))
        } else {
            a.zip(b).map(|(x, y)| (x as f64 * y as f64).abs()).sum()
        }
    }

    /// The fastest FP32 version that every module has (step 7, FMA units
    /// only): what `gemm::sgemm` launches where step 16 is missing.
    pub const BEST: Variant = Variant::DoubleBuffered;

    /// What `gemm::sgemm` launches for an `m x n x k` product with the
    /// module built for `module` (`"sm_90a"`, `"sm_90"`, ..). Where the
    /// module has it (`sm_90a`, the H100's), step 16, FP32-accurate 3xTF32
    /// on the tensor cores: measured on an H200 faster than steps 13 and 15
    /// (and than cuBLAS SGEMM, and more accurate) at every shape of
    /// docs/gemm.md's off-tile table, splitting `K` where `C` has too few
    /// tiles. Else step 7 ([`Variant::BEST`]). The shape picks nothing
    /// today; it stays in the signature for the steps to come.
    pub fn sgemm_for(module: &str, _shape: (usize, usize, usize)) -> Variant {
        let step = Variant::WgmmaSplitA3xTf32;
        if step.registry().in_module(module) { step } else { Variant::BEST }
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
    c: GlobalMut<'_, C, f32>, i: usize, acc: [f32; 4], alpha: f32, beta: f32,
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

/// [`store_c_at`] for the two adjacent elements `i..i + 2`, one 8-byte
/// load and store.
///
/// # Safety
/// Elements `i..i + 2` inside `c`, element `i` 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn store_c2_at<C: ThreadCtx>(
    c: GlobalMut<'_, C, f32>, i: usize, acc: [f32; 2], alpha: f32, beta: f32,
) {
    // SAFETY: forwarded from the caller.
    let c = unsafe { c.at(i, 2usize) }.cast::<crate::vector::F2>(1usize);
    let [x, y] = acc;
    let v = if beta == 0.0 {
        crate::vector::F2([alpha * x, alpha * y])
    } else {
        // SAFETY: forwarded from the caller.
        let crate::vector::F2([ox, oy]) = unsafe { c.load(0) };
        crate::vector::F2([alpha * x + beta * ox, alpha * y + beta * oy])
    };
    // SAFETY: forwarded from the caller.
    unsafe { c.store(0, v) };
}

/// Element `(r, c)` of the row-major `rows x cols` matrix `x`, or zero
/// outside it: the tile loads of steps 3 and 4, which zero-fill as step 2
/// does. `inside` says the element is inside without a check (the whole
/// tile is). On the emulator the load counts at the caller's line.
///
/// # Safety
/// `x` holds the `rows * cols` floats; `inside` only if `r < rows`, `c < cols`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn load_or_zero<C: ThreadCtx>(
    x: Global<'_, C, f32>, (rows, cols): (usize, usize), (r, c): (usize, usize), inside: bool,
) -> f32 {
    // SAFETY: inside, or checked.
    if inside || (r < rows && c < cols) { unsafe { x.load(r * cols + c) } } else { 0.0 }
}

/// The block's shared memory as the two tiles it stages: `A`'s `a_floats`
/// floats, then `B`'s `b_floats` (the launch gives the sum). Declared as
/// `T`: `F4` aligns the tiles for 16-byte accesses (`a_floats` a multiple
/// of 4 then).
#[inline(always)]
pub(crate) fn shared_tiles<C: ThreadCtx, T>(
    ctx: &C, a_floats: usize, b_floats: usize,
) -> (Shared<'_, C, f32>, Shared<'_, C, f32>) {
    let floats = a_floats + b_floats;
    let smem = ctx.shared::<T>(floats * 4 / size_of::<T>()).cast::<f32>(floats);
    // SAFETY: the two tiles split the view.
    unsafe { (smem.at(0, a_floats), smem.at(a_floats, b_floats)) }
}

/// Whether every pointer is 16-byte aligned (the vector paths need it).
#[inline(always)]
pub(crate) fn aligned16(a: *const f32, b: *const f32, c: *const f32) -> bool {
    (a as usize | b as usize | c as usize).is_multiple_of(16)
}

/// `[max |x|, sum |x|]` of a row of `A` or a column of `B`, in f64: what
/// [`peaks_scale`] takes, once per row and column where a bound on the
/// peaks is wanted at every element.
pub fn peak_and_sum(xs: impl Iterator<Item = f32>) -> [f64; 2] {
    xs.fold([0.0, 0.0], |[peak, sum], x| {
        let x = (x as f64).abs();
        [peak.max(x), sum + x]
    })
}

/// The magnitude a bound on the peaks scales at one element of `C = A B`,
/// from its row's and column's [`peak_and_sum`]: `max |a| sum |b| + sum |a|
/// max |b|`.
pub fn peaks_scale(a: [f64; 2], b: [f64; 2]) -> f64 {
    a[0] * b[1] + a[1] * b[0]
}

/// A xorshift64 generator from `seed` (nonzero): the GEMM modules' unit
/// tests draw their inputs from it, without a crate for it in `no_std`.
#[cfg(test)]
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
