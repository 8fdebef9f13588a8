//! Row softmax over the last dimension of a `rows x cols` row-major f32
//! matrix, `y[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r)`:
//! numerically stable (the row max is subtracted before `exp`), every output
//! written once, and every input read once from DRAM where the row fits on
//! chip (registers up to 32768 columns, shared memory up to 57344), a little
//! more than once beyond.
//!
//! Softmax does a little arithmetic per element (one `exp`) and two
//! reductions per row, so like a transpose it is bound by memory traffic: the
//! question is how close it gets to a device-to-device copy of the same bytes.
//! Each strategy holds the row somewhere different between the reductions and
//! the write:
//!
//! | step | kernel | strategy | the row lives in | columns |
//! | --- | --- | --- | --- | --- |
//! | 1 | [`warp_per_row`] | one warp per row, shuffle reductions, no barrier | registers of one warp: `Warp4` .. `Warp32` floats per lane | up to 32 x that: 1024 |
//! | 2 | [`block_per_row`] | one block per row; each warp reduces its part, one barrier combines the warps' (max, sum) pairs | registers of a block: `Block8` .. `Block32` floats per thread | up to 1024 x that: 32768 |
//! | 3 | [`online`] | one block per row; pass 1 keeps a running max and a rescaled sum (Milakov & Gimelshein), pass 2 re-reads the row backwards and writes | nowhere: re-read, from L2 when it is still there | any |
//! | 3b | [`online_stash`] | step 3 with the row copied once to shared memory (`cp.async`, all in flight) and both passes reading it there | shared memory: 4 bytes per column, one block per SM | up to 57344 (224 KiB, an H100's opt-in shared memory) |
//! | 4 | [`cluster`] | a cluster of 4 or 8 blocks per row (Hopper), each step 2 on a slice; the blocks trade their (max, sum) pairs through each other's shared memory | registers of 4 or 8 blocks | up to 114688 |
//!
//! [`Kernel::for_cols`] picks the strategy by row length at launch (the
//! thresholds and why are on [`Strategy::for_cols`]); each strategy and each
//! instantiation is also launchable by name.
//!
//! # Numerics
//!
//! `exp(d)` is computed as `2^(d * log2 e)` with `ex2.approx.ftz.f32` on the
//! GPU and `f32::exp2` on the host emulator, on `d = x - max` (rounded once),
//! so `d <= 0` and nothing overflows, whatever the magnitudes (+-1e30 rows
//! included). Multiplying `x * log2 e - max * log2 e` in one FMA would save an
//! instruction but for `|max| ~ 1e30` the rounding of `max * log2 e` alone is
//! ~1e22. The sum is divided once per row (`1 / sum`, IEEE) and applied by a
//! multiply. The tests hold every output to a float64 softmax within
//! `|want| * 2^-23 * (16 + 2|x - max|)` (relative, growing with `|x - max|`,
//! which is rounded in f32) and every row sum to 1 within 1e-6;
//! `docs/softmax.md` has the errors measured on the GPU.
//!
//! Special values follow PyTorch's `torch.softmax`: `-inf` entries get 0 (a
//! mask); a row of all `-inf` gives NaN everywhere (0/0); a NaN anywhere in a
//! row makes the whole row NaN (it enters the sum); a `+inf` makes the whole
//! row NaN (`inf - inf`). The (max, sum) pairs are combined with a guard that
//! uses 0 instead of a `-inf` max as the exponent base, so that a warp or
//! chunk holding only masked entries adds 0 to the sum instead of NaN.

#[path = "02_block_per_row.rs"]
mod block_per_row_kernel;
#[path = "04_cluster.rs"]
mod cluster_kernel;
#[path = "03_online.rs"]
mod online_kernel;
#[path = "01_warp_per_row.rs"]
mod warp_per_row_kernel;

pub use block_per_row_kernel::block_per_row;
pub use cluster_kernel::cluster;
pub use online_kernel::{online, online_stash};
pub use warp_per_row_kernel::warp_per_row;

use crate::registry::ladder;
use crate::{Dim3, LaunchDims};

mod maths;
mod reduce;
mod tile;

use maths::{base_of, exp_minus};
use reduce::{block_combine, warp_combine, warp_max, warp_sum};
use tile::{Part, Span, by_alignment, vector_rows};

