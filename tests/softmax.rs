//! Row softmax against a float64 reference: every kernel on the CPU emulator
//! (always, in CI) and on the GPU (skipped when none is present), at odd
//! shapes, misaligned buffers, the hard cases (masks, all `-inf`, +-1e30,
//! NaN, +inf) and, on the GPU, the benchmark shapes.
//!
//! Tolerance, per element, from the error model of `exp(x - max)` in f32:
//! `x - max` and `* log2 e` are rounded (relative error 2^-24 |d| each, for
//! `d = x - max`), `ex2.approx` adds ~2 ulp, the sum and `1 / sum` a few
//! more. So `|got - want| <= |want| 2^-23 (16 + 2 |d|) + 1e-37` (the last
//! term: `ex2.approx.ftz` flushes results below 2^-126 to 0). Every row that
//! is not NaN must sum to 1 within 1e-6 (summed in f64).

mod common;

use coalesce::emu::{Op, Report, Tally};
use coalesce::softmax::{self, Kernel, Strategy, emu};
use coalesce::{Error, MatrixShape};
use common::*;
use rand::{Rng, rngs::StdRng};

/// The reference, in f64, with torch.softmax's special values: a NaN or
/// +inf in a row, or a row of only -inf, makes the row NaN.
fn reference(input: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0f64; rows * cols];
    par_rows(&mut out, cols, |r, y| {
        let x = &input[r * cols..(r + 1) * cols];
        let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        if x.iter().any(|v| v.is_nan() || *v == f32::INFINITY) || m == f64::NEG_INFINITY {
            y.fill(f64::NAN);
            return;
        }
        let mut s = 0.0;
        for (y, &v) in y.iter_mut().zip(x) {
            *y = (v as f64 - m).exp();
            s += *y;
        }
        y.iter_mut().for_each(|y| *y /= s);
    });
    out
}

/// Runs `f(row, row_slice)` over the rows of `out` on all cores.
fn par_rows<T: Send>(out: &mut [T], cols: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let rows = out.len() / cols;
    let per = rows.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(per * cols).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, row) in chunk.chunks_mut(cols).enumerate() {
                    f(i * per + j, row);
                }
            });
        }
    });
}

/// What a comparison measured, for the accuracy lines the docs quote.
#[derive(Default, Clone, Copy)]
struct Stats {
    /// Largest |got - want| / want in units of 2^-23, over elements within
    /// 1 of their row's max (the large outputs).
    ulp_near_max: f64,
    /// Largest |sum of the row - 1| over rows that are not NaN.
    row_sum: f64,
}

impl Stats {
    fn merge(self, o: Stats) -> Stats {
        Stats { ulp_near_max: self.ulp_near_max.max(o.ulp_near_max), row_sum: self.row_sum.max(o.row_sum) }
    }
}

/// Compares every element and every row sum; fails with the first bad
/// (row, col).
fn check(what: &str, shape: MatrixShape, input: &[f32], got: &[f32], want: &[f64]) -> Stats {
    let cols = shape.cols();
    assert_eq!(got.len(), shape.len(), "{what} on {shape}: output length");
    let mut stats = vec![Stats::default(); shape.rows()];
    let mut bad: Vec<Option<String>> = vec![None; shape.rows()];
    let mut pairs: Vec<(Stats, Option<String>)> = stats.iter().copied().zip(bad.drain(..)).collect();
    par_rows(&mut pairs, 1, |r, slot| {
        let x = &input[r * cols..(r + 1) * cols];
        let (g, w) = (&got[r * cols..(r + 1) * cols], &want[r * cols..(r + 1) * cols]);
        let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let mut st = Stats::default();
        let mut sum = 0.0f64;
        for c in 0..cols {
            let (g, w) = (g[c], w[c]);
            let fail = |why: &str| format!("{why}: row {r} col {c}: got {g} (bits {:#x}), want {w}", g.to_bits());
            if g.to_bits() == POISON_BITS {
                slot[0].1 = Some(fail("never written"));
                return;
            }
            if w.is_nan() {
                if !g.is_nan() {
                    slot[0].1 = Some(fail("expected NaN"));
                    return;
                }
                continue;
            }
            let d = (x[c] as f64 - m).abs();
            let tol = w.abs() * 2f64.powi(-23) * (16.0 + 2.0 * d) + 1e-37;
            if g.is_nan() || (g as f64 - w).abs() > tol {
                slot[0].1 = Some(fail(&format!("off by {:.3e} (tolerance {tol:.3e})", (g as f64 - w).abs())));
                return;
            }
            if d <= 1.0 {
                st.ulp_near_max = st.ulp_near_max.max((g as f64 - w).abs() / w / 2f64.powi(-23));
            }
            sum += g as f64;
        }
        if !w[0].is_nan() {
            st.row_sum = (sum - 1.0).abs();
            if st.row_sum > 1e-6 {
                slot[0].1 = Some(format!("row {r} sums to 1 + {:.3e}", sum - 1.0));
            }
        }
        slot[0].0 = st;
    });
    for (r, (st, bad)) in pairs.into_iter().enumerate() {
        if let Some(msg) = bad {
            panic!("{what} on {shape}: {msg}");
        }
        stats[r] = st;
    }
    stats.into_iter().fold(Stats::default(), Stats::merge)
}

