//! The emulator's mbarriers and bulk tensor copies (TMA), and what its
//! checker makes of them.
//!
//! 1. Tensor maps: [`TmaMap`] encodes and decodes, and refuses what is not
//!    one; the 128-byte swizzle puts each element where the `wgmma`
//!    descriptors of the same layout read it.
//! 2. Kernels that synchronise through mbarriers run with no finding and
//!    the right output: a 2-stage producer/consumer pipeline over several
//!    phases (consumers read through views), copies at the tensor's edges
//!    (zeros outside, negative coordinates), and `wgmma`s on copied
//!    operands over two rounds of one stage.
//! 3. Kernels broken on purpose are caught: a read that no wait orders
//!    after the copy (a `sync_threads` is not enough, a skipped wait), a
//!    stage released before it is read (races, at the right lines); a wait
//!    that can never complete, and barriers that can never meet (errors,
//!    not hangs); a barrier never initialised, a map that is not one, a
//!    copy to a misaligned or too short destination, a view on a barrier's
//!    bytes.

use coalesce_kernels::emu::{
    self, Access, EmuCtx, EmuError, Finding, FindingKind, MbarrierProblem, Op, Report, SyncMutPtr, SyncPtr, TmaMap,
    TmaSwizzle, descriptor_address,
};
use coalesce_kernels::gemm::k_major_128b;
use coalesce_kernels::vector::F4;
use coalesce_kernels::{Dim3, LaunchDims, Space, TensorMap, ThreadCtx};

/// The line of this file that ends with the comment `marker` (once).
fn line_of(marker: &str) -> u32 {
    let src = include_str!("tma.rs");
    let quoted = format!("\"{marker}");
    let mut lines = src.lines().enumerate().filter(|(_, l)| l.ends_with(marker) && !l.contains(&quoted));
    let (i, _) = lines.next().unwrap_or_else(|| panic!("no line ends with {marker:?}"));
    assert!(lines.next().is_none(), "more than one line ends with {marker:?}");
    i as u32 + 1
}

fn dims(threads: u32, shared_bytes: u32) -> LaunchDims {
    LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(threads, 1), shared_bytes }
}

/// Floats in a 16-byte aligned buffer, as `cuMemAlloc` gives them (a
/// tensor map's base must be).
struct Floats(Vec<F4>, usize);

impl core::ops::Deref for Floats {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: the F4s are contiguous floats, at least `self.1` of them.
        unsafe { core::slice::from_raw_parts(self.0.as_ptr().cast(), self.1) }
    }
}

fn aligned(v: &[f32]) -> Floats {
    let mut buf = vec![F4::ZERO; v.len().div_ceil(4)];
    for (i, &x) in v.iter().enumerate() {
        buf[i / 4].0[i % 4] = x;
    }
    Floats(buf, v.len())
}

/// A `rows x cols` tensor of distinct floats (1-based, so that a zero
/// stands out), rows `stride` floats apart (the padding is NaN).
fn tensor(rows: usize, cols: usize, stride: usize) -> Floats {
    let mut t = vec![f32::NAN; rows * stride];
    for r in 0..rows {
        for c in 0..cols {
            t[r * stride + c] = (1 + r * cols + c) as f32;
        }
    }
    aligned(&t)
}

/// The map of `t` (as [`tensor`] made it), with a `box_cols x box_rows` box.
fn map_of(
    t: &[f32],
    (rows, cols, stride): (usize, usize, usize),
    (box_cols, box_rows): (u32, u32),
    swizzle: TmaSwizzle,
) -> TmaMap {
    TmaMap {
        base: t.as_ptr() as u64,
        cols: cols as u32,
        rows: rows as u32,
        row_stride: 4 * stride as u64,
        box_cols,
        box_rows,
        swizzle,
    }
}

/// The launch's report; the launch must not fail otherwise.
fn run<F: Fn(&EmuCtx<'_>) + Sync>(dims: LaunchDims, kernel: F) -> Report {
    emu::launch_checked(dims, kernel).unwrap_or_else(|e| panic!("{e}"))
}

// ---- 1. tensor maps ----------------------------------------------------------

