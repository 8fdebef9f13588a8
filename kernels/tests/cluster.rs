//! The emulator's thread-block clusters (`emu::launch_cluster`): a cluster's
//! blocks run at once, each with its own shared memory and `sync_threads`,
//! and trade values through `st_async_f32x2` counted on the receiver's
//! mbarrier; the checker finds a read that does not wait for them, and a
//! send that nothing orders after the receiver's mbarrier init.

use coalesce_kernels::emu::EmuCtx;
use coalesce_kernels::emu::{self, EmuError, FindingKind, MAX_CLUSTER, MbarrierProblem, SyncMutPtr};
use coalesce_kernels::{Dim3, LaunchDims, ThreadCtx};

const CLUSTER: u32 = 4;
const THREADS: u32 = 64;
/// Shared memory: the mbarrier (8 bytes), then one (f32, f32) slot per rank.
const SHARED: u32 = 8 + 8 * CLUSTER;

fn dims(blocks: u32, threads: u32) -> LaunchDims {
    LaunchDims { grid: Dim3::xy(blocks, 1), block: Dim3::xy(threads, 1), shared_bytes: SHARED }
}

/// What the kernels below may get wrong on purpose.
#[derive(Clone, Copy, PartialEq)]
enum Flaw {
    None,
    /// Reads the slots before waiting on the mbarrier.
    ReadEarly,
    /// Sends before the cluster barrier that publishes the peers' inits.
    SendEarly,
}

/// Each block sends (its block index, its rank) to every other block of its
/// cluster and writes what it received, slot by slot, to `out` (thread 0).
fn exchange(ctx: &EmuCtx<'_>, out: SyncMutPtr<f32>, flaw: Flaw) {
    let (t, rank) = (ctx.thread_idx().x, ctx.cluster_ctarank());
    let block = ctx.block_idx().x;
    let slots = ctx.shared::<f32>(SHARED as usize / 4);
    let bar = ctx.shared_addr(slots.as_ptr());
    let slot = |r: u32| bar + 8 + 8 * r;
    let send = || {
        if t < CLUSTER && t != rank {
            // SAFETY: slot `rank` of block `t`, which only this thread writes.
            unsafe { ctx.st_async_f32x2(t, slot(rank), [block as f32, rank as f32], bar) };
        }
    };
    if t == 0 {
        ctx.mbarrier_init(bar, 1);
        ctx.mbarrier_init_fence();
    }
    ctx.cluster_arrive_relaxed();
    if flaw == Flaw::SendEarly {
        send();
    }
    ctx.sync_threads();
    if t == 0 {
        ctx.mbarrier_arrive_expect_tx(bar, 8 * (CLUSTER - 1));
    }
    ctx.cluster_wait();
    if flaw != Flaw::SendEarly {
        send();
    }
    if t == rank {
        // SAFETY: this block's own slot, floats 2 + 2 rank.. (after the barrier's 8 bytes).
        unsafe {
            slots.store(2 + 2 * rank as usize, block as f32);
            slots.store(3 + 2 * rank as usize, rank as f32);
        }
    }
    let read = || {
        if t == 0 {
            for r in 0..CLUSTER as usize {
                // SAFETY: inside the slots; output row `block` is this block's.
                unsafe {
                    *out.get().add(block as usize * 2 * CLUSTER as usize + 2 * r) = slots.load(2 + 2 * r);
                    *out.get().add(block as usize * 2 * CLUSTER as usize + 2 * r + 1) = slots.load(3 + 2 * r);
                }
            }
        }
    };
    if flaw == Flaw::ReadEarly {
        read();
    }
    ctx.mbarrier_wait_cluster(bar, 0);
    ctx.sync_threads();
    if flaw != Flaw::ReadEarly {
        read();
    }
}

#[test]
fn blocks_of_a_cluster_trade_values_through_each_others_shared_memory() {
    let blocks = 3 * CLUSTER;
    let mut out = vec![0.0f32; (blocks * 2 * CLUSTER) as usize];
    let o = SyncMutPtr::new(&mut out);
    let report =
        emu::launch_cluster_checked(dims(blocks, THREADS), CLUSTER, |ctx| exchange(ctx, o, Flaw::None)).unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    for b in 0..blocks {
        let first = b / CLUSTER * CLUSTER;
        for r in 0..CLUSTER {
            let got = &out[(b * 2 * CLUSTER + 2 * r) as usize..][..2];
            assert_eq!(got, [(first + r) as f32, r as f32], "block {b}, slot {r}");
        }
    }
}