/// Logits: uniform in [-8, 8] (outputs spread over ~7 decades).
fn logits(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-8.0f32..8.0)).collect()
}

/// The kernels that can take rows of `cols` columns.
fn kernels_for(cols: usize) -> Vec<Kernel> {
    Kernel::ALL.into_iter().filter(|k| cols <= k.max_cols() as usize).collect()
}

/// Runs every kernel that takes `shape`'s rows through `run`, checks each
/// output against the f64 reference (failures name the kernel's entry point
/// followed by `label`), and hands `each` the kernel, its output and what
/// the check measured.
fn check_every_kernel(
    shape: MatrixShape,
    input: &[f32],
    label: &str,
    run: impl Fn(Kernel) -> Vec<f32>,
    mut each: impl FnMut(Kernel, &[f32], Stats),
) {
    let want = reference(input, shape.rows(), shape.cols());
    for kernel in kernels_for(shape.cols()) {
        let output = run(kernel);
        let stats = check(&format!("{}{label}", kernel.entry_point()), shape, input, &output, &want);
        each(kernel, &output, stats);
    }
}

/// `kernel` on the emulator, into a poisoned output.
fn on_emulator(kernel: Kernel, input: &[f32], shape: MatrixShape) -> Vec<f32> {
    let mut output = poison(shape.len());
    emu::launch(kernel, input, &mut output, shape).unwrap();
    output
}

/// Every kernel on the emulator at the shapes it takes: a few rows each of
/// 1 column, 3 (less than a group), 33 (neither 32 nor 4 divides it), 128,
/// 130, 255, 1000, 1023, 1024, 2050, 4100 and 5000 columns (the last
/// through both block kernels and online), with both input distributions.
#[test]
fn every_kernel_on_the_emulator_at_odd_shapes() {
    let mut rng = rng("emulator softmax");
    let shapes = [
        (7, 1),
        (5, 3),
        (5, 33),
        (3, 128),
        (4, 130),
        (3, 255),
        (3, 1000),
        (2, 1023),
        (2, 1024),
        (2, 2050),
        (2, 4100),
        (2, 5000),
    ];
    for (rows, cols) in shapes {
        let shape = MatrixShape::new(rows, cols).unwrap();
        for wide in [false, true] {
            let input = if wide { random_matrix(&mut rng, shape.len()) } else { logits(&mut rng, shape.len()) };
            check_every_kernel(shape, &input, "", |k| on_emulator(k, &input, shape), |_, _, _| {});
        }
    }
}