#[test]
fn a_tensor_map_encodes_decodes_and_refuses_what_is_not_one() {
    let m = TmaMap {
        base: 0x7f00_0000_1000,
        cols: 40,
        rows: 48,
        row_stride: 160,
        box_cols: 32,
        box_rows: 8,
        swizzle: TmaSwizzle::B128,
    };
    let e = m.encode();
    assert_eq!(TmaMap::decode(&e), Some(m));
    assert_eq!(core::mem::align_of::<TensorMap>(), 64);
    // Any bit flipped, anywhere, is noticed.
    for word in 0..16 {
        for bit in [0, 17, 63] {
            let mut bad = e;
            bad.0[word] ^= 1 << bit;
            assert_eq!(TmaMap::decode(&bad), None, "word {word} bit {bit}");
        }
    }
    assert_eq!(TmaMap::decode(&TensorMap([0; 16])), None);
    // What cuTensorMapEncodeTiled would refuse encodes, and decodes to nothing.
    for (bad, why) in [
        (TmaMap { base: m.base + 4, ..m }, "16-byte"),
        (TmaMap { row_stride: 152, ..m }, "row stride"),
        (TmaMap { box_cols: 16, ..m }, "128-byte swizzle"),
        (TmaMap { box_cols: 6, swizzle: TmaSwizzle::None, ..m }, "multiple of 16 bytes"),
        (TmaMap { box_rows: 257, ..m }, "1..=256"),
        (TmaMap { rows: 0, ..m }, "no elements"),
    ] {
        assert_eq!(TmaMap::decode(&bad.encode()), None, "{bad:?}");
        let e = TmaMap::parse(&bad.encode()).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    assert_eq!((m.box_bytes(), m.dst_align()), (1024, 1024));
}

/// The 128-byte swizzle of a copy puts element `c` of box row `r` where a
/// K-major `wgmma` descriptor in the same swizzle, at the copy's
/// destination, reads float `c % 8` of row `r` in step `c / 8`.
#[test]
fn the_128_byte_swizzle_is_the_wgmma_descriptors() {
    let m = TmaMap {
        base: 0,
        cols: 32,
        rows: 256,
        row_stride: 128,
        box_cols: 32,
        box_rows: 256,
        swizzle: TmaSwizzle::B128,
    };
    for dst in [0u32, 1024, 8192, 40960] {
        for r in 0..256 {
            for c in 0..32 {
                let desc = k_major_128b(dst + 32 * (c / 8));
                let want = descriptor_address(desc, r as usize, 4 * (c % 8) as usize);
                assert_eq!(m.shared_address(dst, r, c), want, "dst {dst} row {r} col {c}");
            }
        }
    }
    // Without the swizzle, rows are packed.
    let plain = TmaMap { swizzle: TmaSwizzle::None, ..m };
    assert_eq!(plain.shared_address(1024, 3, 5), 1024 + 3 * 128 + 5 * 4);
}

// ---- 2. kernels that synchronise through mbarriers ----------------------------

/// Consumer threads of the pipeline (one warp); the thread after them produces.
const CONSUMERS: u32 = 32;
/// One stage: a box of 8 rows of 32 floats, 128-byte swizzled.
const STAGE_BYTES: u32 = 8 * 128;
/// The barriers, after the two stages: `full[s]` and `empty[s]`.
const FULL: u32 = 2 * STAGE_BYTES;
const EMPTY: u32 = FULL + 16;
const PIPELINE_SHARED: u32 = EMPTY + 16;

/// How a pipeline is broken, if at all.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pipeline {
    Correct,
    /// The consumers read the last tile without waiting for it.
    SkipLastWait,
    /// The consumers release each stage (arrive on `empty`) before reading it.
    ReleaseBeforeRead,
}

