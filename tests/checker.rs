//! The emulator's checker and memory counters (`coalesce_kernels::emu::memory`).
//!
//! 1. Every transpose step and the copy kernel run under the checker at odd
//!    shapes with no finding, and their outputs are exact.
//! 2. The counters of the transpose ladder and the copy are the model's:
//!    sectors per global request, wavefronts per shared request.
//! 3. Kernels broken on purpose (here, not in the library) are caught, each
//!    with the right finding at the right line: a missing barrier (a race),
//!    an off-by-one edge (out of bounds), a read of unwritten shared memory,
//!    a misaligned vector, a shared view past the launch's shared memory,
//!    a `wgmma` that reads its operands before the barrier after their
//!    stores (a race) or reads a row nobody stored (unwritten);
//!    and the counters show a 32-way bank conflict and the phases of 8- and
//!    16-byte shared accesses.

mod common;

use coalesce::kernels::emu::{self as kemu, EmuCtx, SyncMutPtr, SyncPtr};
use coalesce::kernels::vector::F4;
use coalesce::kernels::{Dim3, LaunchDims, ThreadCtx};
use coalesce::transpose::Variant;
use coalesce::{Error, MatrixShape, emu};
use common::*;
use emu::{Access, EmuError, Finding, FindingKind, Op, Report};

/// The line of this file that ends with the comment `marker` (once), as
/// `Site::line` gives it.
fn line_of(marker: &str) -> u32 {
    let src = include_str!("checker.rs");
    let quoted = format!("\"{marker}");
    let mut lines = src.lines().enumerate().filter(|(_, l)| l.ends_with(marker) && !l.contains(&quoted));
    let (i, _) = lines.next().unwrap_or_else(|| panic!("no line ends with {marker:?}"));
    assert!(lines.next().is_none(), "more than one line ends with {marker:?}");
    i as u32 + 1
}

fn here(f: &Finding) -> bool {
    f.site.file.ends_with("checker.rs")
}