/// Buffers one float off 16-byte alignment take the scalar path even when
/// `cols % 4 == 0`; rows of 20000 columns take online through two chunks of
/// 1024 threads, the second partial (and, at 20001, a tail).
#[test]
fn misaligned_buffers_and_multi_chunk_rows_on_the_emulator() {
    let mut rng = rng("emulator softmax misaligned");
    for (rows, cols) in [(3, 128), (3, 1000), (2, 4096)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let storage = logits(&mut rng, shape.len() + 1);
        let input = &storage[1..];
        let run = |kernel| {
            let mut output = poison(shape.len() + 1);
            emu::launch(kernel, input, &mut output[1..], shape).unwrap();
            output.split_off(1)
        };
        check_every_kernel(shape, input, " (misaligned)", run, |_, _, _| {});
    }
    for cols in [20000, 20001] {
        let shape = MatrixShape::new(2, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        let want = reference(&input, 2, cols);
        for kernel in [Kernel::Online, Kernel::OnlineStash] {
            let mut output = poison(shape.len());
            emu::launch(kernel, &input, &mut output, shape).unwrap();
            check(kernel.entry_point(), shape, &input, &output, &want);
        }
    }
}

/// One row per hard case, `cols` columns each.
fn hard_rows(rng: &mut StdRng, cols: usize) -> (Vec<f32>, &'static [&'static str]) {
    const NAMES: &[&str] = &[
        "causal mask (first 60% -inf)",
        "random half -inf",
        "all -inf",
        "+-1e30 and small values",
        "all 1e30",
        "constant",
        "one NaN",
        "one +inf",
        "-inf last, rest logits",
    ];
    let mut m = Vec::with_capacity(NAMES.len() * cols);
    let ninf = f32::NEG_INFINITY;
    let pos = rng.random_range(0..cols);
    for (i, _) in NAMES.iter().enumerate() {
        for c in 0..cols {
            let l = rng.random_range(-8.0f32..8.0);
            m.push(match i {
                0 => {
                    if c < cols * 3 / 5 {
                        ninf
                    } else {
                        l
                    }
                }
                1 => {
                    if rng.random_bool(0.5) {
                        ninf
                    } else {
                        l
                    }
                }
                2 => ninf,
                3 => [1e30, -1e30, 0.0, 5.0][rng.random_range(0..4)],
                4 => 1e30,
                5 => 0.25,
                6 => {
                    if c == pos {
                        f32::NAN
                    } else {
                        l
                    }
                }
                7 => {
                    if c == pos {
                        f32::INFINITY
                    } else {
                        l
                    }
                }
                _ => {
                    if c + 1 == cols {
                        ninf
                    } else {
                        l
                    }
                }
            });
        }
    }
    (m, NAMES)
}

/// The hard cases through every kernel that takes the row length. With one
/// column: a row of `-inf` is NaN, 1e30 gives exactly 1, NaN stays NaN.
#[test]
fn hard_cases_on_the_emulator() {
    let mut rng = rng("emulator softmax hard cases");
    for cols in [1, 33, 1000, 5000] {
        let (input, names) = hard_rows(&mut rng, cols);
        let shape = MatrixShape::new(names.len(), cols).unwrap();
        check_every_kernel(
            shape,
            &input,
            "",
            |k| on_emulator(k, &input, shape),
            |kernel, output, _| {
                // Spelled out, beyond the reference: NaN rows are NaN everywhere.
                for (r, name) in names.iter().enumerate() {
                    let row = &output[r * cols..(r + 1) * cols];
                    let nan_row = name.starts_with("all -inf") || name.starts_with("one ");
                    assert!(
                        !nan_row || row.iter().all(|v| v.is_nan()),
                        "{}: row '{name}' should be NaN",
                        kernel.entry_point()
                    );
                    if name.starts_with("all 1e30") || name.starts_with("constant") {
                        let u = 1.0 / cols as f32;
                        assert!(row.iter().all(|&v| (v - u).abs() <= 4.0 * f32::EPSILON * u), "{name}: {row:?}");
                    }
                }
            },
        );
    }
}

// ------------------------------------------------------ the checker ----

/// `kernel` under the checker and the counters: no finding, the output
/// checked against the f64 reference. `offset` floats into both buffers (1:
/// off 16-byte alignment, the scalar path).
fn checked(kernel: Kernel, shape: MatrixShape, input: &[f32], offset: usize) -> Report {
    let storage: Vec<f32> = [&vec![0.0; offset][..], input].concat();
    let mut output = poison(offset + shape.len());
    let report = emu::launch_checked(kernel, &storage[offset..], &mut output[offset..], shape).unwrap();
    let what = format!("{} on {shape} at offset {offset}", kernel.entry_point());
    assert!(report.findings.is_empty(), "{what}: {:#?}", report.findings);
    check(&what, shape, input, &output[offset..], &reference(input, shape.rows(), shape.cols()));
    report
}