/// Threads in a warp.
pub const WARP: u32 = 32;
/// Rows (warps) per block of [`warp_per_row`]: 128 threads.
pub const WARP_ROWS_PER_BLOCK: u32 = 4;
/// Threads per block the [`block_per_row`] dispatch aims for: it takes the
/// smallest register budget whose block for the row stays within this (4096
/// columns: [`Kernel::Block8`], 512 threads of 32 registers, four blocks and
/// rows to an SM at 2048 threads), so an SM holds several rows and all the
/// warps it can: `block8` runs ahead of `block16` at 3072 and 4096 columns
/// on an H200 (`docs/softmax.md`, "Every row length") and level with it at
/// 4096 on an H100 (`docs/measurements/2026-11-25-h100-softmax` at commit f58f145).
pub const BLOCK_TARGET_THREADS: u32 = 512;
/// The shortest row the dispatch gives a cluster ([`Strategy::Cluster`])
/// rather than one block: one past 512 threads of [`Kernel::Block32`]'s 32
/// floats. From here that block needs more than 512 threads of its 64
/// registers, more than half an SM's 65536, so an SM holds one row at a time
/// and cannot load one row while it reduces another; a cluster's blocks stay
/// small enough for several an SM. `cargo bench --bench softmax --
/// softmax_len` times both on either side (`docs/softmax.md`, "Every row
/// length").
pub const CLUSTER_MIN_COLS: u32 = 16385;
/// The most threads a block may have (every CUDA GPU).
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Floats each thread of [`online`] loads per chunk (four 16-byte loads in
/// flight per thread on the vector path).
pub const ONLINE_FLOATS: u32 = 16;
/// Threads per block of [`online`] for long rows: one block of 1024 threads
/// per row keeps the rows in flight on the whole GPU few (one per SM, since
/// at more than 32 registers per thread one such block takes over half the
/// SM's 65536), so that most of a row read in pass 1 is still in the 50 MB
/// L2 when pass 2 re-reads it.
pub const ONLINE_MAX_THREADS: u32 = 1024;
/// Dynamic shared memory of the block kernels: one (max, sum) pair per warp.
pub const PAIRS_SHARED_BYTES: u32 = 2 * (MAX_BLOCK_THREADS / WARP) * 4;
/// The longest row [`online_stash`] keeps in shared memory: 224 KiB of
/// floats, which with the pairs fits the 227 KiB a block of an H100 (sm_90)
/// may opt in to. GPUs with less shared memory per block take [`online`]
/// (the host launcher checks the device's limit).
pub const STASH_MAX_COLS: u32 = 57_344;

/// The four strategies, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Step 1: a warp per row, the row in its registers.
    WarpPerRow,
    /// Step 2: a block per row, the row in its registers.
    BlockPerRow,
    /// Step 3: a block per row, online (running max, rescaled sum), re-read.
    Online,
    /// Step 4: a cluster of blocks per row, the row in their registers
    /// (Hopper: the `sm_90a` module only).
    Cluster,
}

impl Strategy {
    /// Every strategy, in teaching order.
    pub const ALL: [Strategy; 4] = [Strategy::WarpPerRow, Strategy::BlockPerRow, Strategy::Online, Strategy::Cluster];