/// Runs `kernel` on one input and one output buffer under the counters.
fn run<K>(dims: LaunchDims, input: &[f32], output: &mut [f32], kernel: K) -> Report
where
    K: Fn(&EmuCtx<'_>, *const f32, *mut f32) + Sync,
{
    let (i, o) = (SyncPtr::new(input), SyncMutPtr::new(output));
    kemu::launch_checked(dims, |ctx| kernel(ctx, i.get(), o.get())).unwrap()
}

// ---- 1. no findings at odd shapes ----------------------------------------

#[test]
fn every_transpose_step_and_the_copy_pass_the_checker_at_odd_shapes() {
    let mut rng = rng("checked transposes");
    for (shape, input) in random_matrices(&mut rng, &[(1, 1), (33, 65), (67, 131), (132, 200)]) {
        let want = transpose_reference(&input, shape.rows(), shape.cols());
        for variant in Variant::ALL {
            let mut output = poison(shape.len());
            let report = coalesce::transpose::emu::launch_checked(variant, &input, &mut output, shape).unwrap();
            assert!(report.findings.is_empty(), "{} at {shape}: {:#?}", variant.name(), report.findings);
            check_exact(&format!("{} of {shape}", variant.name()), shape.t(), &output, &want);
        }
    }
    for len in [1, 3, 4, 1000, 4097] {
        let src = random_matrix(&mut rng, len);
        let mut dst = poison(len);
        let report = coalesce::copy::emu::launch_checked(&src, &mut dst).unwrap();
        assert!(report.findings.is_empty(), "copy of {len}: {:#?}", report.findings);
        assert!(src.iter().zip(&dst).all(|(a, b)| a.to_bits() == b.to_bits()), "copy of {len}");
    }
}

// ---- 2. the counters of the ladder ---------------------------------------

/// (kernel, global ld sectors/request, global st sectors/request, shared st
/// wavefronts/request, shared ld wavefronts/request, bytes per global access)
/// on interior tiles: what the docs say each step does.
const MODEL: [(Variant, f64, f64, f64, f64, u32); 7] = [
    (Variant::Naive, 4.0, 32.0, 0.0, 0.0, 4),
    (Variant::NaiveCols, 32.0, 4.0, 0.0, 0.0, 4),
    (Variant::Tiled, 4.0, 4.0, 1.0, 32.0, 4),
    (Variant::Padded, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Swizzled, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Wide, 4.0, 4.0, 1.0, 1.0, 4),
    (Variant::Vec4, 16.0, 16.0, 2.0, 2.0, 16),
];

#[test]
fn the_transpose_ladder_counts_what_the_model_says() {
    let shape = MatrixShape::new(128, 128).unwrap();
    let input: Vec<f32> = (0..shape.len()).map(|i| i as f32).collect();
    for (variant, ld, st, sh_st, sh_ld, width) in MODEL {
        let mut output = poison(shape.len());
        let report = coalesce::transpose::emu::launch_checked(variant, &input, &mut output, shape).unwrap();
        let c = &report.counters;
        let name = variant.name();
        for (op, want) in
            [(Op::GlobalLoad, ld), (Op::GlobalStore, st), (Op::SharedStore, sh_st), (Op::SharedLoad, sh_ld)]
        {
            assert_eq!(c.total(op).per_request(), want, "{name}: {} per {} request", op.unit(), op.name());
        }
        // Every element read and written once, in requests of whole warps.
        let bytes = 4 * shape.len() as u64;
        for op in [Op::GlobalLoad, Op::GlobalStore] {
            let t = c.total(op);
            assert_eq!(t.bytes, bytes, "{name}: {} bytes", op.name());
            assert_eq!(t.requests, bytes / (32 * width as u64), "{name}: {} requests", op.name());
            assert!(c.of(op).all(|s| s.width == width), "{name}: {} width", op.name());
        }
        if sh_ld > 0.0 {
            assert_eq!(c.total(Op::SharedLoad).bytes, bytes, "{name}: shared bytes");
        }
    }
}

#[test]
fn the_copy_moves_16_bytes_a_lane_in_16_sectors_a_request() {
    let src: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    let mut dst = poison(src.len());
    let c = coalesce::copy::emu::launch_checked(&src, &mut dst).unwrap().counters;
    for op in [Op::GlobalLoad, Op::GlobalStore] {
        let t = c.total(op);
        assert_eq!((t.per_request(), t.requests, t.bytes), (16.0, 4096 / 128, 4 * 4096), "{}", op.name());
        assert_eq!(t.efficiency(), 1.0);
        assert!(c.of(op).all(|s| s.width == 16));
    }
}

// ---- 3. kernels broken on purpose ----------------------------------------

/// Step 3 (32x32 tile, 32x8 threads, `n` a multiple of 32) with its barrier
/// left out.
unsafe fn tiled_without_barrier<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, n: u32) {
    let tile = ctx.shared::<f32>(32 * 32usize);
    let (input, output) = (ctx.global(input, (n, n)), ctx.global_mut(output, (n, n)));
    let (t, b, n) = (ctx.thread_idx(), ctx.block_idx(), n as usize);
    let (tx, ty, row0, col0) = (t.x as usize, t.y as usize, b.y as usize * 32, b.x as usize * 32);
    for j in (ty..32).step_by(8) {
        // SAFETY: inside the n x n matrix and the tile.
        unsafe { tile.store(j * 32 + tx, input.load((row0 + j) * n + col0 + tx)) }; // tile write
    }
    // ctx.sync_threads() belongs here.
    for j in (ty..32).step_by(8) {
        // SAFETY: as above.
        unsafe { output.store((col0 + j) * n + row0 + tx, tile.load(tx * 32 + j)) }; // tile read
    }
}