/// The sum of `op` over the lines of `file` (`reduce.rs`: the (max, sum)
/// pairs; `03_online.rs`: the stash's `cp.async`; `tile.rs`: the part's loads
/// and stores) that access `width` bytes a lane.
fn tally(report: &Report, op: Op, file: &str, width: u32) -> Tally {
    let mut t = Tally::default();
    for s in report.counters.of(op).filter(|s| s.site.file_name() == file && s.width == width) {
        t.requests += s.tally.requests;
        t.accesses += s.tally.accesses;
        t.bytes += s.tally.bytes;
        t.transactions += s.tally.transactions;
        t.ideal += s.tally.ideal;
    }
    t
}

fn is_global(op: Op) -> bool {
    matches!(op, Op::GlobalLoad | Op::GlobalStore | Op::CopyAsyncLoad)
}

/// Every kernel on aligned rows of whole warps' worth of float4 groups, under
/// the checker: the vector path reads and writes each element once, 16 bytes
/// a lane, 16 sectors (512 contiguous bytes) a request, nothing wasted. The
/// block kernels' (max, sum) pairs cost one wavefront a request in shared
/// memory (at most 16 warps here); the warp kernels use none. The stash
/// reads its (single) chunk by `cp.async`, 16 sectors a request from global
/// memory, 4 wavefronts (128 bytes each) a request into shared memory, and
/// pass 1 reads it back from there, again 4 wavefronts a request.
#[test]
fn the_vector_path_moves_16_bytes_a_lane_under_the_checker() {
    let mut rng = rng("checked softmax vectors");
    for (rows, cols) in [(5, 128), (2, 1024)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        let bytes = 4 * shape.len() as u64;
        for kernel in kernels_for(cols) {
            let report = checked(kernel, shape, &input, 0);
            let name = format!("{} on {shape}", kernel.entry_point());
            let c = &report.counters;
            let warps = rows as u64 * kernel.launch_dims(rows as u32, cols as u32).block.x as u64 / 32;
            let (ld, st) = (c.total(Op::GlobalLoad), c.total(Op::GlobalStore));
            assert!(c.sites.iter().all(|s| !is_global(s.op) || s.width == 16), "{name}: global widths");
            assert_eq!((st.per_request(), st.efficiency(), st.bytes), (16.0, 1.0, bytes), "{name}: stores");
            // The stash reads the row by cp.async, the others by loads.
            let copied = c.total(Op::CopyAsyncLoad);
            for t in [ld, copied].iter().filter(|t| t.requests > 0) {
                assert_eq!((t.per_request(), t.efficiency()), (16.0, 1.0), "{name}: loads");
            }
            assert_eq!(ld.bytes + copied.bytes, bytes, "{name}: bytes read");
            let pairs =
                (tally(&report, Op::SharedStore, "reduce.rs", 4), tally(&report, Op::SharedLoad, "reduce.rs", 4));
            match kernel.strategy() {
                Strategy::WarpPerRow => assert!(c.sites.iter().all(|s| is_global(s.op)), "{name}: shared memory"),
                _ => {
                    // Lane 0 of each warp stores its m and its s; each lane
                    // below the block's warp count loads one pair.
                    assert_eq!((pairs.0.requests, pairs.0.accesses), (2 * warps, 2 * warps), "{name}: pair stores");
                    assert_eq!(pairs.0.per_request(), 1.0, "{name}: pair stores");
                    assert_eq!((pairs.1.requests, pairs.1.per_request()), (2 * warps, 1.0), "{name}: pair loads");
                }
            }
            // A row of whole chunks (16 floats a thread) goes to the stash;
            // a shorter one is online's partial last chunk, read from global.
            if kernel == Kernel::OnlineStash && cols >= 1024 {
                let copies = tally(&report, Op::CopyAsyncLoad, "03_online.rs", 16);
                assert_eq!((copies.bytes, copies.per_request()), (bytes, 16.0), "{name}: cp.async reads");
                let stashed = tally(&report, Op::CopyAsyncStore, "03_online.rs", 16);
                assert_eq!((stashed.bytes, stashed.per_request(), stashed.efficiency()), (bytes, 4.0, 1.0), "{name}");
                let read_back = tally(&report, Op::SharedLoad, "tile.rs", 16);
                assert_eq!((read_back.bytes, read_back.per_request()), (bytes, 4.0), "{name}: stash reads");
            }
        }
    }
}

