//! Kernels that synchronise through mbarriers run with no finding and the
//! right output: a 2-stage producer/consumer pipeline over several phases
//! (it can also be broken on purpose, for `findings.rs`), copies at the
//! tensor's edges, and `wgmma`s on copied operands over two rounds of one
//! stage.

use crate::{aligned, dims, line_of, map_of, run, tensor};
use coalesce_kernels::emu::{Op, Report, SyncMutPtr, SyncPtr, TmaMap, TmaSwizzle};
use coalesce_kernels::gemm::k_major_128b;
use coalesce_kernels::{TensorMap, ThreadCtx};

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
pub enum Pipeline {
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
pub fn run_pipeline(tiles: u32, how: Pipeline) -> (Report, Vec<f32>, Vec<f32>) {
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
