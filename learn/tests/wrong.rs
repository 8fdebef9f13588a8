//! Wrong solutions, of the kinds careless students write, each graded as
//! the learner's own (its lines must be this file's): every one fails, and
//! its message points at the idea it misses.
//!
//! Each test names its class; the kernels are written as a learner would,
//! with the views' checked methods, except where the class is the
//! learner reaching around them (raw pointers).

use coalesce::emu::Op;
use coalesce::kernels::ThreadCtx;
use coalesce::kernels::emu::EmuCtx;
use coalesce::kernels::gemm::{BT1_BK, BT1_BM, BT1_BN, BT1_TM, Problem};
use coalesce::kernels::math::fma;
use coalesce::kernels::mem::Checked;
use coalesce::kernels::transpose::{BLOCK_ROWS, TILE, Variant};
use coalesce::kernels::vector::F4;
use coalesce_learn::{Body, Grade, Submission, all, grade_submission};
use std::time::Instant;

const T: usize = TILE as usize;
const R: usize = BLOCK_ROWS as usize;

/// Grades `body` as exercise `n`'s, its lines this file's.
fn grade(n: u32, body: Body<'_>, shared_floats: Option<usize>) -> Grade {
    let e = all().iter().find(|e| e.number == n).unwrap();
    grade_submission(e, Submission { body, shared_floats, file: Some(file!()), source: None }).unwrap()
}

/// Grades `body` as exercise `n`'s transpose, asking for `shared_floats`.
fn transpose(
    n: u32, shared_floats: Option<usize>, body: impl Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync,
) -> Grade {
    grade(n, Body::Transpose(&body), shared_floats)
}