#[test]
fn a_missing_barrier_is_a_race() {
    let n = 64;
    let input: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let mut output = poison(n * n);
    let dims = LaunchDims { grid: Dim3::xy(2, 2), block: Dim3::xy(32, 8), shared_bytes: 32 * 32 * 4 };
    // SAFETY: both buffers hold n * n floats.
    let report = run(dims, &input, &mut output, |ctx, i, o| unsafe { tiled_without_barrier(ctx, i, o, n as u32) });
    let (write, read) = (line_of("// tile write"), line_of("// tile read"));
    let races: Vec<&Finding> =
        report.findings.iter().filter(|f| matches!(f.kind, FindingKind::SharedRace { .. })).collect();
    assert!(!races.is_empty(), "no race found: {:#?}", report.findings);
    for f in &races {
        let FindingKind::SharedRace { other_site, access, other_access, .. } = &f.kind else { unreachable!() };
        let pair = [(f.site.line, *access), (other_site.line, *other_access)];
        assert!(here(f) && pair.contains(&(write, Access::Write)) && pair.contains(&(read, Access::Read)), "{f}");
    }
    assert!(races.iter().map(|f| f.count).sum::<u64>() > 0);
    println!("{}", races[0]);
    // The plain launch refuses it, and the host reports it as an error.
    let (i, o) = (SyncPtr::new(&input), SyncMutPtr::new(&mut output));
    // SAFETY: as above.
    let e = kemu::launch(dims, |ctx| unsafe { tiled_without_barrier(ctx, i.get(), o.get(), n as u32) }).unwrap_err();
    let EmuError::Checker(findings) = &e else { panic!("{e}") };
    assert!(findings.iter().any(|f| matches!(f.kind, FindingKind::SharedRace { .. })));
    let e = Error::from(e);
    assert!(e.to_string().contains("no barrier between: a race"), "{e}");
}

/// Step 1 with an off-by-one edge check (`<=`).
unsafe fn naive_off_by_one<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, rows: u32, cols: u32) {
    let (input, output) = (ctx.global(input, (rows, cols)), ctx.global_mut(output, (rows, cols)));
    let (t, b) = (ctx.thread_idx(), ctx.block_idx());
    let col = (b.x * 32 + t.x) as usize;
    for k in 0..4 {
        let row = (b.y * 32 + t.y + k * 8) as usize;
        if row <= rows as usize && col < cols as usize {
            // SAFETY: none: row may be rows.
            let v = unsafe { input.load(row * cols as usize + col) }; // edge read
            // SAFETY: none.
            unsafe { output.store(col * rows as usize + row, v) }; // edge write
        }
    }
}

#[test]
fn an_off_by_one_edge_is_out_of_bounds() {
    let (rows, cols) = (33u32, 65u32);
    let len = (rows * cols) as usize;
    let input: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let mut output = poison(len);
    let dims = Variant::Naive.launch_dims(rows, cols);
    // SAFETY: none: the kernel reads past the input, which the emulator refuses.
    let report = run(dims, &input, &mut output, |ctx, i, o| unsafe { naive_off_by_one(ctx, i, o, rows, cols) });
    let read = report
        .findings
        .iter()
        .find(|f| f.site.line == line_of("// edge read"))
        .unwrap_or_else(|| panic!("no finding at the read: {:#?}", report.findings));
    let FindingKind::OutOfBounds { space, access, index, elements, len: view } = read.kind else { panic!("{read}") };
    assert_eq!((space, access, elements, view), (coalesce::kernels::Space::Global, Access::Read, 1, len));
    // The first thread past the edge reads row 33: block y 1, thread y 1.
    assert_eq!((read.block.y, read.thread.y), (1, 1), "{read}");
    assert_eq!(index, 33 * cols as usize + (read.block.x * 32 + read.thread.x) as usize, "{read}");
    // One thread per column reads row 33: 65 in all.
    assert_eq!(read.count, cols as u64, "{read}");
    // Out-of-bounds writes land where the last column's would be.
    let write = report.findings.iter().find(|f| f.site.line == line_of("// edge write")).expect("the write");
    assert!(matches!(write.kind, FindingKind::OutOfBounds { access: Access::Write, .. }) && write.count == 1);
    assert!(read.to_string().contains("out of bounds"), "{read}");
    assert_eq!(report.findings.len(), 2, "{:#?}", report.findings);
    println!("{read}\n{write}");
}

/// Writes 32 floats of shared memory, then each thread reads its right
/// neighbour's: lane 31 reads a word nobody wrote.
unsafe fn reads_past_what_it_wrote<C: ThreadCtx>(ctx: &C, _: *const f32, output: *mut f32) {
    let tile = ctx.shared::<f32>(64usize);
    let output = ctx.global_mut(output, 32usize);
    let tx = ctx.thread_idx().x as usize;
    // SAFETY: tx < 32 < 64.
    unsafe { tile.store(tx, tx as f32) };
    ctx.sync_threads();
    // SAFETY: tx + 1 <= 32 < 64, and tx < 32.
    unsafe { output.store(tx, tile.load(tx + 1)) }; // neighbour read
}

