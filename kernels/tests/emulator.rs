//! Tests of the CPU emulator itself: if these hold, a kernel that passes on
//! the emulator has its indexing, barriers and shuffles right.

use coalesce_kernels::emu::{self, EmuError, SHARED_POISON, SyncMutPtr};
use coalesce_kernels::{Dim3, LaunchDims, ThreadCtx};

fn dims(grid: Dim3, block: Dim3, shared_bytes: u32) -> LaunchDims {
    LaunchDims { grid, block, shared_bytes }
}

#[test]
fn every_thread_of_every_block_runs_once_with_its_indices() {
    let d = dims(Dim3::new(3, 2, 2), Dim3::new(5, 3, 2), 0);
    let n = (d.grid.count() * d.block.count()) as usize;
    let mut hits = vec![0u32; n];
    let out = SyncMutPtr::new(&mut hits);
    emu::launch(d, |ctx| {
        let (t, b, bd, gd) = (ctx.thread_idx(), ctx.block_idx(), ctx.block_dim(), ctx.grid_dim());
        assert_eq!((bd, gd), (d.block, d.grid));
        let block = (b.z * gd.y + b.y) * gd.x + b.x;
        let thread = (t.z * bd.y + t.y) * bd.x + t.x;
        let i = (block * bd.x * bd.y * bd.z + thread) as usize;
        // SAFETY: each (block, thread) owns element i.
        unsafe { *out.get().add(i) += 1 };
    })
    .unwrap();
    assert!(hits.iter().all(|&h| h == 1), "{hits:?}");
}

/// Thread t writes slot t, barrier, then reads its neighbour's slot: without
/// a real barrier some reads would see the poison, not the neighbour's value.
#[test]
fn barrier_orders_shared_memory_writes_before_reads() {
    let threads = 256u32;
    let d = dims(Dim3::xy(4, 1), Dim3::xy(threads, 1), threads * 4);
    let mut out = vec![0u32; (4 * threads) as usize];
    let o = SyncMutPtr::new(&mut out);
    emu::launch(d, |ctx| {
        let s = ctx.shared_mem::<u32>();
        let (t, b) = (ctx.thread_idx().x, ctx.block_idx().x);
        // SAFETY: t < threads, and shared memory holds `threads` u32.
        unsafe { *s.add(t as usize) = b * 1000 + t };
        ctx.sync_threads();
        let neighbour = (t + 1) % threads;
        // SAFETY: as above; output element b*threads+t is this thread's.
        unsafe { *o.get().add((b * threads + t) as usize) = *s.add(neighbour as usize) };
    })
    .unwrap();
    for b in 0..4 {
        for t in 0..threads {
            assert_eq!(out[(b * threads + t) as usize], b * 1000 + (t + 1) % threads);
        }
    }
}

/// A block must not see the shared memory of the block before it: every
/// block starts from poison, as a block on another SM would.
#[test]
fn shared_memory_is_fresh_and_poisoned_for_every_block() {
    let d = dims(Dim3::xy(5, 1), Dim3::xy(32, 1), 32 * 4);
    let mut seen = vec![0u32; 5 * 32];
    let o = SyncMutPtr::new(&mut seen);
    emu::launch(d, |ctx| {
        let s = ctx.shared_mem::<u32>();
        let (t, b) = (ctx.thread_idx().x as usize, ctx.block_idx().x as usize);
        // SAFETY: t < 32 elements of shared memory and of this block's output.
        unsafe {
            *o.get().add(b * 32 + t) = *s.add(t);
        }
        ctx.sync_threads();
        // SAFETY: as above.
        unsafe { *s.add(t) = b as u32 };
    })
    .unwrap();
    let poison = u32::from_ne_bytes([SHARED_POISON; 4]);
    assert!(seen.iter().all(|&v| v == poison), "a block saw stale shared memory: {seen:?}");
}