/// A 2-stage pipeline: the producer (thread `CONSUMERS`) copies tile `i`
/// (rows `8 i..8 i + 8`, columns `x0..x0 + 32` of the tensor) into stage
/// `i % 2` once the consumers have emptied it; each consumer waits for the
/// stage to fill, copies its column of the tile to the output through a
/// view, and arrives on `empty` (if a later tile needs the stage).
///
/// # Safety
/// `map` is a valid map of 32-column boxes of 8 rows, 128-byte swizzled,
/// `out` holds `tiles * 256` floats.
unsafe fn pipeline<C: ThreadCtx>(ctx: &C, map: *const TensorMap, out: *mut f32, tiles: u32, x0: i32, how: Pipeline) {
    let t = ctx.thread_idx().x;
    let stages = ctx.shared::<f32>(2 * STAGE_BYTES / 4);
    let out = ctx.global_mut(out, tiles * 256);
    let (full, empty) = (|s: u32| FULL + 8 * s, |s: u32| EMPTY + 8 * s);
    if t == 0 {
        for s in 0..2 {
            ctx.mbarrier_init(full(s), 1);
            ctx.mbarrier_init(empty(s), CONSUMERS);
        }
        ctx.mbarrier_init_fence();
    }
    ctx.sync_threads();
    if t == CONSUMERS {
        // SAFETY: a tensor map in global memory.
        unsafe { ctx.tensormap_acquire(map) };
        for i in 0..tiles {
            let (s, round) = (i % 2, i / 2);
            // Round 0 waits on the phase "before the init": at once.
            ctx.mbarrier_wait(empty(s), (round & 1) ^ 1);
            ctx.mbarrier_arrive_expect_tx(full(s), STAGE_BYTES);
            // SAFETY: the stage is the box's 1024 bytes, 1024-aligned.
            unsafe { ctx.tma_load_2d(s * STAGE_BYTES, map, (x0, 8 * i as i32), full(s)) }; // stage copy
        }
    } else if t < CONSUMERS {
        for i in 0..tiles {
            let (s, round) = (i % 2, i / 2);
            let last = i + 1 == tiles;
            if !(last && how == Pipeline::SkipLastWait) {
                ctx.mbarrier_wait(full(s), round & 1);
            }
            // The producer waits for the stage's release only if a later
            // tile uses it: an arrival nobody waits for would count
            // towards the next phase (and, from a consumer that skipped a
            // wait, let the producer overwrite a stage still being read).
            let release = i + 2 < tiles;
            if release && how == Pipeline::ReleaseBeforeRead {
                ctx.mbarrier_arrive(empty(s));
            }
            for r in 0..8 {
                // Float `t` of box row `r`, where the 128-byte swizzle put it.
                let at = (s * STAGE_BYTES + 128 * r + 16 * ((t / 4) ^ (r % 8)) + 4 * (t % 4)) / 4;
                // SAFETY: inside the two stages; the output holds the tiles.
                let v = unsafe { stages.load(at as usize) }; // stage read
                // SAFETY: as above.
                unsafe { out.store(((8 * i + r) * 32 + t) as usize, v) };
            }
            if release && how != Pipeline::ReleaseBeforeRead {
                ctx.mbarrier_arrive(empty(s));
            }
        }
    }
}

/// Runs the pipeline over `tiles` tiles of a 40-column tensor, from column 8.
fn run_pipeline(tiles: u32, how: Pipeline) -> (Report, Vec<f32>, Vec<f32>) {
    let (rows, cols, stride) = (8 * tiles as usize, 40, 40);
    let t = tensor(rows, cols, stride);
    let map = map_of(&t, (rows, cols, stride), (32, 8), TmaSwizzle::B128).encode();
    let mut out = vec![f32::NAN; tiles as usize * 256];
    let (m, o) = (SyncPtr::new(std::slice::from_ref(&map)), SyncMutPtr::new(&mut out));
    // SAFETY: the map describes `t`, alive throughout; `out` holds the tiles.
    // A second warp: the producer, and 31 threads with nothing to do, that
    // wait at the block's end meanwhile.
    let report =
        run(dims(2 * CONSUMERS, PIPELINE_SHARED), |ctx| unsafe { pipeline(ctx, m.get(), o.get(), tiles, 8, how) });
    let want = (0..tiles as usize * 256).map(|k| t[(k / 32) * stride + 8 + k % 32]).collect();
    (report, out, want)
}

#[test]
fn a_two_stage_pipeline_runs_clean_over_several_phases() {
    // 6 tiles: three rounds of each stage, so both parities of both
    // barriers are waited on, the first round of `empty` at once.
    let (report, out, want) = run_pipeline(6, Pipeline::Correct);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(out, want);
    // The consumers' view reads are counted as shared loads; the copies
    // and the barrier operations are not load/store-unit requests.
    let read = line_of("// stage read");
    let loads = report.counters.of(Op::SharedLoad).find(|s| s.site.line == read).expect("the stage reads");
    assert_eq!(loads.tally.requests, 6 * 8);
    assert_eq!(loads.tally.per_request(), 1.0, "the swizzle spreads a column over the banks");
    let copy = line_of("// stage copy");
    assert!(report.counters.sites.iter().all(|s| s.site.line != copy), "{:#?}", report.counters);
    assert!(report.counters.sites.iter().all(|s| s.op == Op::SharedLoad || s.op == Op::GlobalStore));
}