/// The scalar path (buffers one float off 16-byte alignment): each float4
/// group moves as four 4-byte accesses at the vector path's addresses, so a
/// warp request spans the same 512 bytes (16 sectors, 17 where they straddle
/// one more) for 128 bytes asked: four times the requests and the sectors of
/// the vector path, a quarter of each request's sectors used. Nothing wider
/// than 4 bytes is accessed, and the checker finds nothing.
#[test]
fn the_scalar_path_takes_four_requests_per_group_under_the_checker() {
    let mut rng = rng("checked softmax scalar");
    let shape = MatrixShape::new(2, 1024).unwrap();
    let input = logits(&mut rng, shape.len());
    for kernel in kernels_for(shape.cols()) {
        let name = kernel.entry_point();
        let vector = checked(kernel, shape, &input, 0);
        let scalar = checked(kernel, shape, &input, 1);
        assert!(scalar.counters.sites.iter().all(|s| s.width == 4), "{name}: wider than 4 bytes");
        for op in [Op::GlobalLoad, Op::GlobalStore] {
            let (v, s) = (vector.counters.total(op), scalar.counters.total(op));
            // The vector stash reads by cp.async what the scalar one loads.
            let copied = if op == Op::GlobalLoad { vector.counters.total(Op::CopyAsyncLoad) } else { Tally::default() };
            let (v_requests, v_bytes) = (v.requests + copied.requests, v.bytes + copied.bytes);
            assert_eq!((s.requests, s.bytes), (4 * v_requests, v_bytes), "{name}: {} requests", op.name());
            assert_eq!(s.ideal_per_request(), 4.0, "{name}: {}", op.name());
            assert!((16.0..=17.0).contains(&s.per_request()), "{name}: {} {}", op.name(), s.per_request());
        }
    }
}