/// Grades `body` as exercise 5's copy.
fn copy(body: impl Fn(&EmuCtx<'_>, *const f32, *mut f32, u64) + Sync) -> Grade {
    grade(5, Body::Copy(&body), None)
}

/// Asserts that `g` failed and that some problem says each of `says`.
#[track_caller]
fn fails_saying(g: &Grade, says: &[&str]) {
    assert!(!g.passed(), "passed");
    let all = g.problems.join("\n");
    for s in says {
        assert!(all.contains(s), "no problem says {s:?}:\n{all}");
    }
}

/// This thread's rows of its block's tile, as every transpose here walks
/// it: `t.y`, `t.y + R`, ... (`T / R` of them), each at tile column `t.x`.
fn tile_rows<C: ThreadCtx>(ctx: &C) -> impl Iterator<Item = usize> + Clone {
    let ty = ctx.thread_idx().y as usize;
    (0..T / R).map(move |k| ty + k * R)
}

/// This thread's elements of the `T x T` tile at tile row `tile_row` and
/// tile column `tile_col` of a matrix, as `(row, col)`: its [`tile_rows`]
/// at the tile's column `t.x`.
fn tile_elements<C: ThreadCtx>(ctx: &C, (tile_row, tile_col): (u32, u32)) -> impl Iterator<Item = (usize, usize)> {
    let col = tile_col as usize * T + ctx.thread_idx().x as usize;
    tile_rows(ctx).map(move |j| (tile_row as usize * T + j, col))
}

/// A coalesced transpose, the correct answer to exercise 1, with
/// `store(out_index, value)` doing the store: the classes below break it
/// one way each.
fn coalesced<C: Checked>(ctx: &C, i: *const f32, rows: u32, cols: u32, mut store: impl FnMut(usize, f32)) {
    let input = ctx.global(i, (rows, cols));
    let b = ctx.block_idx();
    let (rows, cols) = (rows as usize, cols as usize);
    // Lanes (t.x) walk an output row; each output column is an input row.
    for (out_row, out_col) in tile_elements(ctx, (b.y, b.x)) {
        if out_col < rows && out_row < cols {
            store(out_row * rows + out_col, input.get(out_col * cols + out_row));
        }
    }
}

/// Exercise 1's answer: [`coalesced`], storing through the output's view.
fn the_answer(ctx: &EmuCtx<'_>, i: *const f32, o: *mut f32, rows: u32, cols: u32) {
    let output = ctx.global_mut(o, (rows, cols));
    coalesced(ctx, i, rows, cols, |dst, v| output.set(dst, v));
}

/// A tiled transpose's two passes, as exercise 2's answer: `fill(j, tx,
/// src)` puts input element `src` at tile row `j`, column `tx`; then, after
/// `between()`, `drain(tx, j, dst)` stores output element `dst` from tile
/// row `tx`, column `j`. The classes below break it one way each.
fn tiled<C: Checked>(
    ctx: &C, rows: u32, cols: u32, mut fill: impl FnMut(usize, usize, usize), between: impl FnOnce(),
    mut drain: impl FnMut(usize, usize, usize),
) {
    let (tx, b) = (ctx.thread_idx().x as usize, ctx.block_idx());
    let (rows, cols) = (rows as usize, cols as usize);
    let (row0, col0) = (b.y as usize * T, b.x as usize * T);
    for j in tile_rows(ctx) {
        let (row, col) = (row0 + j, col0 + tx);
        if row < rows && col < cols {
            fill(j, tx, row * cols + col);
        }
    }
    between();
    for j in tile_rows(ctx) {
        let (out_row, out_col) = (col0 + j, row0 + tx);
        if out_row < cols && out_col < rows {
            drain(tx, j, out_row * rows + out_col);
        }
    }
}

/// A grid-stride loop, as exercise 5's answer: `each(i)` for this
/// thread's indices below `n`.
fn grid_stride(ctx: &EmuCtx<'_>, n: u64, mut each: impl FnMut(usize)) {
    let (t, b, bd, gd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim(), ctx.grid_dim());
    let stride = gd.x as u64 * bd.x as u64;
    let mut i = b.x as u64 * bd.x as u64 + t.x as u64;
    while i < n {
        each(i as usize);
        i += stride;
    }
}

#[test]
fn the_answer_itself_passes_from_this_file() {
    let g = transpose(1, None, the_answer);
    assert!(g.passed(), "{:?}", g.problems);
}

/// Goals hold at every line: one strided store kept beside the coalesced
/// ones would average to "at most 4".
#[test]
fn a_strided_line_beside_coalesced_ones_fails() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        the_answer(ctx, i, o, rows, cols);
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        let (t, b) = (ctx.thread_idx(), ctx.block_idx());
        if b.x == 0 && b.y == 0 && t.y == 0 && t.x < cols {
            // One warp also stores a tile column: lane t.x one output row
            // down from lane t.x - 1, `rows` floats apart (the same values).
            output.set(t.x as usize * rows as usize, input.get(t.x as usize));
        }
    });
    fails_saying(&g, &["global st sectors per request 32.0 (worst line)"]);
}

/// An op the exercise needs, with no request counted, fails (it does not
/// score 0.0, which would meet "at most").
#[test]
fn no_store_at_all_fails() {
    let g = transpose(1, None, |ctx, i, _o, rows, cols| coalesced(ctx, i, rows, cols, |_, _| {}));
    fails_saying(&g, &["no global st request was counted", "wrong result"]);
}

/// Total work is checked: storing each element several times fails.
#[test]
fn redundant_stores_fail() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        for _ in 0..4 {
            the_answer(ctx, i, o, rows, cols);
        }
    });
    fails_saying(&g, &["global st bytes per output element 16.000, target exactly 4.000"]);
}

/// A block stride in place of the grid stride: every block copies
/// everything.
#[test]
fn a_block_stride_copy_fails() {
    let g = copy(|ctx, s, d, len| {
        let (src, dst) = (ctx.global(s.cast::<F4>(), len / 4), ctx.global_mut(d.cast::<F4>(), len / 4));
        let mut i = ctx.thread_idx().x as u64;
        while i < len / 4 {
            dst.set(i as usize, src.get(i as usize));
            i += ctx.block_dim().x as u64;
        }
        let (tail, all) = (ctx.global(s, len), ctx.global_mut(d, len));
        let first = ctx.block_idx().x as u64 * ctx.block_dim().x as u64 + ctx.thread_idx().x as u64;
        if first < len % 4 {
            let j = (len - len % 4 + first) as usize;
            all.set(j, tail.get(j));
        }
    });
    fails_saying(&g, &["global st bytes per output element", "target exactly 4.000"]);
}

