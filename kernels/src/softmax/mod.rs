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
//! multiply. Measured on an H100 against float64 (docs/softmax.md): at most
//! 3.7 ulp on the outputs within 1 of the row max, every row summing to 1
//! within 3e-7.
//!
//! Special values follow PyTorch's `torch.softmax`: `-inf` entries get 0 (a
//! mask); a row of all `-inf` gives NaN everywhere (0/0); a NaN anywhere in a
//! row makes the whole row NaN (it enters the sum); a `+inf` makes the whole
//! row NaN (`inf - inf`). The (max, sum) pairs are combined with a guard that
//! uses 0 instead of a `-inf` max as the exponent base, so that a warp or
//! chunk holding only masked entries adds 0 to the sum instead of NaN.

/// `$body` for `$i` = 0, 1, .., `$n - 1` (`$n` a constant, at most 32),
/// written out: every array index in the body is then a constant, so the
/// per-thread arrays live in registers. (LLVM does not fully unroll a
/// 32-iteration loop with a branch in it, and leaves such an array in local
/// memory.)
macro_rules! unroll {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 32, "unroll! writes out at most 32 iterations") };
        unroll!(@each $n, $i, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    }};
    (@each $n:expr, $i:ident, $body:block; $($k:literal)*) => {{
        $(
            if $k < $n {
                let $i: usize = $k;
                $body
            }
        )*
    }};
}

#[path = "02_block_per_row.rs"]
mod block_per_row_kernel;
#[path = "03_online.rs"]
mod online_kernel;
#[path = "01_warp_per_row.rs"]
mod warp_per_row_kernel;

pub use block_per_row_kernel::block_per_row;
pub use online_kernel::{online, online_stash};
pub use warp_per_row_kernel::warp_per_row;

use crate::{Dim3, LaunchDims, ThreadCtx};

/// The `.entry` kernels of this module, one per [`Kernel`].
pub const ENTRIES: &[&str] = &{
    let mut names = [""; Kernel::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Kernel::ALL[i].entry_point();
        i += 1;
    }
    names
};

/// Threads in a warp.
pub const WARP: u32 = 32;
/// Rows (warps) per block of [`warp_per_row`]: 128 threads.
pub const WARP_ROWS_PER_BLOCK: u32 = 4;
/// Threads per block the [`block_per_row`] dispatch aims for: it takes the
/// smallest register budget whose block for the row stays within this (4096
/// columns: [`Kernel::Block16`], 256 threads), so a block is a few warps and
/// an SM holds several rows.
pub const BLOCK_TARGET_THREADS: u32 = 256;
/// The most threads a block may have (every CUDA GPU).
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Floats each thread of [`online`] loads per chunk (four 16-byte loads in
/// flight per thread on the vector path).
pub const ONLINE_FLOATS: u32 = 16;
/// Threads per block of [`online`] for long rows: one block of 1024 threads
/// per row keeps the rows in flight on the whole GPU few (one per SM at 47
/// registers per thread), so that most of a row read in pass 1 is still in
/// the 50 MB L2 when pass 2 re-reads it.
pub const ONLINE_MAX_THREADS: u32 = 1024;
/// Dynamic shared memory of the block kernels: one (max, sum) pair per warp.
pub const PAIRS_SHARED_BYTES: u32 = 2 * (MAX_BLOCK_THREADS / WARP) * 4;
/// The longest row [`online_stash`] keeps in shared memory: 224 KiB of
/// floats, which with the pairs fits the 227 KiB a block of an H100 (sm_90)
/// may opt in to. GPUs with less shared memory per block take [`online`]
/// (the host launcher checks the device's limit).
pub const STASH_MAX_COLS: u32 = 57_344;

/// The three strategies, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Step 1: a warp per row, the row in its registers.
    WarpPerRow,
    /// Step 2: a block per row, the row in its registers.
    BlockPerRow,
    /// Step 3: a block per row, online (running max, rescaled sum), re-read.
    Online,
}

impl Strategy {
    /// Every strategy, in teaching order.
    pub const ALL: [Strategy; 3] = [Strategy::WarpPerRow, Strategy::BlockPerRow, Strategy::Online];