    /// Short name used by tests, benches and the docs.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::WarpPerRow => "warp_per_row",
            Strategy::BlockPerRow => "block_per_row",
            Strategy::Online => "online",
            Strategy::Cluster => "cluster",
        }
    }

    /// The most columns this strategy handles.
    pub const fn max_cols(self) -> u32 {
        match self {
            Strategy::WarpPerRow => Kernel::Warp32.max_cols(),
            Strategy::BlockPerRow => Kernel::Block32.max_cols(),
            Strategy::Online => u32::MAX,
            Strategy::Cluster => Kernel::Cluster8x512.max_cols(),
        }
    }

    /// The strategy [`Kernel::for_cols`] uses for rows of `cols` columns:
    ///
    /// - up to 1024 columns, [`Strategy::WarpPerRow`]: a row fits in one
    ///   warp's registers (at most 32 floats per lane), both reductions are 5
    ///   shuffles each and no block barrier is needed, so the short rows of
    ///   a tall matrix each cost one warp's worth of latency, overlapped
    ///   with the ~50 other warps of the SM;
    /// - up to 16384 columns (below [`CLUSTER_MIN_COLS`]), [`Strategy::BlockPerRow`]:
    ///   a row no longer fits one warp, but fits the registers of one block
    ///   (at most 1024 threads of 32 floats: 128 KiB, half an SM's register
    ///   file), so it is still read once and the reductions cost one barrier;
    /// - from there up to 114688 columns, [`Strategy::Cluster`]: the row fits
    ///   the registers of a cluster of 4 or 8, still read once, and its
    ///   blocks are smaller, so an SM interleaves more rows; on GPUs without
    ///   clusters (modules other than `sm_90a`) the host takes
    ///   [`Strategy::BlockPerRow`] up to 32768 columns and
    ///   [`Strategy::Online`] beyond;
    /// - beyond, [`Strategy::Online`]: the row does not fit on chip, so it is
    ///   read twice; the online pass needs one read for both reductions
    ///   (three passes in the textbook max / sum / write kernel), and the
    ///   second read finds most of the row in L2.
    pub const fn for_cols(cols: u32) -> Strategy {
        if cols <= Strategy::WarpPerRow.max_cols() {
            Strategy::WarpPerRow
        } else if cols < CLUSTER_MIN_COLS {
            Strategy::BlockPerRow
        } else if cols <= Strategy::Cluster.max_cols() {
            Strategy::Cluster
        } else {
            Strategy::Online
        }
    }

    /// The instantiation of this strategy for rows of `cols` columns, or
    /// `None` when `cols` is past [`Strategy::max_cols`] (or zero).
    pub const fn kernel(self, cols: u32) -> Option<Kernel> {
        if cols == 0 || cols > self.max_cols() {
            return None;
        }
        let mut i = 0;
        while i < Kernel::ALL.len() {
            let k = Kernel::ALL[i];
            let fits = match k {
                // The smallest register budget that holds the row.
                Kernel::Warp4 | Kernel::Warp8 | Kernel::Warp16 | Kernel::Warp32 => cols <= k.max_cols(),
                // The smallest that keeps the block within BLOCK_TARGET_THREADS
                // (the last one takes every row up to its limit).
                Kernel::Block8 | Kernel::Block16 => cols.div_ceil(k.floats_per_thread()) <= BLOCK_TARGET_THREADS,
                Kernel::OnlineStash | Kernel::Cluster4x256 | Kernel::Cluster8x256 => cols <= k.max_cols(),
                Kernel::Block32 | Kernel::Online | Kernel::Cluster8x512 => true,
            };
            if fits && k.strategy() as u32 == self as u32 {
                return Some(k);
            }
            i += 1;
        }
        None
    }
}