/// Counters are checked at a size drawn at random too: a kernel
/// coalesced only at the fixed counted size fails.
#[test]
fn coalesced_at_one_size_only_fails() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        if (rows, cols) == (256, 256) {
            the_answer(ctx, i, o, rows, cols);
        } else {
            let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
            let b = ctx.block_idx();
            let (r, c) = (rows as usize, cols as usize);
            for (row, col) in tile_elements(ctx, (b.x, b.y)) {
                if row < r && col < c {
                    output.set(col * r + row, input.get(row * c + col));
                }
            }
        }
    });
    fails_saying(&g, &["global st sectors per request 32.0", "(drawn at random)"]);
}

/// A store into the next block's tile, overwritten later by that block:
/// right output, a race between blocks.
#[test]
fn a_store_into_another_blocks_tile_fails() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        the_answer(ctx, i, o, rows, cols);
        let output = ctx.global_mut(o, (rows, cols));
        let (t, b) = (ctx.thread_idx(), ctx.block_idx());
        let next = (b.x as usize + 1) * T; // the next block's first output column
        if t.x == 0 && t.y == 0 && next < rows as usize && (b.y as usize * T) < cols as usize {
            output.set(b.y as usize * T * rows as usize + next, 0.0);
        }
    });
    fails_saying(&g, &["blocks run in any order"]);
}

/// Accesses through raw pointers are invisible to the counters: a kernel
/// that stores that way shows no store, and fails.
#[test]
fn raw_pointer_stores_fail() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        // SAFETY: dst < rows * cols, inside the output (the class is the
        // learner reaching around the views).
        coalesced(ctx, i, rows, cols, |dst, v| unsafe { *o.add(dst) = v });
    });
    fails_saying(&g, &["no global st request was counted"]);
}

/// A sleep in place of the barrier, and the tile read through a raw
/// pointer: no shared read is seen, so exercise 6 fails.
#[test]
fn a_sleep_for_a_barrier_with_raw_reads_fails() {
    let g = transpose(6, None, |ctx, i, o, rows, cols| {
        let shared = ctx.shared::<f32>(T * (T + 1));
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        let raw = ctx.shared_mem::<f32>();
        tiled(
            ctx,
            rows,
            cols,
            |row, col, src| shared.set(row * (T + 1) + col, input.get(src)),
            || {
                let t = ctx.thread_idx();
                if t.x == 0 && t.y == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(1));
                }
            },
            // SAFETY: inside the tile (the class reaches around the views).
            |row, col, dst| output.set(dst, unsafe { *raw.add(row * (T + 1) + col) }),
        );
    });
    fails_saying(&g, &["no shared ld request was counted"]);
}

/// A submission whose file dropped `#![forbid(unsafe_code)]` fails, whatever it does.
#[test]
fn a_file_without_forbid_unsafe_fails() {
    let e = all().iter().find(|e| e.number == 1).unwrap();
    let source = e.source.replace("#![forbid(unsafe_code)]", "");
    let s = Submission {
        body: Body::Transpose(&the_answer),
        shared_floats: None,
        file: Some(file!()),
        source: Some(&source),
    };
    let g = grade_submission(e, s).unwrap();
    fails_saying(&g, &["#![forbid(unsafe_code)]"]);
}

