//! Step 8 (tensor cores, reported apart from the FP32 ladder): TF32
//! `mma.sync.aligned.m16n8k8` with f32 accumulation.
//! (`docs/gemm.md`, "8. tf32")
//!
//! **Idea:** the FP32 steps are bounded by the FMA pipes (one FMA per lane
//! per cycle). A tensor core multiplies a 16x8 tile of `A` by an 8x8 tile of
//! `B` in one warp-wide instruction, on inputs rounded to TF32 (8-bit
//! exponent, 10-bit mantissa), accumulating in f32. Each warp owns a 64x32
//! tile of `C` (4 x 4 tiles of 16x8, 64 f32 accumulators per thread); the
//! block, 8 warps, a 128x128 tile. Tiles of `A` and `B` are staged as in
//! step 7 (16-byte global loads, double-buffered shared memory, one barrier
//! per `K` step of 16), converted to TF32 once, on the way into shared
//! memory (`cvt.rna.tf32.f32`).
//!
//! **Fragments:** per the PTX ISA's m16n8k8 `.tf32` layout, lane `l` (group
//! `g = l / 4`, `t = l % 4`) holds `A[g][t]`, `A[g+8][t]`, `A[g][t+4]`,
//! `A[g+8][t+4]` and `B[t][g]`, `B[t+4][g]`, and receives `C[g][2t]`,
//! `C[g][2t+1]`, `C[g+8][2t]`, `C[g+8][2t+1]`. The fragments are read from
//! shared memory with scalar loads; rows of the `A` tile (transposed, as in
//! steps 5-7) and of the `B` tile are padded by 8 floats, so the 4 `k` rows
//! times 8 `m` (or `n`) columns a warp reads fall in 32 different banks.
//!
//! **What it costs:** precision. Inputs lose 13 mantissa bits (relative
//! rounding error 2^-11 instead of 2^-24), so results match FP32 to about
//! 3 decimal digits, and the tests use a TF32 bound. `mma.sync` is also not
//! Hopper's fastest tensor-core path (`wgmma`, asynchronous and fed from
//! shared memory by the TMA), and the scalar fragment loads cost a shared
//! load per 2/3 MMA: this kernel shows the idea, not cuBLAS's TF32 speed.
//!
//! On the CPU emulator the MMA is computed in f32 with FMAs from the
//! fragments the 32 lanes hold, each obtained from the same fragment-load
//! functions as on the GPU (a lane evaluates them for the lanes it needs,
//! instead of 64 warp barriers per MMA).

use super::tiles::{TileCtx, a_fast, b_fast, load_a, load_b, stage_a, stage_b};
use super::{F4, Problem, store_c_at};
use crate::ThreadCtx;
use crate::mem::Shared;

use super::{Dim3, Geometry, Precision};

/// How this step is launched: `launch_dims` reads it.
pub const GEOMETRY: Geometry =
    Geometry::of(Precision::Tf32, (TF32_BM, TF32_BN), Dim3::xy(TF32_THREADS, 1), TF32_SHARED_FLOATS);

/// Rows of the `C` tile per block.
pub const TF32_BM: u32 = 128;
/// Columns of the `C` tile per block.
pub const TF32_BN: u32 = 128;
/// Depth of a staged tile (two MMA `k` steps of 8).
pub const TF32_BK: u32 = 16;
/// Threads per block: 8 warps, 2 along `M` by 4 along `N`.
pub const TF32_THREADS: u32 = 256;
/// Row stride of the transposed `A` tile and of the `B` tile in shared
/// memory: 8 floats of padding (see the module doc).
pub const TF32_STRIDE: u32 = 128 + 8;
/// Floats of shared memory: two buffers of an `A` and a `B` tile.
pub const TF32_SHARED_FLOATS: u32 = 2 * 2 * TF32_BK * TF32_STRIDE;

const BM: usize = TF32_BM as usize;
const BN: usize = TF32_BN as usize;
const BK: usize = TF32_BK as usize;
const THREADS: usize = TF32_THREADS as usize;
const STRIDE: usize = TF32_STRIDE as usize;
/// Rows and columns of `C` per warp.
const WM: usize = 64;
const WN: usize = 32;
/// 16x8 MMA tiles per warp along `M` and `N`.
const MT: usize = WM / 16;
const NT: usize = WN / 8;
/// 16-byte vectors of each tile per thread and stage.
const NA: usize = BM * BK / 4 / THREADS;
const NB: usize = BK * BN / 4 / THREADS;