    /// Short name used by tests, benches and the docs.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::WarpPerRow => "warp_per_row",
            Strategy::BlockPerRow => "block_per_row",
            Strategy::Online => "online",
        }
    }

    /// The most columns this strategy handles.
    pub const fn max_cols(self) -> u32 {
        match self {
            Strategy::WarpPerRow => Kernel::Warp32.max_cols(),
            Strategy::BlockPerRow => Kernel::Block32.max_cols(),
            Strategy::Online => u32::MAX,
        }
    }

    /// The strategy [`Kernel::for_cols`] uses for rows of `cols` columns:
    ///
    /// - up to 1024 columns, [`Strategy::WarpPerRow`]: a row fits in one
    ///   warp's registers (at most 32 floats per lane), both reductions are 5
    ///   shuffles each and no block barrier is needed, so the short rows of
    ///   a tall matrix each cost one warp's worth of latency, overlapped
    ///   with the ~50 other warps of the SM;
    /// - up to 32768 columns, [`Strategy::BlockPerRow`]: a row no longer fits
    ///   one warp, but fits the registers of one block (at most 1024 threads
    ///   of 32 floats: 128 KiB, half an SM's register file), so it is still
    ///   read once and the reductions cost one barrier;
    /// - beyond, [`Strategy::Online`]: the row does not fit on chip, so it is
    ///   read twice; the online pass needs one read for both reductions
    ///   (three passes in the textbook max / sum / write kernel), and the
    ///   second read finds most of the row in L2.
    pub const fn for_cols(cols: u32) -> Strategy {
        if cols <= Strategy::WarpPerRow.max_cols() {
            Strategy::WarpPerRow
        } else if cols <= Strategy::BlockPerRow.max_cols() {
            Strategy::BlockPerRow
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
                Kernel::OnlineStash => cols <= k.max_cols(),
                Kernel::Block32 | Kernel::Online => true,
            };
            if fits && k.strategy() as u32 == self as u32 {
                return Some(k);
            }
            i += 1;
        }
        None
    }
}

/// One `.entry` kernel: a strategy and its compile-time register budget,
/// named for the floats each thread holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// [`warp_per_row`], 4 floats per lane: rows of up to 128 columns.
    Warp4,
    /// [`warp_per_row`], 8 floats per lane: up to 256 columns.
    Warp8,
    /// [`warp_per_row`], 16 floats per lane: up to 512 columns.
    Warp16,
    /// [`warp_per_row`], 32 floats per lane: up to 1024 columns.
    Warp32,
    /// [`block_per_row`], 8 floats per thread: up to 8192 columns.
    Block8,
    /// [`block_per_row`], 16 floats per thread: up to 16384 columns.
    Block16,
    /// [`block_per_row`], 32 floats per thread: up to 32768 columns.
    Block32,
    /// [`online_stash`]: rows up to [`STASH_MAX_COLS`], kept in shared memory.
    OnlineStash,
    /// [`online`]: any row length.
    Online,
}

impl Kernel {
    /// Every instantiation, in teaching order.
    pub const ALL: [Kernel; 9] = [
        Kernel::Warp4,
        Kernel::Warp8,
        Kernel::Warp16,
        Kernel::Warp32,
        Kernel::Block8,
        Kernel::Block16,
        Kernel::Block32,
        Kernel::OnlineStash,
        Kernel::Online,
    ];

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
        match self {
            Kernel::Warp4 | Kernel::Warp8 | Kernel::Warp16 | Kernel::Warp32 => Strategy::WarpPerRow,
            Kernel::Block8 | Kernel::Block16 | Kernel::Block32 => Strategy::BlockPerRow,
            Kernel::OnlineStash | Kernel::Online => Strategy::Online,
        }
    }

    /// Floats each thread holds in registers (per chunk, for [`online`]).
    pub const fn floats_per_thread(self) -> u32 {
        match self {
            Kernel::Warp4 => 4,
            Kernel::Warp8 | Kernel::Block8 => 8,
            Kernel::Warp16 | Kernel::Block16 => 16,
            Kernel::OnlineStash | Kernel::Online => ONLINE_FLOATS,
            Kernel::Warp32 | Kernel::Block32 => 32,
        }
    }

    /// Name of the `.entry` kernel in the PTX module.
    pub const fn entry_point(self) -> &'static str {
        match self {
            Kernel::Warp4 => "softmax_warp4",
            Kernel::Warp8 => "softmax_warp8",
            Kernel::Warp16 => "softmax_warp16",
            Kernel::Warp32 => "softmax_warp32",
            Kernel::Block8 => "softmax_block8",
            Kernel::Block16 => "softmax_block16",
            Kernel::Block32 => "softmax_block32",
            Kernel::OnlineStash => "softmax_online_stash",
            Kernel::Online => "softmax_online",
        }
    }

    /// Short name for benches and reports: the entry point without `softmax_`.
    pub const fn name(self) -> &'static str {
        match self {
            Kernel::Warp4 => "warp4",
            Kernel::Warp8 => "warp8",
            Kernel::Warp16 => "warp16",
            Kernel::Warp32 => "warp32",
            Kernel::Block8 => "block8",
            Kernel::Block16 => "block16",
            Kernel::Block32 => "block32",
            Kernel::OnlineStash => "online_stash",
            Kernel::Online => "online",
        }
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
        }
    }

    /// Runs this kernel's body for the calling thread.
    ///
    /// # Safety
    /// As for each kernel: `input` and `output` hold `rows * cols` floats and
    /// do not overlap, `1 <= cols <= self.max_cols()`, and the launch uses
    /// [`Kernel::launch_dims`].
    #[inline(always)]
    pub unsafe fn run<C: ThreadCtx>(self, ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Kernel::Warp4 => warp_per_row::<C, 4>(ctx, input, output, rows, cols),
                Kernel::Warp8 => warp_per_row::<C, 8>(ctx, input, output, rows, cols),
                Kernel::Warp16 => warp_per_row::<C, 16>(ctx, input, output, rows, cols),
                Kernel::Warp32 => warp_per_row::<C, 32>(ctx, input, output, rows, cols),
                Kernel::Block8 => block_per_row::<C, 8>(ctx, input, output, rows, cols),
                Kernel::Block16 => block_per_row::<C, 16>(ctx, input, output, rows, cols),
                Kernel::Block32 => block_per_row::<C, 32>(ctx, input, output, rows, cols),
                Kernel::OnlineStash => online_stash(ctx, input, output, rows, cols),
                Kernel::Online => online(ctx, input, output, rows, cols),
            }
        }
    }
}