/// A layout that hands its arithmetic to the ladder's (`Padded::at`) makes
/// no access of its own to trace: the file naming it fails, however right
/// the result.
#[test]
fn a_file_naming_the_ladder_s_layout_fails() {
    let e = all().iter().find(|e| e.number == 3).unwrap();
    let source = e.source.replace("row * T + col", "Padded::at::<T>(row, col)");
    let floats = T * (T + 1);
    let body = |ctx: &EmuCtx<'_>, i: *const f32, o: *mut f32, rows: u32, cols: u32| {
        padded_transpose(ctx, i, o, rows, cols, floats)
    };
    let s = Submission {
        body: Body::Transpose(&body),
        shared_floats: Some(floats),
        file: Some(file!()),
        source: Some(&source),
    };
    let g = grade_submission(e, s).unwrap();
    fails_saying(&g, &["your file names `Padded`"]);
    // The same file with the answer written out passes.
    let source = e.source.replace("row * T + col", "row * (T + 1) + col");
    let g = grade_submission(e, Submission { source: Some(&source), ..s }).unwrap();
    assert!(g.passed(), "{:?}", g.problems);
}

/// Calling the ladder's step does the work in kernels/src, not here.
#[test]
fn calling_the_ladder_step_fails() {
    // SAFETY: the grader's buffers and launch are step 2's.
    let g = transpose(1, None, |ctx, i, o, rows, cols| unsafe { Variant::NaiveCols.run(ctx, i, o, rows, cols) });
    fails_saying(&g, &["counted accesses come from kernels/src/transpose/02_naive_cols.rs"]);
}

/// A padded tile's layout, as exercise 3's Layout, with `floats` of room.
fn padded_transpose(ctx: &EmuCtx<'_>, i: *const f32, o: *mut f32, rows: u32, cols: u32, floats: usize) {
    let tile = ctx.shared::<f32>(floats);
    let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
    let stride = floats / T;
    tiled(
        ctx,
        rows,
        cols,
        |row, col, src| tile.set(row * stride + col, input.get(src)),
        || ctx.sync_threads(),
        |row, col, dst| output.set(dst, tile.get(row * stride + col)),
    );
}

/// Shared memory is checked against what the exercise needs and the 48 KB
/// a block gets without opting in: a 135 KB tile (rows of 1057 floats,
/// also conflict-free) fails.
#[test]
fn a_huge_tile_fails() {
    let floats = T * 1057;
    let g = transpose(3, Some(floats), |ctx, i, o, rows, cols| padded_transpose(ctx, i, o, rows, cols, floats));
    fails_saying(&g, &["past the 49152 a block gets without opting in", "shared memory 33824 floats per block"]);
    // The right padding passes, from this file too.
    let floats = T * (T + 1);
    let g = transpose(3, Some(floats), |ctx, i, o, rows, cols| padded_transpose(ctx, i, o, rows, cols, floats));
    assert!(g.passed(), "{:?}", g.problems);
}

/// Exercise 7 counts every load per FMA: `B` read from global memory in
/// the inner loop, with no register reuse, fails.
#[test]
fn gemm_reading_b_from_global_fails() {
    let body = |ctx: &EmuCtx<'_>, a: *const f32, b: *const f32, c: *mut f32, p: Problem| {
        const BM: usize = BT1_BM as usize;
        const BN: usize = BT1_BN as usize;
        const BK: usize = BT1_BK as usize;
        const TM: usize = BT1_TM as usize;
        let (a, b, c) = (ctx.global(a, (p.m, p.k)), ctx.global(b, (p.k, p.n)), ctx.global_mut(c, (p.m, p.n)));
        let a_tile = ctx.shared::<f32>(BM * BK + BK * BN).part(0, BM * BK);
        let tid = ctx.thread_idx().x as usize;
        let blk = ctx.block_idx();
        let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
        let (m0, n0) = (blk.y as usize * BM, blk.x as usize * BN);
        let (col, row) = (tid % BN, (tid / BN) * TM);
        let (a_r, a_c) = (tid / BK, tid % BK);
        let mut acc = [0.0f32; TM];
        let mut k0 = 0;
        while k0 < k {
            let (ar, ac) = (m0 + a_r, k0 + a_c);
            a_tile.set(a_r * BK + a_c, if ar < m && ac < k { a.get(ar * k + ac) } else { 0.0 });
            ctx.sync_threads();
            for i in 0..BK.min(k - k0) {
                for (r, acc) in acc.iter_mut().enumerate() {
                    let y = if n0 + col < n { b.get((k0 + i) * n + n0 + col) } else { 0.0 };
                    *acc = fma(a_tile.get((row + r) * BK + i), y, *acc);
                }
            }
            ctx.sync_threads();
            k0 += BK;
        }
        for (r, acc) in acc.into_iter().enumerate() {
            if m0 + row + r < m && n0 + col < n {
                c.set((m0 + row + r) * n + n0 + col, acc);
            }
        }
    };
    let g = grade(7, Body::Gemm(&body), None);
    fails_saying(&g, &["load requests (global and shared) per FMA 2.0", "global ld bytes per FMA"]);
    assert!(g.run.counted[0].report.counters.total(Op::GlobalLoad).requests > 0);
}