/// Blocks of more than 16 warps and rows of two online chunks. Past 16
/// warps the (max, sum) pairs cost two wavefronts a load request: lanes `l`
/// and `l + 16` read words 32 apart, in one bank. The stash of an aligned
/// row is all `cp.async` (every global read of the row is a copy; the passes
/// read shared memory, 16 bytes a lane, 4 wavefronts a request); the stash
/// of a row with a tail stages through registers, 4-byte stores and loads 16
/// bytes apart, so lanes 8 apart share a bank: 4 wavefronts a request where
/// 1 would do.
#[test]
fn long_rows_and_the_stash_under_the_checker() {
    let mut rng = rng("checked softmax long rows");
    for (kernel, cols) in [(Kernel::Block32, 16385), (Kernel::OnlineStash, 32768), (Kernel::OnlineStash, 16385)] {
        let shape = MatrixShape::new(1, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        let report = checked(kernel, shape, &input, 0);
        let name = format!("{} on {shape}", kernel.entry_point());
        let warps = kernel.launch_dims(1, cols as u32).block.x as u64 / 32;
        assert!(warps > 16, "{name}: {warps} warps");
        let pairs = tally(&report, Op::SharedLoad, "reduce.rs", 4);
        assert_eq!(
            (pairs.requests, pairs.per_request(), pairs.ideal_per_request()),
            (2 * warps, 2.0, 1.0),
            "{name}: pair loads"
        );
        if kernel != Kernel::OnlineStash {
            continue;
        }
        if cols % 4 == 0 {
            let copies = tally(&report, Op::CopyAsyncLoad, "03_online.rs", 16);
            assert_eq!(copies.bytes, 4 * cols as u64, "{name}: cp.async bytes");
            assert_eq!(report.counters.total(Op::CopyAsyncLoad), copies, "{name}: cp.async reads");
            assert_eq!(report.counters.total(Op::GlobalLoad).requests, 0, "{name}: every read of the row is a copy");
            // Pass 1 reads both chunks, pass 2 the first again.
            let reads = tally(&report, Op::SharedLoad, "tile.rs", 16);
            assert_eq!((reads.bytes, reads.per_request()), (4 * (cols as u64 + 16384), 4.0), "{name}: stash reads");
        } else {
            // The first chunk (16384 floats) is stashed, the second (one float) is the last.
            for op in [Op::SharedStore, Op::SharedLoad] {
                let t = tally(&report, op, "tile.rs", 4);
                let want = (4 * 16384, 4.0, 1.0);
                assert_eq!((t.bytes, t.per_request(), t.ideal_per_request()), want, "{name}: {}", op.name());
            }
        }
    }
}

#[test]
fn the_dispatch_picks_the_strategy_by_row_length() {
    let cases = [
        (1, Kernel::Warp4),
        (128, Kernel::Warp4),
        (129, Kernel::Warp8),
        (512, Kernel::Warp16),
        (1000, Kernel::Warp32),
        (1024, Kernel::Warp32),
        (1025, Kernel::Block8),
        (2048, Kernel::Block8),
        (2049, Kernel::Block16),
        (4096, Kernel::Block16),
        (4097, Kernel::Block32),
        (32768, Kernel::Block32),
        (32769, Kernel::OnlineStash),
        (50000, Kernel::OnlineStash),
        (57344, Kernel::OnlineStash),
        (57345, Kernel::Online),
        (u32::MAX, Kernel::Online),
    ];
    for (cols, kernel) in cases {
        assert_eq!(Kernel::for_cols(cols), kernel, "{cols} columns");
        assert_eq!(Strategy::for_cols(cols), kernel.strategy(), "{cols} columns");
    }
    assert_eq!(Strategy::WarpPerRow.kernel(1025), None);
    assert_eq!(Strategy::BlockPerRow.kernel(32769), None);
    assert_eq!(Strategy::BlockPerRow.kernel(1000), Some(Kernel::Block8));
    assert_eq!(Strategy::Online.kernel(1), Some(Kernel::OnlineStash));
    assert_eq!(Strategy::Online.kernel(57345), Some(Kernel::Online));
    // The longest stashed row fits an H100's opt-in shared memory (227 KiB).
    assert_eq!(Kernel::OnlineStash.launch_dims(5, 57344).shared_bytes, 256 + 57344 * 4);
    assert!(
        Kernel::OnlineStash.launch_dims(5, 57344).shared_bytes <= coalesce::GridLimits::CUDA.max_shared_bytes_optin
    );
    assert!(coalesce::kernels::OPT_IN_SHARED.contains(&"softmax_online_stash"));
    // Every name is distinct and every kernel is in the PTX's entry list.
    let mut names: Vec<&str> = Kernel::ALL.iter().map(|k| k.entry_point()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Kernel::ALL.len());
    assert_eq!(coalesce::kernels::softmax::ENTRIES.len(), Kernel::ALL.len());
}

/// The block geometry covers the row with whole warps, never more than 1024
/// threads, for every row length a kernel takes.
#[test]
fn launch_geometry_covers_every_row_length() {
    for kernel in Kernel::ALL {
        let max = kernel.max_cols().min(70_000);
        for cols in (1..=max).step_by(7).chain([max]) {
            let d = kernel.launch_dims(5, cols);
            assert!(d.block.x.is_multiple_of(32) && d.block.x <= 1024, "{kernel:?} {cols}: {:?}", d.block);
            match kernel.strategy() {
                Strategy::WarpPerRow => assert_eq!((d.grid.x, d.block.x), (2, 128)),
                Strategy::BlockPerRow => {
                    assert!(d.block.x * kernel.floats_per_thread() >= cols, "{kernel:?} {cols}");
                    assert_eq!(d.grid.x, 5);
                }
                Strategy::Online => assert_eq!(d.grid.x, 5),
            }
        }
    }
}

#[test]
fn bad_input_is_an_error_on_the_emulator() {
    let shape = MatrixShape::new(3, 40).unwrap();
    let input = vec![1.0f32; shape.len()];
    let mut short = vec![0.0f32; shape.len() - 1];
    let e = emu::softmax(&input, &mut short, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "output", expected: 120, actual: 119, .. }), "{e}");
    let mut out = vec![0.0f32; shape.len()];
    let e = emu::softmax(&input[1..], &mut out, shape).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { buffer: "input", .. }), "{e}");

    // Rows too long for a forced strategy or kernel.
    let long = MatrixShape::new(1, 1025).unwrap();
    let (input, mut out) = (vec![0.0f32; 1025], vec![0.0f32; 1025]);
    let e = emu::with_strategy(Strategy::WarpPerRow, &input, &mut out, long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { cols: 1025, .. }), "{e}");
    assert!(e.to_string().contains("at most 1024 columns"), "{e}");
    let e = emu::launch(Kernel::Warp4, &input, &mut out, long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    let longer = MatrixShape::new(1, 32769).unwrap();
    let e = softmax::kernel_for(Strategy::BlockPerRow, longer).unwrap_err();
    assert!(e.to_string().contains("at most 32768 columns"), "{e}");
}