#[test]
fn butterfly_shuffle_exchanges_within_each_warp() {
    let d = dims(Dim3::xy(2, 1), Dim3::xy(64, 1), 0);
    for mask in [1u32, 2, 4, 8, 16, 31] {
        let mut out = vec![0f32; 128];
        let o = SyncMutPtr::new(&mut out);
        emu::launch(d, |ctx| {
            let g = ctx.block_idx().x * 64 + ctx.thread_idx().x;
            let v = ctx.shfl_xor_f32(g as f32, mask);
            // SAFETY: g < 128, one element per thread.
            unsafe { *o.get().add(g as usize) = v };
        })
        .unwrap();
        for g in 0..128u32 {
            let (warp_base, lane) = (g / 32 * 32, g % 32);
            assert_eq!(out[g as usize], (warp_base + (lane ^ mask)) as f32, "mask {mask} thread {g}");
        }
    }
}

#[test]
fn warp_sum_by_shuffles() {
    let d = dims(Dim3::xy(1, 1), Dim3::xy(96, 1), 0);
    let mut out = vec![0f32; 96];
    let o = SyncMutPtr::new(&mut out);
    emu::launch(d, |ctx| {
        let t = ctx.thread_idx().x;
        let mut v = t as f32;
        for m in [16, 8, 4, 2, 1] {
            v += ctx.shfl_xor_f32(v, m);
        }
        // SAFETY: one element per thread.
        unsafe { *o.get().add(t as usize) = v };
    })
    .unwrap();
    for (t, &sum) in out.iter().enumerate() {
        let w = t / 32 * 32;
        assert_eq!(sum, (w..w + 32).sum::<usize>() as f32);
    }
}

#[test]
fn a_barrier_skipped_by_some_threads_is_an_error_not_a_hang() {
    let d = dims(Dim3::xy(2, 1), Dim3::xy(64, 1), 0);
    let r = emu::launch(d, |ctx| {
        if ctx.thread_idx().x >= 40 {
            return;
        }
        ctx.sync_threads();
    });
    assert_eq!(r, Err(EmuError::DivergentBarrier { block: Dim3::new(0, 0, 0) }));
}

#[test]
fn a_panicking_thread_is_reported_with_its_indices() {
    let d = dims(Dim3::xy(3, 1), Dim3::xy(64, 1), 0);
    let r = emu::launch(d, |ctx| {
        ctx.sync_threads();
        if ctx.block_idx().x == 1 && ctx.thread_idx().x == 17 {
            panic!("index out of bounds");
        }
        ctx.sync_threads();
    });
    match r {
        Err(EmuError::Panicked { block, thread, message, site }) => {
            assert_eq!((block.x, thread.x), (1, 17));
            assert!(message.contains("out of bounds"));
            let site = site.expect("the panic's location");
            assert!(site.file.ends_with("emulator.rs"), "{site}");
        }
        other => panic!("expected a reported panic, got {other:?}"),
    }
}

#[test]
fn shuffle_in_a_partial_warp_is_an_error() {
    let d = dims(Dim3::xy(1, 1), Dim3::xy(40, 1), 0);
    let r = emu::launch(d, |ctx| {
        let _ = ctx.shfl_xor_f32(1.0, 1);
    });
    assert!(matches!(r, Err(EmuError::PartialWarpShuffle { lanes: 8, .. })), "{r:?}");
}

#[test]
fn bad_launch_shapes_are_errors() {
    let ok_grid = Dim3::xy(1, 1);
    assert!(matches!(emu::launch(dims(ok_grid, Dim3::xy(0, 1), 0), |_| {}), Err(EmuError::InvalidBlock(_))));
    assert!(matches!(emu::launch(dims(ok_grid, Dim3::xy(1025, 1), 0), |_| {}), Err(EmuError::InvalidBlock(_))));
    assert!(matches!(emu::launch(dims(Dim3::xy(0, 1), Dim3::xy(32, 1), 0), |_| {}), Err(EmuError::EmptyGrid(_))));
}