/// The endless-loop typo of exercise 5 (`i += first` for `i += stride`):
/// thread 0 never advances. A finding, within seconds and bounded memory.
#[test]
fn an_endless_loop_is_a_finding() {
    let start = Instant::now();
    let g = copy(|ctx, s, d, len| {
        let (t, b, bd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim());
        let first = b.x as u64 * bd.x as u64 + t.x as u64;
        let (src, dst) = (ctx.global(s, len), ctx.global_mut(d, len));
        let mut i = first;
        while i < len {
            dst.set(i as usize, src.get(i as usize));
            i += first;
        }
    });
    fails_saying(&g, &["a loop that does not end", "block (0, 0, 0) thread (0, 0, 0)", "wrong.rs"]);
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
}

/// An `F4` view one element longer than the buffer: the store past its
/// end is refused (never written outside), and reported.
#[test]
fn an_overrun_past_the_buffer_is_refused() {
    let g = copy(|ctx, s, d, len| {
        let n = len.div_ceil(4);
        let (src, dst) = (ctx.global(s.cast::<F4>(), n), ctx.global_mut(d.cast::<F4>(), n));
        grid_stride(ctx, n, |i| dst.set(i, src.get(i)));
    });
    fails_saying(&g, &["outside every buffer", "reaches past the buffer it was made from"]);
}

/// A panic in every thread is one finding, with its line.
#[test]
fn a_panic_is_one_finding() {
    let g = copy(|ctx, s, d, len| {
        let table = [0usize; 4];
        let (src, dst) = (ctx.global(s, len), ctx.global_mut(d, len));
        let t = ctx.thread_idx().x as usize;
        let j = table[t + 4 * (len as usize % 7 + 1)];
        dst.set(j, src.get(j));
    });
    fails_saying(&g, &["panicked", "index out of bounds", "Rust checks array indices"]);
    let panics = g.problems.iter().filter(|p| p.contains("panicked")).count();
    assert_eq!(panics, 1, "{:?}", g.problems);
}

/// An index past the view: out of bounds, with its hint.
#[test]
fn an_unguarded_index_is_out_of_bounds() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        let b = ctx.block_idx();
        let (rows, cols) = (rows as usize, cols as usize);
        for (out_row, out_col) in tile_elements(ctx, (b.y, b.x)) {
            output.set(out_row * rows + out_col, input.get(out_col * cols + out_row));
        }
    });
    fails_saying(&g, &["out of bounds", "Compare the guard"]);
}

/// An `F4` view that starts one float in: misaligned, with its hint.
#[test]
fn a_misaligned_vector_is_found() {
    let g = copy(|ctx, s, d, len| {
        let n = (len - 1) / 4;
        let (src, dst) =
            (ctx.global(s.wrapping_add(1).cast::<F4>(), n), ctx.global_mut(d.wrapping_add(1).cast::<F4>(), n));
        grid_stride(ctx, n, |i| dst.set(i, src.get(i)));
        let (src, dst) = (ctx.global(s, len), ctx.global_mut(d, len));
        grid_stride(ctx, len, |j| {
            if j == 0 || j > 4 * n as usize {
                dst.set(j, src.get(j));
            }
        });
    });
    fails_saying(&g, &["not aligned", "multiple of its size"]);
}