/// Bytes of the row stash of [`online_stash`]: the row in whole 16-byte groups.
pub const fn stash_bytes(cols: u32) -> u32 {
    cols.div_ceil(4) * 16
}

/// Threads for a block that gives each thread `per_thread` elements of a
/// `cols` row: a whole number of warps, at least one, at most `max`.
const fn block_threads(cols: u32, per_thread: u32, max: u32) -> u32 {
    let warps = cols.div_ceil(per_thread).div_ceil(WARP);
    let threads = if warps == 0 { WARP } else { warps * WARP };
    if threads > max { max } else { threads }
}

/// Four floats with the alignment that makes them one 16-byte access.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct F4([f32; 4]);

/// Whether a row can move as 16-byte vectors: both buffers 16-byte aligned
/// and `cols % 4 == 0`, so every row starts aligned on both sides.
#[inline(always)]
pub(crate) fn vector_rows(input: *const f32, output: *mut f32, cols: usize) -> bool {
    (input as usize | output as usize).is_multiple_of(16) && cols.is_multiple_of(4)
}

// Every kernel gives each thread `N` floats as `N / 4` *slots*: slot `k` is
// the group of four floats `4g .. 4g + 4` of the row, `g = first + stride * k`
// (consecutive threads take consecutive groups, so a warp covers 512
// contiguous bytes per slot). A slot is wholly inside the row or wholly out.
// When `cols % 4 != 0` the last 1-3 floats form no whole group; the thread
// whose next slot would start there holds them in a separate `tail`. The
// vector path moves a slot with one 16-byte access; the scalar path
// (unaligned buffers or `cols % 4 != 0`) with four 4-byte ones at the same
// addresses.
//
// (Checking every float against the row's end instead made ptxas keep one
// predicate per float alive from the loads to the stores, `P2R`-saved in a
// register each: 96 registers at 32 floats per thread, where the vector path
// needs 53.)

/// Which of a thread's slots lie inside the row, and how much tail it holds.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    /// Slots `0 .. slots` are inside the row (whole groups).
    slots: usize,
    /// Floats of the partial last group this thread holds (0-3): floats
    /// `4 * (first + stride * slots) ..` of the row.
    tail: usize,
}

impl Span {
    /// A thread's span of a row of `cols` floats, for slots
    /// `first + stride * k`, `k < max_slots`.
    #[inline(always)]
    pub(crate) fn of(cols: usize, first: usize, stride: usize, max_slots: usize) -> Span {
        let groups = cols / 4;
        if groups < first {
            return Span { slots: 0, tail: 0 };
        }
        let (q, r) = ((groups - first) / stride, (groups - first) % stride);
        let slots = q + (r != 0) as usize;
        let owns_tail = r == 0 && q < max_slots;
        Span { slots: if slots < max_slots { slots } else { max_slots }, tail: if owns_tail { cols % 4 } else { 0 } }
    }

    /// Every slot inside the row, no tail (a full chunk of [`online`]).
    #[inline(always)]
    pub(crate) const fn full(max_slots: usize) -> Span {
        Span { slots: max_slots, tail: 0 }
    }
}