#[test]
fn a_read_of_unwritten_shared_memory_is_found() {
    let mut output = poison(32);
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 64 * 4 };
    // SAFETY: the output holds 32 floats.
    let report = run(dims, &[], &mut output, |ctx, i, o| unsafe { reads_past_what_it_wrote(ctx, i, o) });
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    assert_eq!(f.kind, FindingKind::UnwrittenShared { byte: 128 }, "{f}");
    assert_eq!((f.site.line, f.thread, f.count), (line_of("// neighbour read"), Dim3::new(31, 0, 0), 1), "{f}");
    println!("{f}");
}

/// Each thread fills its own 32-float row of a tile, so a warp's store hits
/// one bank 32 times; then reads a column the conflict-free way.
unsafe fn rows_per_thread<C: ThreadCtx>(ctx: &C, _: *const f32, output: *mut f32) {
    let tile = ctx.shared::<f32>(32 * 32usize);
    let output = ctx.global_mut(output, 32usize * 32);
    let tx = ctx.thread_idx().x as usize;
    for j in 0..32 {
        // SAFETY: inside the tile.
        unsafe { tile.store(tx * 32 + j, j as f32) }; // 32-way store
    }
    ctx.sync_threads();
    for j in 0..32 {
        // SAFETY: inside the tile and the output.
        unsafe { output.store(j * 32 + tx, tile.load(j * 32 + tx)) }; // conflict-free load
    }
}

#[test]
fn a_32_way_conflict_shows_in_the_counters() {
    let mut output = poison(32 * 32);
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 32 * 32 * 4 };
    // SAFETY: the output holds 32 * 32 floats.
    let report = run(dims, &[], &mut output, |ctx, i, o| unsafe { rows_per_thread(ctx, i, o) });
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let at = |op: Op, line: u32| report.counters.of(op).find(|s| s.site.line == line).map(|s| s.tally).unwrap();
    let store = at(Op::SharedStore, line_of("// 32-way store"));
    assert_eq!((store.requests, store.transactions, store.ideal), (32, 32 * 32, 32));
    assert_eq!(store.efficiency(), 1.0 / 32.0);
    let load = at(Op::SharedLoad, line_of("// conflict-free load"));
    assert_eq!((load.requests, load.per_request()), (32, 1.0));
    println!(
        "shared st at line {}: {} requests, {:.0} wavefronts a request (ideal {:.0}); shared ld at line {}: {:.0}",
        line_of("// 32-way store"),
        store.requests,
        store.per_request(),
        store.ideal_per_request(),
        line_of("// conflict-free load"),
        load.per_request()
    );
}

/// One warp's shared loads of 4, 8 and 16 bytes in the patterns whose
/// wavefronts the model fixes (see the test below).
unsafe fn access_widths<C: ThreadCtx>(ctx: &C, _: *const f32, output: *mut f32) {
    let words = ctx.shared::<f32>(512usize);
    let (pairs, quads) = (ctx.shared::<u64>(256usize), ctx.shared::<F4>(128usize));
    let output = ctx.global_mut(output, 32usize);
    let lane = ctx.thread_idx().x as usize;
    for w in (lane..512).step_by(32) {
        // SAFETY: w < 512.
        unsafe { words.store(w, 1.0) };
    }
    ctx.sync_threads();
    // SAFETY (all loads): indices below each view's length, 8- and 16-byte aligned.
    let mut s = unsafe { words.load(0) }; // broadcast
    s += unsafe { words.load(2 * lane) }; // stride 2
    s += unsafe { pairs.load(lane) as f32 }; // u64 consecutive
    s += unsafe { quads.load(lane).0[0] }; // F4 consecutive
    s += unsafe { quads.load(2 * lane).0[0] }; // F4 stride 2
    // SAFETY: lane < 32.
    unsafe { output.store(lane, s) };
}

