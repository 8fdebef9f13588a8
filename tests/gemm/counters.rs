//! Steps 1-8 under the emulator's checker at shapes that take every edge
//! path, and what each step changes in the emulator's memory counters:
//! sectors per global request, wavefronts per shared request.

use crate::common::*;
use crate::reference::{Case, check, reference};
use coalesce::emu::{Counters, Op};
use coalesce::gemm::{self, AlphaBeta, Variant};

/// Shapes for the checker on steps 1-8: `K = 1` with `N < 4` (step 7's
/// checked loads); `N < 4` over several `K` tiles with a residue; `N` 2 past
/// 128 (a second block column for the 128-wide tiles, and a vector of `B`
/// crossing `N`: step 7's shifted window); `M` past 128 with a narrow odd `N`
/// and `K` a multiple of 4 but of no tile; every dimension a multiple of 4
/// past one 128x128 tile (block (0, 0) of steps 4-6 and 8 on the vector
/// paths, the others on the scalar ones); and step 7's whole tile, every
/// block interior.
const CHECKER_SHAPES: [(usize, usize, usize); 6] =
    [(5, 3, 1), (9, 2, 21), (17, 130, 13), (130, 7, 36), (132, 132, 24), (128, 256, 16)];

/// Steps 1-8 under the checker: no out-of-bounds or misaligned access, no
/// shared-memory race, no read of unwritten shared memory, at shapes that
/// take every edge path; results within their bounds, and every element of
/// `C` stored once through a view.
#[test]
fn steps_1_to_8_pass_the_checker_at_odd_shapes() {
    let mut rng = rng("checked gemm");
    for (i, dims) in CHECKER_SHAPES.into_iter().enumerate() {
        // Half the shapes read C (beta != 0), half only write it.
        let s = if i % 2 == 0 { AlphaBeta::new(1.5, -0.5) } else { AlphaBeta::PRODUCT };
        let case = Case::new(&mut rng, dims, s);
        let (want, bound) = reference(&case, None);
        // Steps 1-3 check every element alike, on every shape: the shapes
        // below 128 rows take them through each of their edges.
        // Steps 1-8: the FP32 ladder and step 8's `mma.sync`; steps 1-3
        // (blocks of up to 1024 threads, slow to emulate) on the small shapes.
        let first = if dims.0 < 128 { 1 } else { 4 };
        let steps: Vec<Variant> = Variant::ALL
            .into_iter()
            .filter(|v| v.step().parse().is_ok_and(|s: u32| (first..=8).contains(&s)))
            .collect();
        for v in steps {
            let mut c = case.c0.clone();
            let report = gemm::emu::launch_checked(v, &case.a, &case.b, &mut c, case.shape, s).unwrap();
            let what = format!("{} at {}", v.name(), case.shape);
            assert!(report.findings.is_empty(), "{what}: {:#?}", report.findings);
            check(v, &case, None, &c, &want, &bound);
            let stored = report.counters.total(Op::GlobalStore).bytes;
            assert_eq!(stored, 4 * case.shape.c().len() as u64, "{what}: bytes stored to C");
        }
    }
}

/// `v`'s memory counters on random inputs of shape `dims` (the plain
/// product, buffers 256-byte aligned), with no finding.
fn counters(v: Variant, dims: (usize, usize, usize)) -> Counters {
    let case = Case::new(&mut rng(v.name()), dims, AlphaBeta::PRODUCT);
    let mut c = case.c0.clone();
    let report = gemm::emu::launch_checked(v, &case.a, &case.b, &mut c, case.shape, case.s).unwrap();
    assert!(report.findings.is_empty(), "{}: {:#?}", v.name(), report.findings);
    report.counters
}

/// The per-request transactions (sectors or wavefronts) of each line of
/// `file` that does `op`, in source order (line, then column).
fn per_request(c: &Counters, file: &str, op: Op) -> Vec<f64> {
    c.of(op).filter(|s| s.site.file_name() == file).map(|s| s.tally.per_request()).collect()
}