/// A thread's part of a row: `N` floats in slots and, on the scalar path
/// (`VEC = false`), up to 3 tail floats; the vector path has no tail and
/// skips it entirely. Floats outside the row hold `-inf` (`exp` gives 0).
#[derive(Clone, Copy)]
pub(crate) struct Part<const N: usize, const VEC: bool> {
    v: [f32; N],
    tail: [f32; 3],
}

impl<const N: usize, const VEC: bool> Default for Part<N, VEC> {
    /// Holds nothing: every float `-inf`.
    #[inline(always)]
    fn default() -> Self {
        Part { v: [f32::NEG_INFINITY; N], tail: [f32::NEG_INFINITY; 3] }
    }
}

impl<const N: usize, const VEC: bool> Part<N, VEC> {
    /// Maximum of the part (`-inf` if it holds nothing).
    #[inline(always)]
    pub(crate) fn max(&self) -> f32 {
        let mut m = f32::NEG_INFINITY;
        unroll!(N, |j| {
            m = m.max(self.v[j]);
        });
        if !VEC {
            unroll!(3, |j| {
                m = m.max(self.tail[j]);
            });
        }
        m
    }

    /// `sum exp(x - base)` over the part.
    #[inline(always)]
    pub(crate) fn sum_exp(&self, base: f32) -> f32 {
        let mut s = 0.0f32;
        unroll!(N, |j| {
            s += exp_minus(self.v[j], base);
        });
        if !VEC {
            unroll!(3, |j| {
                s += exp_minus(self.tail[j], base);
            });
        }
        s
    }

    /// Replaces every `x` by `exp(x - base)` and returns their sum.
    #[inline(always)]
    pub(crate) fn exp_in_place(&mut self, base: f32) -> f32 {
        let mut s = 0.0f32;
        unroll!(N, |j| {
            self.v[j] = exp_minus(self.v[j], base);
            s += self.v[j];
        });
        if !VEC {
            unroll!(3, |j| {
                self.tail[j] = exp_minus(self.tail[j], base);
                s += self.tail[j];
            });
        }
        s
    }

    /// Multiplies every float by `f`.
    #[inline(always)]
    pub(crate) fn scale(&mut self, f: f32) {
        unroll!(N, |j| {
            self.v[j] *= f;
        });
        if !VEC {
            unroll!(3, |j| {
                self.tail[j] *= f;
            });
        }
    }

    /// Loads the part of the row at `x` given by `first`, `stride`, `span`.
    ///
    /// # Safety
    /// `span` is [`Span::of`] (or [`Span::full`] for slots known inside) for
    /// this row, `first` and `stride`; with `VEC`, `x` is 16-byte aligned and
    /// the row has no tail.
    #[inline(always)]
    pub(crate) unsafe fn load(x: *const f32, first: usize, stride: usize, span: Span) -> Self {
        let mut p = Part::default();
        unroll!(N / 4, |k| {
            if k < span.slots {
                let g = first + stride * k;
                if VEC {
                    // SAFETY: group g is inside the row, 16g bytes past an aligned start.
                    let F4([a, b, c, d]) = unsafe { *x.cast::<F4>().add(g) };
                    (p.v[4 * k], p.v[4 * k + 1], p.v[4 * k + 2], p.v[4 * k + 3]) = (a, b, c, d);
                } else {
                    unroll!(4, |q| {
                        // SAFETY: group g is inside the row.
                        p.v[4 * k + q] = unsafe { *x.add(4 * g + q) };
                    });
                }
            }
        });
        if !VEC {
            let at = 4 * (first + stride * span.slots);
            unroll!(3, |q| {
                if q < span.tail {
                    // SAFETY: the tail floats are the row's last cols % 4.
                    p.tail[q] = unsafe { *x.add(at + q) };
                }
            });
        }
        p
    }

    /// Stores the part to the row at `y`, with the mapping it was loaded with.
    ///
    /// # Safety
    /// As [`Part::load`], for `y`.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, y: *mut f32, first: usize, stride: usize, span: Span) {
        unroll!(N / 4, |k| {
            if k < span.slots {
                let g = first + stride * k;
                if VEC {
                    // Built from its lanes so LLVM emits one v4 store, not a memcpy.
                    let q = F4([self.v[4 * k], self.v[4 * k + 1], self.v[4 * k + 2], self.v[4 * k + 3]]);
                    // SAFETY: as for the load.
                    unsafe { *y.cast::<F4>().add(g) = q };
                } else {
                    unroll!(4, |q| {
                        // SAFETY: as for the load.
                        unsafe { *y.add(4 * g + q) = self.v[4 * k + q] };
                    });
                }
            }
        });
        if !VEC {
            let at = 4 * (first + stride * span.slots);
            unroll!(3, |q| {
                if q < span.tail {
                    // SAFETY: as for the load.
                    unsafe { *y.add(at + q) = self.tail[q] };
                }
            });
        }
    }
}

