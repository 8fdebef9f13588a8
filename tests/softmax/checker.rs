//! The softmax kernels under the emulator's checker (no finding, the
//! output within the tolerance), and what its memory counters show: the
//! vector path's 16-byte accesses, the scalar path's four requests per
//! group, the (max, sum) pairs' wavefronts past 16 warps, and the stash's
//! `cp.async` and shared-memory reads.

use crate::common::*;
use crate::reference::{check, kernels_for, logits, reference};
use coalesce::MatrixShape;
use coalesce::emu::{Op, Report, Tally};
use coalesce::softmax::{Kernel, Strategy, emu};

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
        // A cluster's slice of a 128-column row is 16 floats: 4 lanes, not a
        // whole warp's 512 bytes.
        for kernel in kernels_for(cols).into_iter().filter(|k| k.strategy() != Strategy::Cluster || cols >= 1024) {
            let report = checked(kernel, shape, &input, 0);
            let name = format!("{} on {shape}", kernel.entry_point());
            let c = &report.counters;
            let blocks = rows as u64 * kernel.cluster() as u64;
            let warps = blocks * kernel.launch_dims(rows as u32, cols as u32).block.x as u64 / 32;
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