const _: () =
    assert!((BM / WM) * (BN / WN) * 32 == THREADS && NA * THREADS * 4 == BM * BK && NB * THREADS * 4 == BK * BN);

#[cfg(target_arch = "nvptx64")]
#[repr(C)]
struct MmaOut(f32, f32, f32, f32);

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.mma.m16n8k8.row.col.tf32"]
    fn mma_m16n8k8_tf32(
        a0: i32, a1: i32, a2: i32, a3: i32, b0: i32, b1: i32, c0: f32, c1: f32, c2: f32, c3: f32,
    ) -> MmaOut;
    #[link_name = "llvm.nvvm.f2tf32.rna"]
    fn f2tf32_rna(x: f32) -> i32;
}

/// `x` rounded to TF32 (10 mantissa bits), to nearest with ties away from
/// zero, as `cvt.rna.tf32.f32`; returned as an f32 whose low 13 bits are 0.
#[inline(always)]
pub fn to_tf32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure conversion.
        f32::from_bits(unsafe { f2tf32_rna(x) } as u32)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if x.is_finite() { f32::from_bits((x.to_bits() + 0x1000) & 0xffff_e000) } else { x }
    }
}

/// Lane `lane`'s `A` fragment of the 16x8 tile at rows `m ..+16`, columns
/// `k ..+8` of the transposed tile `a_tile` (`As[k][m]`, row stride
/// [`TF32_STRIDE`]): `A[g][t]`, `A[g+8][t]`, `A[g][t+4]`, `A[g+8][t+4]`.
///
/// # Safety
/// The 16x8 tile lies inside the staged tile.
#[inline(always)]
unsafe fn a_frag<C: ThreadCtx>(a_tile: Shared<'_, C, f32>, lane: usize, m: usize, k: usize) -> [f32; 4] {
    let (g, t) = (lane / 4, lane % 4);
    // SAFETY: forwarded.
    unsafe {
        // From `A[g][t]` on: `A[g+8][t]` is 8 floats further, `A[g][t+4]`
        // 4 rows of the transposed tile.
        let at = a_tile.at((k + t) * STRIDE + m + g, 4 * STRIDE + 9);
        [at.load(0), at.load(8), at.load(4 * STRIDE), at.load(4 * STRIDE + 8)]
    }
}

/// Lane `lane`'s `B` fragment of the 8x8 tile at rows `k ..+8`, columns
/// `n ..+8` of `b_tile` (`Bs[k][n]`, row stride [`TF32_STRIDE`]): `B[t][g]`,
/// `B[t+4][g]`.
///
/// # Safety
/// The 8x8 tile lies inside the staged tile.
#[inline(always)]
unsafe fn b_frag<C: ThreadCtx>(b_tile: Shared<'_, C, f32>, lane: usize, n: usize, k: usize) -> [f32; 2] {
    let (g, t) = (lane / 4, lane % 4);
    // SAFETY: forwarded.
    unsafe { [b_tile.load((k + t) * STRIDE + n + g), b_tile.load((k + t + 4) * STRIDE + n + g)] }
}

/// One warp-wide `D = A * B + C` on a 16x8x8 tile from this lane's
/// fragments (layout in the module doc): `mma.sync.aligned.m16n8k8.row.col.
/// f32.tf32.tf32.f32`. Every lane of the warp must call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn mma(a: [f32; 4], b: [f32; 2], c: [f32; 4]) -> [f32; 4] {
    let i = |x: f32| x.to_bits() as i32;
    // SAFETY: warp-uniform call (the caller's contract); a register-only op.
    let d = unsafe { mma_m16n8k8_tf32(i(a[0]), i(a[1]), i(a[2]), i(a[3]), i(b[0]), i(b[1]), c[0], c[1], c[2], c[3]) };
    [d.0, d.1, d.2, d.3]
}