/// One thread copies five boxes of a 10 x 6 tensor (rows 12 floats apart)
/// on one barrier: inside, across the top-left corner (negative
/// coordinates), across the bottom-right one, wholly outside, and a
/// 128-byte swizzled box of a wider tensor hanging off its left and top;
/// then every thread waits and copies the boxes out.
///
/// # Safety
/// `maps` holds the two maps, `out` 4 * 32 + 256 floats.
unsafe fn edges<C: ThreadCtx>(ctx: &C, maps: *const TensorMap, out: *mut f32, at: [(i32, i32); 4], wide: (i32, i32)) {
    const BAR: u32 = 2048;
    let t = ctx.thread_idx().x as usize;
    let boxes = ctx.shared::<f32>(2048usize / 4);
    let out = ctx.global_mut(out, 4 * 32 + 256usize);
    if t == 0 {
        ctx.mbarrier_init(BAR, 1);
    }
    ctx.sync_threads();
    if t == 0 {
        ctx.mbarrier_arrive_expect_tx(BAR, 4 * 128 + 1024);
        for (j, &xy) in at.iter().enumerate() {
            // SAFETY: boxes of 8 x 4 floats, 128 bytes each, 128-aligned.
            unsafe { ctx.tma_load_2d(128 * j as u32, maps, xy, BAR) };
        }
        // SAFETY: a 32 x 8 box, 1024 bytes at 1024.
        unsafe { ctx.tma_load_2d(1024, maps.wrapping_add(1), wide, BAR) };
    }
    ctx.mbarrier_wait(BAR, 0);
    // The wide box is copied out in its swizzled order, as the shared memory holds it.
    for k in (t..4 * 32 + 256).step_by(32) {
        // SAFETY: inside the 512 floats of the boxes and the 384 of the output.
        unsafe { out.store(k, boxes.load(if k < 128 { k } else { 256 + k - 128 })) };
    }
}

#[test]
fn copies_at_the_edges_fill_zeros_outside_the_tensor() {
    let (rows, cols, stride) = (6usize, 10usize, 12usize);
    let small = tensor(rows, cols, stride);
    let (wrows, wcols) = (20usize, 40usize);
    let wide = tensor(wrows, wcols, wcols);
    let maps = [
        map_of(&small, (rows, cols, stride), (8, 4), TmaSwizzle::None).encode(),
        map_of(&wide, (wrows, wcols, wcols), (32, 8), TmaSwizzle::B128).encode(),
    ];
    let at = [(1, 1), (-3, -2), (6, 4), (-8, 0)];
    let wide_at = (-5, -3);
    let mut out = vec![f32::NAN; 4 * 32 + 256];
    let (m, o) = (SyncPtr::new(&maps), SyncMutPtr::new(&mut out));
    // SAFETY: the maps describe live tensors; `out` is large enough.
    let report = run(dims(32, 2048 + 8), |ctx| unsafe { edges(ctx, m.get(), o.get(), at, wide_at) });
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let element = |t: &[f32], (rows, cols, stride): (usize, usize, usize), x: i64, y: i64| {
        let inside = (0..cols as i64).contains(&x) && (0..rows as i64).contains(&y);
        if inside { t[y as usize * stride + x as usize] } else { 0.0 }
    };
    for (j, &(x, y)) in at.iter().enumerate() {
        for r in 0..4 {
            for c in 0..8 {
                let want = element(&small, (rows, cols, stride), (x + c) as i64, (y + r) as i64);
                let got = out[32 * j + 8 * r as usize + c as usize];
                assert_eq!(got.to_bits(), want.to_bits(), "box at ({x}, {y}), row {r}, column {c}");
            }
        }
    }
    assert!(out[96..128].iter().all(|&v| v == 0.0), "the box wholly outside is zeros");
    let wmap = TmaMap::decode(&maps[1]).unwrap();
    for r in 0..8 {
        for c in 0..32 {
            let want = element(&wide, (wrows, wcols, wcols), (wide_at.0 + c) as i64, (wide_at.1 + r) as i64);
            let got = out[128 + (wmap.shared_address(1024, r as u32, c as u32) - 1024) / 4];
            assert_eq!(got.to_bits(), want.to_bits(), "swizzled box, row {r}, column {c}");
        }
    }
}

