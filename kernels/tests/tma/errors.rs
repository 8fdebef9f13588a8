//! Kernels broken on purpose that fail the launch with an error, not a
//! hang: a wait that can never complete, barriers that can never meet, an
//! mbarrier never initialised (or misaligned, or past the shared memory,
//! or arrived on once too often), and a tensor map that is not one.

use crate::{dims, map_of, tensor};
use coalesce_kernels::emu::{self, EmuError, MbarrierProblem, SyncPtr, TmaSwizzle};
use coalesce_kernels::{Dim3, LaunchDims, ThreadCtx};

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
