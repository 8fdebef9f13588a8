//! Step 3: online softmax, for rows too long to hold on chip.
//!
//! **Idea:** the textbook safe softmax reads a row three times (max, then
//! sum of `exp(x - max)`, then write) because the sum needs the max first.
//! Online softmax (Milakov & Gimelshein, 2018) keeps both in one pass: a
//! running maximum `m` and a sum `s` of `exp(x - m)` that is *rescaled* by
//! `exp(m_old - m_new)` whenever the maximum grows. Two such states merge by
//! the same rule, so threads, warps and the block combine theirs exactly as
//! step 2 combines its warps. Then one more pass re-reads the row and writes.
//!
//! Here each thread updates its state once per chunk of 16 floats (four
//! float4 loads in flight), so the rescale costs one `exp` per 16 elements.
//!
//! **Why the second read is mostly free:** a block is one row and up to
//! 1024 threads, and at more than 32 registers per thread an SM holds one
//! such block (its 65536 registers hold one 1024-thread block, not two), so
//! the whole GPU works on one row per SM at a time (132 on an H100: 17 MB
//! at 32768 columns), less than the 50 MB L2. Pass 2 walks the row
//! *backwards*, so it starts with what pass 1 read last (the last chunk is
//! even still in registers). So DRAM reads each element little more than
//! once, and writes it once, where the textbook kernel reads three times;
//! the share of the re-read that L2 serves falls as rows grow
//! (`docs/softmax.md` has ncu's DRAM bytes per launch).
//!
//! **What it costs:** two passes over the row through L1/L2 instead of one,
//! and the rescale `exp` per chunk; no limit on the row length.
//!
//! **Step 3b, [`online_stash`]:** for rows long enough that L2 misses part
//! of the re-read. A row of up to [`STASH_MAX_COLS`] floats fits in the
//! shared memory one block may opt in to on an H100 (227 KiB), so the row
//! goes to shared memory once and both passes read it there: every element
//! comes from DRAM once. The copy is asynchronous (`cp.async`, global to
//! shared without registers), so every chunk of the row is in flight at
//! once; loads staged through registers would keep only one chunk per thread
//! in flight, too few bytes to keep DRAM busy while each SM alternates
//! between reading its row and writing it. Each thread reads back only what
//! it copied, in the same mapping, so the stash needs no barrier of its own.
//! It costs the SM's shared memory (one such block per SM, as the registers
//! already allowed). Unaligned rows stage through registers, as 4-byte
//! stores and loads 16 bytes apart, so lanes 8 apart share a bank: 4
//! wavefronts per request instead of 1 (the fallback path only).

use super::{
    ONLINE_FLOATS, PAIRS_SHARED_BYTES, Part, STASH_MAX_COLS, Span, base_of, block_combine, by_alignment, exp_minus,
    vector_rows, warp_combine,
};
use crate::ThreadCtx;

/// Floats per thread per chunk.
const F: usize = ONLINE_FLOATS as usize;
/// Floats of the (max, sum) pairs, which the stash follows in shared memory.
const PAIRS: usize = PAIRS_SHARED_BYTES as usize / 4;

/// Softmax of each row of a `rows x cols` row-major matrix, one block per
/// row, in two passes: online (max, sum), then re-read and write.
///
/// # Parameters
/// `input`, `output`: `rows * cols` floats each, row-major, any `cols >= 1`.
/// Dynamic shared memory: [`super::PAIRS_SHARED_BYTES`].
///
/// # Thread mapping
/// 1D block of `T` threads (a whole number of warps, at most 1024), grid
/// `rows`: block `b` owns row `b`. The row is walked in chunks of `16 T`
/// floats; in chunk `c` thread `t` holds the float4 groups `4cT + t + T k`,
/// `k < 4`. Only the last chunk can be partial: it is the only one with
/// bounds checks.
///
/// # Memory pattern
/// Pass 1 reads chunks forwards, pass 2 backwards (the last chunk from
/// registers), each warp instruction 512 contiguous bytes on the vector path.
/// DRAM: each element read once in pass 1, read again in pass 2 from L2 when
/// the rows in flight fit there, written once.
///
/// # Safety
/// `input` and `output` valid for `rows * cols` floats, not overlapping;
/// launched with [`super::Kernel::launch_dims`].
#[inline(always)]
pub unsafe fn online<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    // SAFETY: forwarded; each path is its own straight-line code.
    unsafe { by_alignment!(input, output, cols, |VEC| body::<C, VEC, false>(ctx, input, output, rows, cols)) }
}

/// [`online`] with the row stashed in shared memory by pass 1 and read back
/// from there by pass 2 (step 3b in the module docs).
///
/// # Parameters
/// As [`online`], with `1 <= cols <= STASH_MAX_COLS`. Dynamic shared memory:
/// [`PAIRS_SHARED_BYTES`] then the stash, `super::stash_bytes(cols)`.
///
/// # Safety
/// As [`online`]; launched with [`super::Kernel::launch_dims`] for
/// [`super::Kernel::OnlineStash`].
#[inline(always)]
pub unsafe fn online_stash<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    debug_assert!(cols <= STASH_MAX_COLS);
    // SAFETY: forwarded; each path is its own straight-line code.
    unsafe { by_alignment!(input, output, cols, |VEC| body::<C, VEC, true>(ctx, input, output, rows, cols)) }
}