#[test]
fn reading_before_the_mbarrier_wait_is_a_race() {
    let mut out = vec![0.0f32; (CLUSTER * 2 * CLUSTER) as usize];
    let o = SyncMutPtr::new(&mut out);
    let report =
        emu::launch_cluster_checked(dims(CLUSTER, THREADS), CLUSTER, |ctx| exchange(ctx, o, Flaw::ReadEarly)).unwrap();
    assert!(!report.findings.is_empty(), "no finding for reads before the wait");
    assert!(
        report
            .findings
            .iter()
            .all(|f| matches!(f.kind, FindingKind::SharedRace { .. } | FindingKind::UnwrittenShared { .. })),
        "{:?}",
        report.findings
    );
}

#[test]
fn sending_before_the_cluster_barrier_is_an_error() {
    let mut out = vec![0.0f32; (CLUSTER * 2 * CLUSTER) as usize];
    let o = SyncMutPtr::new(&mut out);
    let e = emu::launch_cluster(dims(CLUSTER, THREADS), CLUSTER, |ctx| exchange(ctx, o, Flaw::SendEarly)).unwrap_err();
    let EmuError::Mbarrier { problem, .. } = e else { panic!("{e}") };
    assert!(matches!(problem, MbarrierProblem::Uninitialised | MbarrierProblem::InitNotOrdered), "{e}");
}

/// Each block has its own shared memory and its own `sync_threads`: block 0
/// of each cluster passes two barriers, the others one, and nobody waits
/// for another block.
#[test]
fn each_block_of_a_cluster_has_its_own_shared_memory_and_barrier() {
    let blocks = 2 * CLUSTER;
    let mut out = vec![u32::MAX; (blocks * THREADS) as usize];
    let o = SyncMutPtr::new(&mut out);
    emu::launch_cluster(LaunchDims { shared_bytes: 4 * THREADS, ..dims(blocks, THREADS) }, CLUSTER, |ctx| {
        let (t, b, rank) = (ctx.thread_idx().x, ctx.block_idx().x, ctx.cluster_ctarank());
        let s = ctx.shared::<u32>(THREADS as usize);
        // SAFETY: t < THREADS: inside the view.
        unsafe { s.store(t as usize, 100 * b + t) };
        ctx.sync_threads();
        if rank == 0 {
            ctx.sync_threads();
        }
        let n = (t + 1) % THREADS;
        // SAFETY: as above; output element b * THREADS + t is this thread's.
        unsafe { *o.get().add((b * THREADS + t) as usize) = s.load(n as usize) };
    })
    .unwrap();
    for b in 0..blocks {
        for t in 0..THREADS {
            assert_eq!(out[(b * THREADS + t) as usize], 100 * b + (t + 1) % THREADS, "block {b} thread {t}");
        }
    }
}

#[test]
fn bad_cluster_shapes_are_errors() {
    let bad = |cluster: u32, blocks: u32, threads: u32| {
        let e = emu::launch_cluster(dims(blocks, threads), cluster, |_| {}).unwrap_err();
        assert!(matches!(e, EmuError::InvalidCluster { .. }), "{e}");
    };
    bad(0, 4, 32);
    bad(3, 4, 32); // 4 blocks are no whole number of clusters of 3
    bad(MAX_CLUSTER + 1, MAX_CLUSTER + 1, 32);
    bad(2, 4, 48); // blocks of a cluster are whole warps
    assert!(emu::launch_cluster(dims(MAX_CLUSTER, 32), MAX_CLUSTER, |_| {}).is_ok());
}

/// Softmax step 4 launched without its clusters stops with an error instead
/// of waiting for pairs that never come.
#[test]
fn a_cluster_kernel_launched_without_its_clusters_traps() {
    use coalesce_kernels::emu::SyncPtr;
    use coalesce_kernels::softmax::{Kernel, cluster};
    let (rows, cols) = (2u32, 1000u32);
    let input = vec![0.5f32; (rows * cols) as usize];
    let mut output = vec![0.0f32; input.len()];
    let (i, o) = (SyncPtr::new(&input), SyncMutPtr::new(&mut output));
    let dims = Kernel::Cluster8x256.launch_dims(rows, cols);
    // SAFETY: the buffers hold rows * cols floats; the launch lacks only the clusters.
    let e = emu::launch(dims, |ctx| unsafe { cluster::<_, 28, 8>(ctx, i.get(), o.get(), rows, cols) }).unwrap_err();
    let EmuError::Panicked { message, .. } = &e else { panic!("{e}") };
    assert!(message.contains("launched without its clusters"), "{e}");
}