/// The MMA on the emulator, from the PTX ISA's fragment layout: element
/// `A[r][k]` is held by lane `4 (r % 8) + k % 4` (register `a0..a3` by
/// `r >= 8`, `k >= 4`), `B[k][n]` by lane `4 n + k % 4` (`b0`/`b1` by
/// `k >= 4`). `a_of(l)`/`b_of(l)` return lane `l`'s fragments, computed by
/// the very functions the GPU path uses, so the layout is what is tested.
/// Each is asked once for each lane whose fragment this lane's outputs
/// need: the 4 that hold rows `g` and `g + 8` of `A`, the 8 that hold
/// columns `2t` and `2t + 1` of `B`.
#[cfg(not(target_arch = "nvptx64"))]
fn mma_emulated(
    lane: usize, a_of: impl Fn(usize) -> [f32; 4], b_of: impl Fn(usize) -> [f32; 2], c: [f32; 4],
) -> [f32; 4] {
    let (g, t) = (lane / 4, lane % 4);
    let a_lanes: [[f32; 4]; 4] = core::array::from_fn(|j| a_of(4 * g + j));
    let b_lanes: [[f32; 2]; 8] = core::array::from_fn(|j| b_of(8 * t + j));
    // Only for the rows g, g + 8 and the columns 2t, 2t + 1 read below.
    let a = |r: usize, k: usize| a_lanes[4 * (r % 8) + k % 4 - 4 * g][(r / 8) + 2 * (k / 4)];
    let b = |k: usize, n: usize| b_lanes[4 * n + k % 4 - 8 * t][k / 4];
    let dot = |r: usize, n: usize, acc: f32| (0..8).fold(acc, |s, k| a(r, k).mul_add(b(k, n), s));
    [dot(g, 2 * t, c[0]), dot(g, 2 * t + 1, c[1]), dot(g + 8, 2 * t, c[2]), dot(g + 8, 2 * t + 1, c[3])]
}

