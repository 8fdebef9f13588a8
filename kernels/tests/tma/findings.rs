//! Kernels broken on purpose, caught by the checker at the right lines:
//! reads that no mbarrier wait orders after a bulk copy (a skipped wait, a
//! stage released before it is read, a `sync_threads` that does not wait
//! for the copy), copies to a misaligned or too short destination, and a
//! view on an mbarrier's bytes.

use crate::pipelines::{Pipeline, run_pipeline};
use crate::{dims, line_of, map_of, run, tensor};
use coalesce_kernels::emu::{Access, Finding, FindingKind, Report, SyncMutPtr, SyncPtr, TmaSwizzle};
use coalesce_kernels::{Dim3, Space, TensorMap, ThreadCtx};

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