/// `log2(e)`: `exp(d) = 2^(d * LOG2_E)`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.ex2.approx.ftz.f"]
    fn ex2_approx_ftz(x: f32) -> f32;
}

/// `2^x`: `ex2.approx.ftz.f32` on the GPU (one MUFU instruction, about 2 ulp,
/// results below 2^-126 flushed to 0), `f32::exp2` on the host.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure arithmetic instruction, defined for every input.
        unsafe { ex2_approx_ftz(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp2()
    }
}

/// `exp(x - base)`, for `base` a row (or chunk) maximum, never `-inf`.
#[inline(always)]
pub fn exp_minus(x: f32, base: f32) -> f32 {
    exp2((x - base) * LOG2_E)
}

/// The exponent base for a running maximum `m`: `m` itself, or 0 while every
/// value seen is `-inf` (masked), so that `exp(-inf - base)` is 0, not NaN.
#[inline(always)]
pub fn base_of(m: f32) -> f32 {
    if m == f32::NEG_INFINITY { 0.0 } else { m }
}

/// Merges two partial softmax states. A state `(m, s)` covers some elements
/// `x`: `m` is their maximum and `s = sum exp(x - base_of(m))`. Symmetric bit
/// for bit (`max` and `+` commute), so a butterfly leaves every lane with the
/// same result.
#[inline(always)]
pub fn combine(m1: f32, s1: f32, m2: f32, s2: f32) -> (f32, f32) {
    let m = m1.max(m2);
    let base = base_of(m);
    (m, s1 * exp_minus(m1, base) + s2 * exp_minus(m2, base))
}

/// Maximum over the warp; every lane gets it. `f32::max` ignores NaN (PTX
/// `max.f32`), which is fine: a NaN reaches the sum and makes the row NaN.
#[inline(always)]
pub(crate) fn warp_max<C: ThreadCtx>(ctx: &C, mut v: f32) -> f32 {
    let mut mask = WARP / 2;
    while mask > 0 {
        v = v.max(ctx.shfl_xor_f32(v, mask));
        mask /= 2;
    }
    v
}

/// Sum over the warp (butterfly); every lane gets the same bits.
#[inline(always)]
pub(crate) fn warp_sum<C: ThreadCtx>(ctx: &C, mut v: f32) -> f32 {
    let mut mask = WARP / 2;
    while mask > 0 {
        v += ctx.shfl_xor_f32(v, mask);
        mask /= 2;
    }
    v
}

/// [`combine`] over the warp's lanes; every lane gets the same state.
#[inline(always)]
pub(crate) fn warp_combine<C: ThreadCtx>(ctx: &C, mut m: f32, mut s: f32) -> (f32, f32) {
    let mut mask = WARP / 2;
    while mask > 0 {
        let (om, os) = (ctx.shfl_xor_f32(m, mask), ctx.shfl_xor_f32(s, mask));
        (m, s) = combine(m, s, om, os);
        mask /= 2;
    }
    (m, s)
}

/// Combines one state per warp (`m`, `s` the same in every lane of a warp)
/// into the block's state, returned to every thread: lane 0 of each warp
/// writes its pair to shared memory, one barrier, then every warp combines
/// all pairs with shuffles (no second barrier).
///
/// # Safety
/// Called once per launch by every thread of a 1D block of whole warps,
/// with [`PAIRS_SHARED_BYTES`] of dynamic shared memory.
#[inline(always)]
pub(crate) unsafe fn block_combine<C: ThreadCtx>(ctx: &C, m: f32, s: f32) -> (f32, f32) {
    let pairs = ctx.shared_mem::<f32>();
    let t = ctx.thread_idx().x;
    let (warp, lane) = ((t / WARP) as usize, t % WARP);
    let warps = ctx.block_dim().x / WARP;
    if lane == 0 {
        // SAFETY: warp < 32: inside the 64 floats of pairs.
        unsafe {
            *pairs.add(2 * warp) = m;
            *pairs.add(2 * warp + 1) = s;
        }
    }
    ctx.sync_threads();
    let (pm, ps) = if lane < warps {
        let l = lane as usize;
        // SAFETY: written by warp `lane` before the barrier.
        unsafe { (*pairs.add(2 * l), *pairs.add(2 * l + 1)) }
    } else {
        (f32::NEG_INFINITY, 0.0)
    };
    warp_combine(ctx, pm, ps)
}