#[test]
fn shared_phases_of_8_and_16_byte_accesses_and_broadcasts() {
    let mut output = poison(32);
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 2048 };
    // SAFETY: the output holds 32 floats.
    let report = run(dims, &[], &mut output, |ctx, i, o| unsafe { access_widths(ctx, i, o) });
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let per_request = |marker: &str| {
        let line = line_of(marker);
        let s = report.counters.of(Op::SharedLoad).find(|s| s.site.line == line).unwrap();
        (s.width, s.tally.per_request(), s.tally.ideal_per_request())
    };
    // 32 lanes on one word: one wavefront.
    assert_eq!(per_request("// broadcast"), (4, 1.0, 1.0));
    // Words 0, 2, .. 62: two per bank.
    assert_eq!(per_request("// stride 2"), (4, 2.0, 1.0));
    // 8 bytes a lane: two half-warps of 128 bytes, each conflict-free.
    assert_eq!(per_request("// u64 consecutive"), (8, 2.0, 2.0));
    // 16 bytes a lane: four quarter-warps of 128 bytes, each conflict-free.
    assert_eq!(per_request("// F4 consecutive"), (16, 4.0, 4.0));
    // A quarter-warp's 8 vectors 32 bytes apart cover 256 bytes: 2 each.
    assert_eq!(per_request("// F4 stride 2"), (16, 8.0, 4.0));
}

/// A 16-byte load one float past an aligned address, and a shared view
/// longer than the launch's shared memory, used past its end.
unsafe fn misaligned_and_past_shared<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32) {
    let input = ctx.global(input, 8usize);
    let tile = ctx.shared::<f32>(64usize); // the launch gives 32 floats
    let output = ctx.global_mut(output, 32usize);
    let lane = ctx.thread_idx().x as usize;
    // SAFETY: none: element 1 of a 16-byte aligned buffer is not.
    let v = unsafe { input.load_as::<F4>(1) }; // misaligned
    // SAFETY: none: lanes 0..32 write floats 32..64.
    unsafe { tile.store(32 + lane, v.0[0]) }; // past shared
    // SAFETY: lane < 32.
    unsafe { output.store(lane, v.0[1]) };
}

#[test]
fn misaligned_vectors_and_views_past_shared_memory_are_found() {
    let vectors = [F4([0.0, 1.0, 2.0, 3.0]), F4([4.0, 5.0, 6.0, 7.0])];
    // SAFETY: two F4 are 8 contiguous floats, 16-byte aligned.
    let input = unsafe { std::slice::from_raw_parts(vectors.as_ptr().cast::<f32>(), 8) };
    let mut output = poison(32);
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(32, 1), shared_bytes: 32 * 4 };
    let base = input.as_ptr() as usize;
    // SAFETY: none: both accesses are refused or reported by the emulator.
    let report = run(dims, input, &mut output, |ctx, i, o| unsafe { misaligned_and_past_shared(ctx, i, o) });
    assert_eq!(report.findings.len(), 2, "{:#?}", report.findings);
    let find = |marker: &str| report.findings.iter().find(|f| f.site.line == line_of(marker)).unwrap();
    let m = find("// misaligned");
    assert_eq!(
        m.kind,
        FindingKind::Misaligned {
            space: coalesce::kernels::Space::Global,
            access: Access::Read,
            address: base + 4,
            align: 16
        }
    );
    assert_eq!(m.count, 32, "{m}");
    let p = find("// past shared");
    assert!(
        matches!(p.kind, FindingKind::PastSharedMemory { access: Access::Write, bytes: 4, shared_bytes: 128, byte }
            if (128..256).contains(&byte)),
        "{p}"
    );
    // The misaligned load still read floats 1..5, as the GPU would not.
    assert_eq!(output[0].to_bits(), 2.0f32.to_bits());
}

// ---- wgmma operands ---------------------------------------------------------

/// Byte of row `row`, float `k` (< 8) of a K-major operand without swizzle:
/// core matrices of 8 rows x 16 bytes, the two along `K` 128 bytes apart
/// (LBO), groups of 8 rows 256 bytes apart (SBO).
fn core_matrix_byte(row: usize, k: usize) -> usize {
    (row / 8) * 256 + (k / 4) * 128 + (row % 8) * 16 + (k % 4) * 4
}