/// One warpgroup multiplies a 64 x 64 `A` by a 256 x 64 `B` (`D = A B^T`),
/// both K-major in global memory: thread 0 copies their 32-deep slices
/// into one stage (128-byte swizzle) per round, on `FULL`; everyone waits,
/// runs the four `wgmma` k-steps of the slice, and arrives on `EMPTY`,
/// which thread 0 waits on before the next round overwrites the stage.
///
/// # Safety
/// `maps` holds `A`'s map (32 x 64 boxes) and `B`'s (32 x 256), `out`
/// 128 * 128 floats.
unsafe fn tma_wgmma<C: ThreadCtx>(ctx: &C, maps: *const TensorMap, out: *mut f32, rounds: u32) {
    const A_BYTES: u32 = 64 * 128;
    const B_BYTES: u32 = 256 * 128;
    const FULL: u32 = A_BYTES + B_BYTES;
    const EMPTY: u32 = FULL + 8;
    let t = ctx.thread_idx().x as usize;
    let out = ctx.global_mut(out, 128usize * 128);
    if t == 0 {
        ctx.mbarrier_init(FULL, 1);
        ctx.mbarrier_init(EMPTY, 128);
        ctx.mbarrier_init_fence();
    }
    ctx.sync_threads();
    let mut d = [0.0f32; 128];
    for round in 0..rounds {
        if t == 0 {
            ctx.mbarrier_wait(EMPTY, (round & 1) ^ 1);
            ctx.mbarrier_arrive_expect_tx(FULL, A_BYTES + B_BYTES);
            let x = 32 * round as i32;
            // SAFETY: both boxes fit the stage, 1024-aligned.
            unsafe { ctx.tma_load_2d(0, maps, (x, 0), FULL) };
            // SAFETY: as above.
            unsafe { ctx.tma_load_2d(A_BYTES, maps.wrapping_add(1), (x, 0), FULL) };
        }
        ctx.mbarrier_wait(FULL, round & 1);
        ctx.wgmma_fence();
        for step in 0..4 {
            let (a, b) = (k_major_128b(32 * step), k_major_128b(A_BYTES + 32 * step));
            // SAFETY: the descriptors address the copied tiles.
            unsafe { ctx.wgmma_m64n256k8_tf32(&mut d, a, b) };
        }
        ctx.wgmma_commit();
        ctx.wgmma_wait::<0>(&mut d);
        ctx.mbarrier_arrive(EMPTY);
    }
    for (i, v) in d.iter().enumerate() {
        // SAFETY: 128 threads x 128 values.
        unsafe { out.store(t * 128 + i, *v) };
    }
}

#[test]
fn wgmma_reads_copied_operands_over_two_rounds_of_one_stage() {
    let k = 64usize;
    // Small integers: every product and sum is exact in TF32 and f32.
    let a: Vec<f32> = (0..64 * k).map(|i| ((i * 7 + i / k) % 4) as f32).collect();
    let b: Vec<f32> = (0..256 * k).map(|i| ((i * 5 + 3 * (i / k)) % 3) as f32).collect();
    let (a, b) = (aligned(&a), aligned(&b));
    let maps = [
        map_of(&a, (64, k, k), (32, 64), TmaSwizzle::B128).encode(),
        map_of(&b, (256, k, k), (32, 256), TmaSwizzle::B128).encode(),
    ];
    let mut out = vec![f32::NAN; 128 * 128];
    let (m, o) = (SyncPtr::new(&maps), SyncMutPtr::new(&mut out));
    let shared = (64 + 256) * 128 + 16;
    // SAFETY: the maps describe `a` and `b`; `out` holds 128 * 128 floats.
    let report = run(dims(128, shared), |ctx| unsafe { tma_wgmma(ctx, m.get(), o.get(), 2) });
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    for t in 0..128 {
        let (w, l) = (t / 32, t % 32);
        for i in 0..128 {
            let row = 16 * w + l / 4 + 8 * ((i / 2) % 2);
            let col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
            let want: f32 = (0..k).map(|j| a[row * k + j] * b[col * k + j]).sum();
            assert_eq!(out[t * 128 + i], want, "D[{row}][{col}]");
        }
    }
}