/// What the ladder teaches, in the emulator's counters, on whole tiles:
///
/// - step 1 loads `A` and `B` for every FMA: the warp's `A` load is one
///   address (1 sector), its `B` load 32 consecutive floats (4 sectors);
///   step 2 loads each element once per 32x32 tile, coalesced (4 sectors a
///   request): 32 times fewer requests, 20 times fewer sectors;
/// - step 2's inner loop reads `As[ty][i]`, one word for the whole warp (a
///   broadcast), and `Bs[i][tx]`, 32 consecutive words in 32 banks: one
///   wavefront each;
/// - step 5's 16-byte global loads move step 4's sectors in a quarter of
///   the requests, every sector whole;
/// - step 5's threads read 8 adjacent columns of `B` each, so a quarter
///   warp's 16-byte reads lie 32 bytes apart, two per bank group: 8
///   wavefronts a request where 4 would do; step 6's interleaved fragments
///   read adjacent vectors, 4. Its padded `A` tile takes the 2-way conflict
///   off step 5's transposed stores, and its 16-byte stores of `C` fill
///   whole sectors (step 5's lanes store 32 bytes apart: 32 sectors for 16).
#[test]
fn the_ladder_in_the_memory_counters_on_the_emulator() {
    use Op::{GlobalLoad, GlobalStore, SharedLoad, SharedStore};

    let (s1, s2) = (counters(Variant::Naive, (64, 64, 64)), counters(Variant::SmemTiled, (64, 64, 64)));
    // One line loads A then B.
    assert_eq!(per_request(&s1, "01_naive.rs", GlobalLoad), [1.0, 4.0]);
    assert!(s1.of(GlobalLoad).all(|s| s.tally.requests == 64 * 64 * 64 / 32), "one request per warp and k");
    assert_eq!(per_request(&s2, "02_smem_tiled.rs", GlobalLoad), [4.0, 4.0]);
    let (g1, g2) = (s1.total(GlobalLoad), s2.total(GlobalLoad));
    assert_eq!((g1.requests, g1.transactions), (32 * g2.requests, 20 * g2.transactions));
    // One line reads As[ty][i] then Bs[i][tx].
    assert_eq!(per_request(&s2, "02_smem_tiled.rs", SharedLoad), [1.0, 1.0]);
    assert!(s2.of(SharedLoad).all(|s| s.tally.accesses == 32 * s.tally.requests), "whole warps");

    let tile = (128, 128, 16);
    let (s4, s5, s6) =
        (counters(Variant::Blocktile2d, tile), counters(Variant::Vectorized, tile), counters(Variant::Warptile, tile));
    let (g4, g5) = (s4.total(GlobalLoad), s5.total(GlobalLoad));
    assert!(s4.of(GlobalLoad).all(|s| s.width == 4) && s5.of(GlobalLoad).all(|s| s.width == 16));
    assert_eq!((g5.transactions, 4 * g5.requests), (g4.transactions, g4.requests));
    assert_eq!((g5.per_request(), g5.efficiency()), (16.0, 1.0));
    // Step 5 reads two vectors of A, then two of B, on one line; step 6 its
    // fragments of A, then of B.
    assert_eq!(per_request(&s5, "05_vectorized.rs", SharedLoad), [4.0, 4.0, 8.0, 8.0]);
    assert_eq!(per_request(&s6, "06_warptile.rs", SharedLoad), [4.0, 4.0]);
    assert!(s6.of(SharedLoad).all(|s| s.width == 16 && s.tally.efficiency() == 1.0));
    // The transposed A tile's scalar stores (tiles.rs, stage_a).
    let stage_a = |c: &Counters| c.of(SharedStore).filter(|s| s.width == 4).map(|s| s.tally.per_request()).collect();
    assert_eq!((stage_a(&s5), stage_a(&s6)), (vec![2.0], vec![1.0]));
    let (c5, c6) = (s5.total(GlobalStore), s6.total(GlobalStore));
    assert_eq!((c5.per_request(), c5.ideal_per_request()), (32.0, 16.0));
    assert_eq!((c6.per_request(), c6.efficiency()), (16.0, 1.0));
}
