//! Shared-memory bank conflicts in the counters, on kernels written for
//! them: a store that hits one bank 32 times beside a conflict-free load,
//! and loads of 4, 8 and 16 bytes whose phases and broadcasts the model
//! fixes.

use crate::common::*;
use crate::{line_of, run};
use coalesce::emu::Op;
use coalesce::kernels::vector::F4;
use coalesce::kernels::{Dim3, LaunchDims, ThreadCtx};

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