/// A barrier inside a branch that some threads skip: divergent, with its hint.
#[test]
fn a_barrier_some_threads_skip_is_found() {
    let g = transpose(6, None, |ctx, i, o, rows, cols| {
        let shared = ctx.shared::<f32>(T * (T + 1));
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        tiled(
            ctx,
            rows,
            cols,
            |row, col, src| {
                shared.set(row * (T + 1) + col, input.get(src));
                ctx.sync_threads();
            },
            || {},
            |row, col, dst| output.set(dst, shared.get(row * (T + 1) + col)),
        );
    });
    fails_saying(&g, &["not every thread", "Where can a barrier stand"]);
}

/// The missing barrier of exercise 6: a race, drawn.
#[test]
fn the_missing_barrier_is_a_race() {
    let e = all().iter().find(|e| e.number == 6).unwrap();
    let g = coalesce_learn::grade(e, coalesce_learn::Which::Yours).unwrap();
    fails_saying(&g, &["no barrier between", "what must every thread of the block pass"]);
    let f =
        g.run.troubles.iter().filter_map(|t| t.finding.as_ref()).find(|f| coalesce::emu::picture::is_race(f)).unwrap();
    let picture = coalesce::emu::picture::race_ascii(f);
    assert!(picture.contains("no sync_threads between them"), "{picture}");
    assert!(picture.contains("e6_barrier.rs"), "{picture}");
}

/// A swizzle whose layout sends two columns of a row to one word: the
/// checker's hint names the collision.
#[test]
fn a_colliding_layout_is_found() {
    let g = transpose(4, Some(T * T), |ctx, i, o, rows, cols| {
        let at = |row: usize, col: usize| row * T + ((col ^ row) & !1);
        let tile = ctx.shared::<f32>(T * T);
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        tiled(
            ctx,
            rows,
            cols,
            |row, col, src| tile.set(at(row, col), input.get(src)),
            || ctx.sync_threads(),
            |row, col, dst| output.set(dst, tile.get(at(row, col))),
        );
    });
    fails_saying(&g, &["two threads write one shared word", "a permutation of the columns"]);
}

/// One thread does its block's whole tile: one-lane requests, each of a
/// sector (under "at most 4"), each element once, and the result right.
#[test]
fn one_thread_doing_the_blocks_work_fails() {
    let g = transpose(1, None, |ctx, i, o, rows, cols| {
        let (input, output) = (ctx.global(i, (rows, cols)), ctx.global_mut(o, (rows, cols)));
        let (t, b) = (ctx.thread_idx(), ctx.block_idx());
        let (rows, cols) = (rows as usize, cols as usize);
        if t.x == 0 && t.y == 0 {
            for out_row in b.y as usize * T..((b.y as usize + 1) * T).min(cols) {
                for out_col in b.x as usize * T..((b.x as usize + 1) * T).min(rows) {
                    output.set(out_row * rows + out_col, input.get(out_col * cols + out_row));
                }
            }
        }
    });
    fails_saying(&g, &["lanes per request 1.0 (worst line), target 32"]);
}

/// A recursion without end: the stack runs out, a finding (not the
/// process's end).
#[test]
fn a_recursion_without_end_is_a_finding() {
    fn walk(src: &coalesce::kernels::Global<'_, EmuCtx<'_>, f32>, i: usize) -> f32 {
        let v = src.get(i % src.len());
        if v.is_nan() { v } else { v + walk(src, i + 1) }
    }
    let g = copy(|ctx, s, d, len| {
        let (src, dst) = (ctx.global(s, len), ctx.global_mut(d, len));
        let i = ctx.thread_idx().x as usize;
        dst.set(i, walk(&src, i));
    });
    fails_saying(&g, &["had used up its stack", "does a function call itself"]);
}