/// `C = alpha * A * B + beta * C` on the tensor cores, inputs rounded to
/// TF32, accumulation in f32.
///
/// # Parameters
/// As [`super::naive`]. Shared memory: [`TF32_SHARED_FLOATS`] floats (34 KiB):
/// two buffers of `As[16][136]` (transposed) and `Bs[16][136]`.
///
/// # Thread mapping
/// 256 threads (1D), grid `ceil(n/128) x ceil(m/128)`. Warp `w` owns rows
/// `64 * (w / 4) ..+64`, columns `32 * (w % 4) ..+32` of the block tile: 4 x 4
/// MMA tiles of 16x8. Staging: thread `t` moves vectors `t` and `t + 256`
/// of each tile, as in step 7.
///
/// # Safety
/// As [`super::naive`].
#[inline(always)]
pub unsafe fn tf32<C: ThreadCtx>(ctx: &C, a: *const f32, b: *const f32, c: *mut f32, p: Problem) {
    let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
    // As F4, for the 16-byte alignment of the vector stores.
    let smem = ctx.shared::<F4>(TF32_SHARED_FLOATS / 4).cast::<f32>(TF32_SHARED_FLOATS);
    let tid = ctx.thread_idx().x as usize;
    let t = TileCtx::new(ctx, &p, (BM, BN), (a, b, c));
    let (warp, lane) = (tid / 32, tid % 32);
    let (grp, tig) = (lane / 4, lane % 4); // for the epilogue
    let (wm0, wn0) = ((warp / (BN / WN)) * WM, (warp % (BN / WN)) * WN);
    let tile_floats = BK * STRIDE;
    let tiles = t.k.div_ceil(BK);

    // The tiles at k0, into this thread's staging registers.
    let load = |k0: usize| {
        let (fa, fb) = (a_fast(&t, BM, k0, BK), b_fast(&t, BN, k0, BK));
        let (mut sa, mut sb) = ([F4::ZERO; NA], [F4::ZERO; NB]);
        unroll!(i < NA, [0, 1, 2, 3], {
            // SAFETY: vector index < BM*BK/4; loads checked or inside A.
            sa[i] = unsafe { load_a(a, &t, k0, BK, tid + i * THREADS, fa) };
        });
        unroll!(i < NB, [0, 1, 2, 3], {
            // SAFETY: as above for B.
            sb[i] = unsafe { load_b(b, &t, k0, BN, tid + i * THREADS, fb) };
        });
        (sa, sb)
    };
    // Buffer `buf` of two: its A tile, then its B tile.
    // SAFETY: `buf` < 2 at every call: inside the launch's shared memory.
    let buffer = |buf: usize| unsafe {
        (smem.at(2 * buf * tile_floats, tile_floats), smem.at((2 * buf + 1) * tile_floats, tile_floats))
    };
    let stage = |buf: usize, sa: &[F4; NA], sb: &[F4; NB]| {
        let tf = |v: F4| F4([to_tf32(v.0[0]), to_tf32(v.0[1]), to_tf32(v.0[2]), to_tf32(v.0[3])]);
        let (a_tile, b_tile) = buffer(buf);
        unroll!(i < NA, [0, 1, 2, 3], {
            // SAFETY: vector index < BM*BK/4; STRIDE >= BM.
            unsafe { stage_a(a_tile, STRIDE, BK, tid + i * THREADS, tf(sa[i])) };
        });
        unroll!(i < NB, [0, 1, 2, 3], {
            // SAFETY: vector index < BK*BN/4; rows of STRIDE floats, 16-byte aligned.
            unsafe { stage_b(b_tile, STRIDE, BN, tid + i * THREADS, tf(sb[i])) };
        });
    };

    let mut acc = [[[0.0f32; 4]; NT]; MT];
    let (mut sa, mut sb) = load(0);
    stage(0, &sa, &sb);
    ctx.sync_threads();
    for tile in 0..tiles {
        let more = tile + 1 < tiles;
        if more {
            (sa, sb) = load((tile + 1) * BK);
        }
        let buf = tile % 2;
        // Buffer `buf` holds this tile.
        let (a_tile, b_tile) = buffer(buf);
        unroll!(k8 < BK / 8, [0, 1, 2, 3], {
            let k = 8 * k8;
            #[cfg(target_arch = "nvptx64")]
            {
                let mut af = [[0.0f32; 4]; MT];
                let mut bf = [[0.0f32; 2]; NT];
                unroll!(mt < MT, [0, 1, 2, 3], {
                    // SAFETY: rows wm0 + 16 mt ..+16 < BM, k + 8 <= BK.
                    af[mt] = unsafe { a_frag(a_tile, lane, wm0 + 16 * mt, k) };
                });
                unroll!(nt < NT, [0, 1, 2, 3], {
                    // SAFETY: columns wn0 + 8 nt ..+8 < BN, k + 8 <= BK.
                    bf[nt] = unsafe { b_frag(b_tile, lane, wn0 + 8 * nt, k) };
                });
                unroll!(mt < MT, [0, 1, 2, 3], {
                    unroll!(nt < NT, [0, 1, 2, 3], {
                        acc[mt][nt] = mma(af[mt], bf[nt], acc[mt][nt]);
                    });
                });
            }
            #[cfg(not(target_arch = "nvptx64"))]
            for (mt, acc) in acc.iter_mut().enumerate() {
                for (nt, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: as in the GPU path, for every lane.
                    let a_of = |l| unsafe { a_frag(a_tile, l, wm0 + 16 * mt, k) };
                    // SAFETY: as above.
                    let b_of = |l| unsafe { b_frag(b_tile, l, wn0 + 8 * nt, k) };
                    *acc = mma_emulated(lane, a_of, b_of, *acc);
                }
            }
        });
        if more {
            stage(1 - buf, &sa, &sb);
        }
        ctx.sync_threads();
    }

    let fast = t.m0 + BM <= t.m && t.n0 + BN <= t.n;
    unroll!(mt < MT, [0, 1, 2, 3], {
        unroll!(nt < NT, [0, 1, 2, 3], {
            let row = t.m0 + wm0 + 16 * mt + grp;
            let col = t.n0 + wn0 + 8 * nt + 2 * tig;
            unroll!(e < 4, [0, 1, 2, 3], {
                let (r, cc) = (row + 8 * (e / 2), col + e % 2);
                if fast || (r < t.m && cc < t.n) {
                    // SAFETY: inside C (interior block, or checked).
                    unsafe { store_c_at(c, r * t.n + cc, acc[mt][nt][e], p.alpha, p.beta) };
                }
            });
        });
    });
}