/// The descriptor of that layout at shared address `addr` (swizzle mode 0).
fn unswizzled(addr: u32) -> u64 {
    let enc = |x: u32| ((x & 0x3ffff) >> 4) as u64;
    enc(addr) | (enc(128) << 16) | (enc(256) << 32)
}

/// One warpgroup stores a 64x8 `A` and a 256x8 `B` (ones), all but the
/// rows of `B` from `skip_rows_from` on, then multiplies them with one
/// `wgmma`, with or without the barrier between.
unsafe fn wgmma_after_stores<C: ThreadCtx>(ctx: &C, output: *mut f32, barrier: bool, skip_rows_from: usize) {
    const A_BYTES: usize = 64 * 32;
    let tile = ctx.shared::<f32>((A_BYTES + 256 * 32) / 4);
    let output = ctx.global_mut(output, 128usize * 128);
    let t = ctx.thread_idx().x as usize;
    for f in (t..64 * 8).step_by(128) {
        // SAFETY: inside the A tile.
        unsafe { tile.store(core_matrix_byte(f / 8, f % 8) / 4, 1.0) }; // operand store
    }
    for f in (t..256 * 8).step_by(128) {
        if f / 8 < skip_rows_from {
            // SAFETY: inside the B tile.
            unsafe { tile.store((A_BYTES + core_matrix_byte(f / 8, f % 8)) / 4, 1.0) }; // B operand store
        }
    }
    ctx.fence_proxy_async();
    if barrier {
        ctx.sync_threads();
    }
    let base = ctx.shared_addr(tile.as_ptr());
    let mut d = [0.0f32; 128];
    ctx.wgmma_fence();
    // SAFETY: both operands lie inside the tile.
    unsafe { ctx.wgmma_m64n256k8_tf32(&mut d, unswizzled(base), unswizzled(base + A_BYTES as u32)) }; // wgmma read
    ctx.wgmma_commit();
    ctx.wgmma_wait::<0>(&mut d);
    for (i, v) in d.iter().enumerate() {
        // SAFETY: 128 threads x 128 values.
        unsafe { output.store(t * 128 + i, *v) };
    }
}

#[test]
fn a_wgmma_before_the_barrier_races_with_the_operand_stores() {
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(128, 1), shared_bytes: (64 + 256) * 32 };
    let mut output = poison(128 * 128);
    // SAFETY: the output holds 128 * 128 floats.
    let ok = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, true, 256) });
    assert!(ok.findings.is_empty(), "{:#?}", ok.findings);
    assert!(output.iter().all(|&v| v == 8.0), "ones times ones over k = 8");

    // SAFETY: as above.
    let racy = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, false, 256) });
    let stores = [line_of("// operand store"), line_of("// B operand store")];
    let read = line_of("// wgmma read");
    assert!(!racy.findings.is_empty());
    for f in &racy.findings {
        let FindingKind::SharedRace { access, other_access, other_site, .. } = &f.kind else { panic!("{f}") };
        assert_eq!((f.site.line, *access, *other_access), (read, Access::Read, Access::Write), "{f}");
        assert!(stores.contains(&other_site.line), "{f}");
    }
    println!("{}", racy.findings[0]);
}

#[test]
fn a_wgmma_operand_nobody_stored_is_unwritten() {
    let dims = LaunchDims { grid: Dim3::xy(1, 1), block: Dim3::xy(128, 1), shared_bytes: (64 + 256) * 32 };
    let mut output = poison(128 * 128);
    // SAFETY: the output holds 128 * 128 floats.
    let report = run(dims, &[], &mut output, |ctx, _, o| unsafe { wgmma_after_stores(ctx, o, true, 255) });
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let f = &report.findings[0];
    // Row 255 of B: group 31, row 7 of its core matrices.
    assert_eq!(f.kind, FindingKind::UnwrittenShared { byte: 64 * 32 + 31 * 256 + 7 * 16 }, "{f}");
    assert_eq!(f.site.line, line_of("// wgmma read"), "{f}");
    println!("{f}");
}