// ---- 3. kernels broken on purpose ---------------------------------------------

/// Every finding of `report` is a race between the line `read` (reading)
/// and the line `copy` (the copy writing), whichever came first; there is
/// at least one. Prints the first.
fn only_copy_read_races(report: &Report, copy: u32, read: u32) {
    assert!(!report.findings.is_empty(), "no finding");
    for f in &report.findings {
        let FindingKind::SharedRace { access, other_access, other_site, .. } = &f.kind else { panic!("{f}") };
        let pair = [(f.site.line, *access), (other_site.line, *other_access)];
        assert!(pair.contains(&(copy, Access::Copy)) && pair.contains(&(read, Access::Read)), "{f}");
    }
    println!("{}", report.findings[0]);
}

#[test]
fn a_read_that_no_wait_orders_after_the_copy_races_with_it() {
    // The last tile is read without waiting: before the copy lands (the
    // copy's write then races with the reads, which nothing released to
    // the producer), or after it (the reads race with the copy, whose
    // phase the consumers did not acquire). The data may be wrong too.
    let (report, _, _) = run_pipeline(3, Pipeline::SkipLastWait);
    only_copy_read_races(&report, line_of("// stage copy"), line_of("// stage read"));
    // Released before it is read: the next copy into the stage follows the
    // release, and nothing orders it after the reads.
    let (report, _, _) = run_pipeline(4, Pipeline::ReleaseBeforeRead);
    only_copy_read_races(&report, line_of("// stage copy"), line_of("// stage read"));
}

/// Who waits for a copy before the threads read it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Waits {
    /// Every thread, after the `sync_threads`.
    All,
    /// Thread 0 only, before the `sync_threads`: the others learn of the
    /// phase through the barrier.
    OneBeforeTheBarrier,
    /// Nobody: the `sync_threads` alone.
    Nobody,
}

/// Thread 0 copies a box; everyone meets at a `sync_threads`, then reads
/// it (waiting as `waits` says).
///
/// # Safety
/// `map` is a valid map of 32 x 8 boxes.
unsafe fn copy_then_sync<C: ThreadCtx>(ctx: &C, map: *const TensorMap, out: *mut f32, waits: Waits) {
    const BAR: u32 = 1024;
    let t = ctx.thread_idx().x as usize;
    let tile = ctx.shared::<f32>(256usize);
    let out = ctx.global_mut(out, 256usize);
    if t == 0 {
        ctx.mbarrier_init(BAR, 1);
    }
    ctx.sync_threads();
    if t == 0 {
        ctx.mbarrier_arrive_expect_tx(BAR, 1024);
        // SAFETY: 1024 bytes at 0.
        unsafe { ctx.tma_load_2d(0, map, (0, 0), BAR) }; // box copy
        if waits == Waits::OneBeforeTheBarrier {
            ctx.mbarrier_wait(BAR, 0);
        }
    }
    ctx.sync_threads();
    if waits == Waits::All {
        ctx.mbarrier_wait(BAR, 0);
    }
    for k in (t..256).step_by(32) {
        // SAFETY: inside the tile and the output.
        unsafe { out.store(k, tile.load(k)) }; // box read
    }
}

#[test]
fn a_sync_threads_does_not_wait_for_a_copy() {
    let t = tensor(8, 32, 32);
    let map = map_of(&t, (8, 32, 32), (32, 8), TmaSwizzle::None).encode();
    let mut out = vec![f32::NAN; 256];
    let (m, o) = (SyncPtr::new(std::slice::from_ref(&map)), SyncMutPtr::new(&mut out));
    for waits in [Waits::All, Waits::OneBeforeTheBarrier, Waits::Nobody] {
        // SAFETY: the map describes `t`; `out` holds 256 floats.
        let report = run(dims(32, 1024 + 8), |ctx| unsafe { copy_then_sync(ctx, m.get(), o.get(), waits) });
        if waits != Waits::Nobody {
            assert!(report.findings.is_empty(), "{waits:?}: {:#?}", report.findings);
            assert_eq!(out, &t[..], "{waits:?}");
            continue;
        }
        // The copy landed before the barrier here, but the GPU's barrier
        // does not wait for it: every read races with it, thread 0's too.
        assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
        let f = &report.findings[0];
        let FindingKind::SharedRace { access, other_access, other_thread, other_site, .. } = &f.kind else {
            panic!("{f}")
        };
        assert_eq!((f.site.line, *access), (line_of("// box read"), Access::Read), "{f}");
        let other = (other_site.line, *other_access, *other_thread);
        assert_eq!(other, (line_of("// box copy"), Access::Copy, Some(Dim3::new(0, 0, 0))), "{f}");
        assert_eq!(f.count, 256, "{f}");
        println!("{f}");
    }
}