/// The softmax ladder, handed to a generator (`ladder!` here). See
/// [`crate::registry`].
#[macro_export]
#[doc(hidden)]
macro_rules! softmax_steps {
    ($then:ident $($pass:tt)*) => {
        $then! {
            $($pass)*
            op: "softmax";
            /// One `.entry` kernel: a strategy and its compile-time register
            /// budget, named for the floats each thread holds. The steps
            /// share files, one per strategy, so each names its body.
            pub enum Kernel, geometry Geometry;
            unsafe fn run<C>(ctx, input: *const f32, output: *mut f32, rows: u32, cols: u32);

            /// one warp per row, the row in its registers (4 floats per lane: up to 128 columns), shuffle reductions, no barrier
            Warp4 => warp4: "1" in "01_warp_per_row.rs" {
                body: warp_per_row::<C, 4>,
                geometry: Geometry::registers(Strategy::WarpPerRow, 4),
            };
            /// step 1 with 8 floats per lane: up to 256 columns
            Warp8 => warp8: "1" in "01_warp_per_row.rs" {
                body: warp_per_row::<C, 8>,
                geometry: Geometry::registers(Strategy::WarpPerRow, 8),
            };
            /// step 1 with 16 floats per lane: up to 512 columns
            Warp16 => warp16: "1" in "01_warp_per_row.rs" {
                body: warp_per_row::<C, 16>,
                geometry: Geometry::registers(Strategy::WarpPerRow, 16),
            };
            /// step 1 with 32 floats per lane: up to 1024 columns
            Warp32 => warp32: "1" in "01_warp_per_row.rs" {
                body: warp_per_row::<C, 32>,
                geometry: Geometry::registers(Strategy::WarpPerRow, 32),
            };
            /// one block per row, the row in its registers (8 floats per thread: up to 8192 columns); one barrier combines the warps' (max, sum) pairs
            Block8 => block8: "2" in "02_block_per_row.rs" {
                body: block_per_row::<C, 8>,
                geometry: Geometry::registers(Strategy::BlockPerRow, 8),
            };
            /// step 2 with 16 floats per thread: up to 16384 columns
            Block16 => block16: "2" in "02_block_per_row.rs" {
                body: block_per_row::<C, 16>,
                geometry: Geometry::registers(Strategy::BlockPerRow, 16),
            };
            /// step 2 with 32 floats per thread: up to 32768 columns
            Block32 => block32: "2" in "02_block_per_row.rs" {
                body: block_per_row::<C, 32>,
                geometry: Geometry::registers(Strategy::BlockPerRow, 32),
            };
            /// step 3 with the row copied once to shared memory (`cp.async`) and both passes reading it there: rows up to `STASH_MAX_COLS`
            OnlineStash => online_stash: "3b" in "03_online.rs" {
                body: online_stash,
                geometry: Geometry { strategy: Strategy::Online, floats: ONLINE_FLOATS, stash: true, cluster: 1, threads: 0 },
            };
            /// one block per row; pass 1 keeps a running max and a rescaled sum, pass 2 re-reads the row and writes: any row length
            Online => online: "3" in "03_online.rs" {
                body: online,
                geometry: Geometry { strategy: Strategy::Online, floats: ONLINE_FLOATS, stash: false, cluster: 1, threads: 0 },
            };
            /// a cluster of 4 blocks of up to 256 threads per row (`sm_90a`), each holding a slice in registers as step 2 (28 floats per thread: up to 28672 columns); the blocks trade their (max, sum) pairs with `st.async` into each other's shared memory
            Cluster4x256 => cluster4x256: "4" in "04_cluster.rs" {
                body: cluster::<C, 28, 4>,
                geometry: Geometry::cluster(28, 4, 256),
                needs: "sm_90a",
            };
            /// step 4 with clusters of 8 blocks: up to 57344 columns
            Cluster8x256 => cluster8x256: "4" in "04_cluster.rs" {
                body: cluster::<C, 28, 8>,
                geometry: Geometry::cluster(28, 8, 256),
                needs: "sm_90a",
            };
            /// step 4 with blocks of up to 512 threads: up to 114688 columns
            Cluster8x512 => cluster8x512: "4" in "04_cluster.rs" {
                body: cluster::<C, 28, 8>,
                geometry: Geometry::cluster(28, 8, 512),
                needs: "sm_90a",
            };
        }
    };
}
softmax_steps!(ladder);

/// How a softmax kernel is launched: its strategy's grid and block
/// ([`Kernel::launch_dims`]), sized by the floats each thread holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The strategy the kernel implements.
    pub strategy: Strategy,
    /// Floats each thread holds in registers (per chunk, for [`online`]).
    pub floats: u32,
    /// Whether the row is stashed in shared memory ([`online_stash`]).
    pub stash: bool,
    /// Blocks per cluster, consecutive in `x` (1: no clusters).
    pub cluster: u32,
    /// The most threads per block of [`Strategy::Cluster`] (the row length
    /// sizes the block up to it); 0 for the others.
    pub threads: u32,
}

impl Geometry {
    /// A strategy that holds `floats` per thread in registers, no stash.
    pub const fn registers(strategy: Strategy, floats: u32) -> Geometry {
        Geometry { strategy, floats, stash: false, cluster: 1, threads: 0 }
    }

    /// [`Strategy::Cluster`]: clusters of `cluster` blocks of up to
    /// `threads` threads, each holding `floats` per thread.
    pub const fn cluster(floats: u32, cluster: u32, threads: u32) -> Geometry {
        Geometry { strategy: Strategy::Cluster, floats, stash: false, cluster, threads }
    }

    /// The stash takes more than 48 KiB of shared memory for long rows.
    pub const fn opt_in_shared(self) -> bool {
        self.stash
    }
}

impl Kernel {
    /// The kernel the dispatch uses for rows of `cols` columns (`cols >= 1`):
    /// [`Strategy::for_cols`], then that strategy's [`Strategy::kernel`].
    pub const fn for_cols(cols: u32) -> Kernel {
        match Strategy::for_cols(cols).kernel(if cols == 0 { 1 } else { cols }) {
            Some(k) => k,
            None => Kernel::Online,
        }
    }