/// Folds one chunk into the running state `(m, s)`, `s = sum exp(x - base_of(m))`.
#[inline(always)]
fn update<const VEC: bool>(m: &mut f32, s: &mut f32, part: &Part<F, VEC>) {
    let m_new = m.max(part.max());
    let base = base_of(m_new);
    // Rescale what was summed against the old maximum (by 0 if it was -inf).
    *s = *s * exp_minus(*m, base) + part.sum_exp(base);
    *m = m_new;
}

/// Both passes; with `STASH`, pass 1 copies each chunk to shared memory
/// (after the pairs, 16-byte aligned) and pass 2 reads it from there.
#[inline(always)]
unsafe fn body<C: ThreadCtx, const VEC: bool, const STASH: bool>(
    ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32,
) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let t = ctx.thread_idx().x as usize;
    let threads = ctx.block_dim().x as usize;
    let row = ctx.block_idx().x as usize;
    if row >= rows as usize {
        return; // the whole block: the barrier below is never split
    }
    let cols = cols as usize;
    // SAFETY: row < rows: the row's first element is inside both buffers.
    let (x, y) = unsafe { (input.at(row * cols, cols), output.at(row * cols, cols)) };
    // Chunk c: the groups of four floats from c * per_chunk on. Chunks of
    // whole groups inside the row are full (no bounds checks); at most one,
    // the last, is not.
    let per_chunk = F / 4 * threads;
    let chunks = cols.div_ceil(4 * per_chunk);
    let full = cols / 4 / per_chunk;
    let first = |c: usize| c * per_chunk + t;
    let last_span = if chunks > full { Span::of(cols, first(full), threads, F / 4) } else { Span::full(F / 4) };
    // SAFETY: the stash follows the pairs in the launch's shared memory and
    // holds the row (only accessed with STASH).
    let stash = unsafe { ctx.shared::<f32>(PAIRS + cols).at(PAIRS, cols) };

    // Stash and vectors: every full chunk goes to shared memory by
    // asynchronous copies, all of them in flight at once, and pass 1 reads
    // the stash. (Loads through registers keep only one chunk per thread in
    // flight: 64 KiB per SM, too few to keep DRAM busy while each SM alternates
    // between reading its row and writing it.)
    if STASH && VEC {
        for c in 0..full {
            unroll!(k < F / 4, {
                let g = first(c) + threads * k;
                // SAFETY: group g of a full chunk: inside the row and the stash, both aligned.
                unsafe { stash.copy_async_16(4 * g, &x, 4 * g) };
            });
        }
        ctx.wait_async_copies();
    }

    // Pass 1: the running state, chunk by chunk; the last chunk stays in registers.
    let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
    let mut last = Part::<F, VEC>::default();
    for c in 0..full {
        // SAFETY: a full chunk is inside the row (and, copied, the stash); VEC: aligned rows.
        last = unsafe {
            if STASH && VEC {
                Part::load(stash, first(c), threads, Span::full(F / 4))
            } else {
                Part::load(x, first(c), threads, Span::full(F / 4))
            }
        };
        update(&mut m, &mut s, &last);
        if STASH && !VEC && c + 1 < chunks {
            // SAFETY: the same slots of the row-sized stash.
            unsafe { last.store(stash, first(c), threads, Span::full(F / 4)) };
        }
    }
    if chunks > full {
        // SAFETY: last_span is this thread's share of the last chunk.
        last = unsafe { Part::load(x, first(full), threads, last_span) };
        update(&mut m, &mut s, &last);
    }

    // The row's state: warp shuffles, one barrier, warp shuffles.
    let (m, s) = warp_combine(ctx, m, s);
    // SAFETY: every thread of the block gets here exactly once.
    let (m_row, s_row) = unsafe { block_combine(ctx, m, s) };
    let base = base_of(m_row);
    let inv = 1.0 / s_row; // an all -inf row: 0 * (1 / 0) = NaN, as PyTorch

    // Pass 2, backwards, so the most recently read data comes first: the
    // last chunk from registers, then the full chunks before it.
    last.exp_in_place(base);
    last.scale(inv);
    // SAFETY: last_span is this thread's share of the last chunk.
    unsafe { last.store(y, first(chunks - 1), threads, last_span) };
    for c in (0..chunks - 1).rev() {
        // SAFETY: every chunk before the last is full; with STASH, this
        // thread stored exactly these slots of the stash in pass 1.
        let mut part = unsafe {
            if STASH {
                Part::<F, VEC>::load(stash, first(c), threads, Span::full(F / 4))
            } else {
                Part::<F, VEC>::load(x, first(c), threads, Span::full(F / 4))
            }
        };
        part.exp_in_place(base);
        part.scale(inv);
        // SAFETY: as for the load.
        unsafe { part.store(y, first(c), threads, Span::full(F / 4)) };
    }
}