#[test]
fn a_wait_that_can_never_complete_is_an_error_not_a_hang() {
    // The producer announces 2048 bytes and copies a box of 1024: the
    // consumers wait for a phase that never completes, and the producer
    // finishes the block.
    let t = tensor(8, 32, 32);
    let map = map_of(&t, (8, 32, 32), (32, 8), TmaSwizzle::None).encode();
    let m = SyncPtr::new(std::slice::from_ref(&map));
    let e = emu::launch(dims(64, 1024 + 8), |ctx| {
        let t = ctx.thread_idx().x;
        if t == 0 {
            ctx.mbarrier_init(1024, 1);
        }
        ctx.sync_threads();
        if t == 0 {
            ctx.mbarrier_arrive_expect_tx(1024, 2048);
            // SAFETY: the map describes `t`; 1024 bytes at 0.
            unsafe { ctx.tma_load_2d(0, m.get(), (0, 0), 1024) };
        } else {
            ctx.mbarrier_wait(1024, 0);
        }
    })
    .unwrap_err();
    let EmuError::MbarrierDeadlock { block, bar, parity, thread } = e else { panic!("{e}") };
    assert_eq!((block, bar, parity), (Dim3::new(0, 0, 0), 1024, 0), "{e}");
    assert!((1..64).contains(&thread.x), "{e}");
    println!("{e}");

    // Two arrivals expected, one made, in the second block of the launch,
    // with everyone waiting: the waiter that blocks last reports it.
    let d = LaunchDims { grid: Dim3::xy(2, 1), ..dims(32, 8) };
    let e = emu::launch(d, |ctx| {
        let t = ctx.thread_idx().x;
        if t == 0 {
            ctx.mbarrier_init(0, 2 + ctx.block_idx().x);
        }
        ctx.sync_threads();
        if t == 0 {
            ctx.mbarrier_arrive(0);
            ctx.mbarrier_arrive(0);
        }
        ctx.mbarrier_wait(0, 0);
    })
    .unwrap_err();
    assert!(matches!(e, EmuError::MbarrierDeadlock { block: Dim3 { x: 1, .. }, bar: 0, parity: 0, .. }), "{e}");
    println!("{e}");
}

#[test]
fn barriers_that_can_never_meet_are_an_error_not_a_hang() {
    // Lane 0 waits at sync_threads, the others at a shuffle: neither
    // barrier can complete (this hung before the emulator counted the
    // threads blocked).
    let e = emu::launch(dims(32, 0), |ctx| {
        if ctx.thread_idx().x == 0 {
            ctx.sync_threads();
        } else {
            ctx.shfl_xor_f32(1.0, 1);
        }
    })
    .unwrap_err();
    assert_eq!(e, EmuError::DivergentBarrier { block: Dim3::new(0, 0, 0) });
}

#[test]
fn a_barrier_never_initialised_is_an_error() {
    let e = emu::launch(dims(4, 64), |ctx| ctx.mbarrier_wait(8, 0)).unwrap_err();
    let EmuError::Mbarrier { bar: 8, problem: MbarrierProblem::Uninitialised, .. } = e else { panic!("{e}") };
    println!("{e}");
    // Initialised by thread 0 and arrived on by thread 1 with nothing to
    // order the two: whichever runs first, it is an error.
    let e = emu::launch(dims(2, 64), |ctx| {
        if ctx.thread_idx().x == 0 {
            ctx.mbarrier_init(0, 1);
        } else {
            std::thread::yield_now();
            ctx.mbarrier_arrive(0);
        }
    })
    .unwrap_err();
    let EmuError::Mbarrier { problem, .. } = e else { panic!("{e}") };
    assert!(matches!(problem, MbarrierProblem::Uninitialised | MbarrierProblem::InitNotOrdered), "{e}");
    println!("{e}");
    // Misaligned, and past the shared memory.
    for (bar, want) in [(4, MbarrierProblem::Misaligned), (64, MbarrierProblem::PastSharedMemory { shared_bytes: 64 })]
    {
        let e = emu::launch(dims(1, 64), |ctx| ctx.mbarrier_init(bar, 1)).unwrap_err();
        assert!(matches!(e, EmuError::Mbarrier { problem, .. } if problem == want), "{e}");
    }
    // One arrival too many on a phase still waiting for bytes.
    let e = emu::launch(dims(1, 64), |ctx| {
        ctx.mbarrier_init(0, 1);
        ctx.mbarrier_arrive_expect_tx(0, 16);
        ctx.mbarrier_arrive(0);
    })
    .unwrap_err();
    assert!(matches!(e, EmuError::Mbarrier { problem: MbarrierProblem::TooManyArrivals, .. }), "{e}");
}

