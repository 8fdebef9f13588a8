//! Kernels broken on purpose, each caught with the right finding at the
//! right line: a missing barrier (a race), an off-by-one edge (out of
//! bounds), a read of shared memory nobody wrote, a misaligned 16-byte
//! load, and a shared view longer than the launch's shared memory.

use crate::common::*;
use crate::{here, line_of, run};
use coalesce::Error;
use coalesce::emu::{Access, EmuError, Finding, FindingKind};
use coalesce::kernels::emu::{self as kemu, SyncMutPtr, SyncPtr};
use coalesce::kernels::vector::F4;
use coalesce::kernels::{Dim3, LaunchDims, ThreadCtx};
use coalesce::transpose::Variant;

/// Step 3 (32x32 tile, 32x8 threads, `n` a multiple of 32) with its barrier
/// left out.
pub(crate) unsafe fn tiled_without_barrier<C: ThreadCtx>(ctx: &C, input: *const f32, output: *mut f32, n: u32) {
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