/// A 1024-thread block needs at most 64 registers per thread (65536 per
/// SM): `softmax_block32` and `softmax_online` launch with 1024 threads, so
/// more would fail every launch at 32768 columns. ptxas -v says.
#[test]
fn kernels_launched_with_1024_threads_fit_the_register_file() {
    let Some(ptxas) = ptxas() else {
        eprintln!("skipping: no ptxas (run .ci/setup)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("coalesce-softmax-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.ptx"), coalesce::PTX).unwrap();
    let out = std::process::Command::new(ptxas)
        .args(["-v", &format!("-arch={}", coalesce::CUDA_ARCH), "-o"])
        .arg(dir.join("k.cubin"))
        .arg(dir.join("k.ptx"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stderr);
    let mut current = String::new();
    let mut seen = 0;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().unwrap().to_owned();
        }
        if let Some(n) = line.split("Used ").nth(1).and_then(|r| r.split(' ').next()?.parse::<u32>().ok())
            && current.starts_with("softmax_")
        {
            eprintln!("{current}: {n} registers");
            if current == "softmax_block32" || current == "softmax_online" {
                assert!(n <= 64, "{current} uses {n} registers: a 1024-thread block cannot launch");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, Kernel::ALL.len(), "ptxas did not report every softmax kernel:\n{log}");
}

fn ptxas() -> Option<std::path::PathBuf> {
    let mut candidates: Vec<std::path::PathBuf> = ["CUDA_PATH", "CUDA_LIBRARY_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|r| std::path::PathBuf::from(r).join("bin/ptxas"))
        .collect();
    candidates.push(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cuda/bin/ptxas"));
    candidates.push("/usr/local/cuda/bin/ptxas".into());
    candidates.into_iter().find(|c| c.is_file()).or_else(|| {
        let ok = std::process::Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
        ok.then(|| "ptxas".into())
    })
}

// ---------------------------------------------------------------- GPU ----

/// Every kernel that takes `shape`'s rows on the GPU over `input`, checked
/// as [`check_every_kernel`] does.
fn check_every_kernel_on_gpu(
    stream: &coalesce::Stream<'_>,
    shape: MatrixShape,
    input: &[f32],
    label: &str,
    each: impl FnMut(Kernel, &[f32], Stats),
) {
    let d_in = stream.gpu().upload(input).unwrap();
    let run = |kernel| run_poisoned(stream, shape.len(), |out| softmax::launch(stream, kernel, &d_in, out, shape));
    check_every_kernel(shape, input, label, run, each);
}

#[test]
fn every_kernel_on_the_gpu_at_odd_shapes_and_hard_cases() {
    let Some(gpu) = gpu_or_skip("gpu softmax") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax");
    let shapes = [(7, 1), (5, 3), (5, 33), (3, 128), (4, 130), (3, 1000), (2, 1023), (2, 4100), (3, 20001), (2, 32768)];
    for (rows, cols) in shapes {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        check_every_kernel_on_gpu(&stream, shape, &input, "", |_, _, _| {});
    }
    for cols in [1, 33, 1000, 4096, 32768, 50000] {
        let (input, names) = hard_rows(&mut rng, cols);
        let shape = MatrixShape::new(names.len(), cols).unwrap();
        check_every_kernel_on_gpu(&stream, shape, &input, " (hard cases)", |_, _, _| {});
    }
}

/// The misaligned (scalar) paths on the GPU.
#[test]
fn misaligned_buffers_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu softmax misaligned") else { return };
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax misaligned");
    for (rows, cols) in [(3, 128), (3, 1000), (2, 4096), (2, 32768), (2, 40000)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let storage = logits(&mut rng, shape.len() + 1);
        let d_storage = gpu.upload(&storage).unwrap();
        let run = |kernel| {
            let d_out = gpu.upload(&poison(shape.len() + 1)).unwrap();
            // Views one float in: 4 bytes past the allocation's alignment.
            let (d_in, mut d_out_view) = (d_storage.index(1..), d_out.index(1..));
            softmax::launch(&stream, kernel, &d_in, &mut d_out_view, shape).unwrap();
            stream.synchronize().unwrap();
            download(&d_out).split_off(1)
        };
        check_every_kernel(shape, &storage[1..], " (misaligned)", run, |_, _, _| {});
    }
}

/// The benchmark shapes, every kernel that takes them; prints one
/// `accuracy:` line per (kernel, shape) for docs/softmax.md.
#[test]
fn every_kernel_on_the_gpu_at_the_benchmark_shapes() {
    let Some(gpu) = gpu_or_skip("gpu softmax benchmark shapes") else { return };
    if under_sanitizer() {
        eprintln!("skipping the benchmark shapes under compute-sanitizer");
        return;
    }
    let stream = gpu.stream().unwrap();
    let mut rng = rng("gpu softmax benchmark shapes");
    for (rows, cols) in [(65536, 1024), (16384, 4096), (4096, 32768), (262144, 128), (32768, 1000), (1024, 50000)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let input = logits(&mut rng, shape.len());
        check_every_kernel_on_gpu(&stream, shape, &input, "", |kernel, _, st| {
            let auto = if kernel == Kernel::for_cols(cols as u32) { " (dispatch)" } else { "" };
            eprintln!(
                "accuracy: {} {rows}x{cols} max_ulp_near_max {:.2} max_row_sum_err {:.3e}{auto}",
                kernel.name(),
                st.ulp_near_max,
                st.row_sum
            );
        });
    }
}

#[test]
fn bad_input_is_an_error_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("gpu softmax bad input") else { return };
    let stream = gpu.stream().unwrap();
    let shape = MatrixShape::new(3, 40).unwrap();
    short_output_is_an_error(&gpu, shape, |input, short| softmax::softmax(&stream, input, short, shape));
    let long = MatrixShape::new(1, 2000).unwrap();
    let a = gpu.alloc::<f32>(long.len()).unwrap();
    let mut b = gpu.alloc::<f32>(long.len()).unwrap();
    let e = softmax::warp_per_row(&stream, &a, &mut b, long).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    stream.synchronize().unwrap();
}

/// For `ncu` (scripts run it with `--ignored`): one launch of each strategy
/// at the benchmark shapes, nothing else, so the profiler's replays stay
/// short. DRAM bytes per kernel show what each strategy reads: the online
/// kernel's second pass should come from L2.
#[test]
#[ignore = "a probe for ncu, run by the GPU script"]
fn gpu_ncu_probe() {
    let Some(gpu) = gpu_or_skip("gpu ncu probe") else { return };
    let stream = gpu.stream().unwrap();
    for (rows, cols) in [(65536, 1024), (16384, 4096), (4096, 32768), (1024, 50000)] {
        let shape = MatrixShape::new(rows, cols).unwrap();
        let host: Vec<f32> = (0..shape.len()).map(|i| (i % 1021) as f32 / 64.0 - 8.0).collect();
        let input = gpu.upload(&host).unwrap();
        let mut output = gpu.alloc::<f32>(shape.len()).unwrap();
        // Each strategy's pick, and the online kernel without its stash.
        let mut kernels: Vec<Kernel> = Strategy::ALL.iter().filter_map(|s| s.kernel(cols as u32)).collect();
        if !kernels.contains(&Kernel::Online) {
            kernels.push(Kernel::Online);
        }
        for kernel in kernels {
            eprintln!("ncu probe: {} on {shape}", kernel.name());
            softmax::launch(&stream, kernel, &input, &mut output, shape).unwrap();
        }
        stream.synchronize().unwrap();
    }
}