#[test]
fn a_map_that_is_not_one_is_an_error() {
    let t = tensor(8, 32, 32);
    let mut map = map_of(&t, (8, 32, 32), (32, 8), TmaSwizzle::None).encode();
    map.0[2] += 1; // one more column, behind the check word's back
    let m = SyncPtr::new(std::slice::from_ref(&map));
    let e = emu::launch(dims(1, 1024 + 8), |ctx| {
        ctx.mbarrier_init(1024, 1);
        // SAFETY: none: the emulator refuses the map.
        unsafe { ctx.tma_load_2d(0, m.get(), (0, 0), 1024) };
    })
    .unwrap_err();
    assert!(matches!(e, EmuError::InvalidTensorMap { problem, .. } if problem.contains("check word")), "{e}");
    println!("{e}");
}

#[test]
fn copies_to_a_misaligned_or_too_short_destination_are_found() {
    let t = tensor(8, 32, 32);
    let maps = [
        map_of(&t, (8, 32, 32), (32, 8), TmaSwizzle::B128).encode(),
        map_of(&t, (8, 32, 32), (32, 8), TmaSwizzle::None).encode(),
    ];
    let m = SyncPtr::new(&maps);
    // A 1024-byte box, swizzled at 512 and unswizzled at 1152 (aligned,
    // but its end is past the 2048 + 8 bytes of the launch).
    let report = run(dims(1, 2048 + 8), |ctx| {
        ctx.mbarrier_init(2048, 1);
        ctx.mbarrier_arrive_expect_tx(2048, 2048);
        // SAFETY: none: the emulator refuses both copies.
        unsafe { ctx.tma_load_2d(512, m.get(), (0, 0), 2048) }; // misaligned copy
        // SAFETY: as above.
        unsafe { ctx.tma_load_2d(1152, m.get().wrapping_add(1), (0, 0), 2048) }; // long copy
        // Their bytes still count: the phase completes.
        ctx.mbarrier_wait(2048, 0);
    });
    assert_eq!(report.findings.len(), 2, "{:#?}", report.findings);
    let at = |marker: &str| report.findings.iter().find(|f| f.site.line == line_of(marker)).unwrap();
    let (space, access) = (Space::Shared, Access::Copy);
    let f = at("// misaligned copy");
    assert_eq!(f.kind, FindingKind::Misaligned { space, access, address: 512, align: 1024 }, "{f}");
    println!("{f}");
    let f = at("// long copy");
    assert_eq!(f.kind, FindingKind::PastSharedMemory { access, byte: 1152, bytes: 1024, shared_bytes: 2056 }, "{f}");
    println!("{f}");
}

#[test]
fn a_view_on_a_barriers_bytes_is_found() {
    let mut out = [0u32; 1];
    let o = SyncMutPtr::new(&mut out);
    let report = run(dims(1, 64), |ctx| {
        let words = ctx.shared::<u32>(16usize);
        // SAFETY: word 0 is inside the shared memory.
        unsafe { words.store(2, 7) };
        ctx.mbarrier_init(8, 1);
        // SAFETY: words 2 and 3 hold the barrier now; the output holds 1.
        let v = unsafe { words.load(3) }; // barrier read
        // SAFETY: the output holds one u32.
        unsafe { *o.get() = v };
    });
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f: &Finding = &report.findings[0];
    assert_eq!(
        (f.kind.clone(), f.site.line),
        (FindingKind::MbarrierBytes { byte: 12, access: Access::Read }, line_of("// barrier read"))
    );
    println!("{f}");
}