    /// The strategy this kernel implements.
    pub const fn strategy(self) -> Strategy {
        self.geometry().strategy
    }

    /// Floats each thread holds in registers (per chunk, for [`online`]).
    pub const fn floats_per_thread(self) -> u32 {
        self.geometry().floats
    }

    /// Blocks per thread-block cluster of its launch (1: launched without
    /// clusters).
    pub const fn cluster(self) -> u32 {
        self.geometry().cluster
    }

    /// The most columns this instantiation handles.
    pub const fn max_cols(self) -> u32 {
        if let Kernel::OnlineStash = self {
            return STASH_MAX_COLS;
        }
        match self.strategy() {
            Strategy::WarpPerRow => WARP * self.floats_per_thread(),
            Strategy::BlockPerRow => MAX_BLOCK_THREADS * self.floats_per_thread(),
            Strategy::Online => u32::MAX,
            Strategy::Cluster => self.cluster() * self.geometry().threads * self.floats_per_thread(),
        }
    }

    /// Grid, block and shared memory for a `rows x cols` input
    /// (`1 <= cols <= self.max_cols()`). The grid is not checked against
    /// device limits here; the host does that.
    pub const fn launch_dims(self, rows: u32, cols: u32) -> LaunchDims {
        match self.strategy() {
            Strategy::WarpPerRow => LaunchDims {
                grid: Dim3::xy(rows.div_ceil(WARP_ROWS_PER_BLOCK), 1),
                block: Dim3::xy(WARP * WARP_ROWS_PER_BLOCK, 1),
                shared_bytes: 0,
            },
            Strategy::BlockPerRow => LaunchDims {
                grid: Dim3::xy(rows, 1),
                block: Dim3::xy(block_threads(cols, self.floats_per_thread(), MAX_BLOCK_THREADS), 1),
                shared_bytes: PAIRS_SHARED_BYTES,
            },
            Strategy::Online => LaunchDims {
                grid: Dim3::xy(rows, 1),
                block: Dim3::xy(block_threads(cols, self.floats_per_thread(), ONLINE_MAX_THREADS), 1),
                shared_bytes: match self {
                    Kernel::OnlineStash => PAIRS_SHARED_BYTES + stash_bytes(cols),
                    _ => PAIRS_SHARED_BYTES,
                },
            },
            // Saturating: a grid past the device's limit is refused by the host.
            Strategy::Cluster => LaunchDims {
                grid: Dim3::xy(rows.saturating_mul(self.cluster()), 1),
                block: Dim3::xy(
                    block_threads(
                        cluster_slice(cols, self.cluster()),
                        self.floats_per_thread(),
                        self.geometry().threads,
                    ),
                    1,
                ),
                shared_bytes: cluster_shared_bytes(self.cluster()),
            },
        }
    }
}

/// Floats of a row of `cols` that each block of a [`cluster`] of `cluster`
/// blocks holds (the last one fewer): whole float4 groups, so that every
/// slice of an aligned row starts aligned.
pub const fn cluster_slice(cols: u32, cluster: u32) -> u32 {
    cols.div_ceil(4).div_ceil(cluster) * 4
}

/// Dynamic shared memory of [`cluster`] for clusters of `cluster` blocks:
/// the warps' pairs ([`PAIRS_SHARED_BYTES`]), an 8-byte mbarrier, and one
/// (max, sum) pair per block of the cluster.
pub const fn cluster_shared_bytes(cluster: u32) -> u32 {
    PAIRS_SHARED_BYTES + 8 + 8 * cluster
}

/// Bytes of the row stash of [`online_stash`]: the row in whole 16-byte
/// groups (saturating: a row past [`STASH_MAX_COLS`] is refused by the host).
pub const fn stash_bytes(cols: u32) -> u32 {
    cols.div_ceil(4).saturating_mul(16)
}

/// Threads for a block that gives each thread `per_thread` elements of a
/// `cols` row: a whole number of warps, at least one, at most `max`.
const fn block_threads(cols: u32, per_thread: u32, max: u32) -> u32 {
    let warps = cols.div_ceil(per_thread).div_ceil(WARP);
    let threads = if warps == 0 { WARP } else { warps * WARP };
    if threads > max { max } else { threads }
}
