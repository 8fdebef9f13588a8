//! Every nested-sin version under the emulator's checker (no finding, the
//! host's bits), and what its memory counters show of each launch's loops:
//! 4-byte accesses in the head and tail, 16-byte ones in between, and the
//! sectors a warp of each takes.

use crate::common::*;
use crate::reference::*;
use coalesce::emu::{Op, Report};
use coalesce::nested_sin::{self, Variant};

/// `variant` under the checker and the counters, `xs` `in_off` floats into
/// the input and the result `out_off` floats into a poisoned output: no
/// finding in any launch, the expected bits, nothing written outside.
fn checked(variant: Variant, xs: &[f32], (in_off, out_off): (usize, usize)) -> Vec<Report> {
    let input = at_offset(xs, in_off);
    let mut output = poison(out_off + xs.len() + GUARD);
    let reports =
        nested_sin::emu::launches_checked(variant, &input[in_off..], &mut output[out_off..][..xs.len()]).unwrap();
    let what = format!("{} len {} offsets {in_off}/{out_off}", variant.name(), xs.len());
    assert_eq!(reports.len(), if xs.is_empty() { 0 } else { variant.launches() as usize }, "{what}: launches");
    for report in &reports {
        assert!(report.findings.is_empty(), "{what}: {:#?}", report.findings);
    }
    let want: Vec<f32> = xs.iter().map(|&x| host_expected(variant, x)).collect();
    assert_window(&what, xs, &output, out_off, &want);
    reports
}

/// The checked launcher at every offset, on nothing and on a head and tail
/// alone: no finding, the same bits as unchecked (the plain launcher's tests
/// run the checker at every length; the counters' test takes the long ones).
#[test]
fn every_variant_passes_the_checker_at_odd_lengths_and_offsets() {
    let mut rng = rng("checked nested_sin");
    for len in [0, 5] {
        let xs = shuffled_inputs(&mut rng, len);
        for offsets in OFFSETS {
            for variant in Variant::ALL {
                checked(variant, &xs, offsets);
            }
        }
    }
}

/// One launch over `len` floats, input and output `offsets` floats past
/// 16-byte alignment: the floats its scalar (head and tail) loops take, the
/// 16-byte vectors of its vector loop, and the sectors of a whole warp of
/// those (16, or 17 when the vectors start 16 bytes into a sector).
fn loops(len: usize, (in_off, out_off): (usize, usize)) -> (u64, u64, u64) {
    if in_off != out_off {
        return (len as u64, 0, 0);
    }
    let head = ((4 - in_off) % 4).min(len);
    let vectors = (len - head) / 4;
    let sectors = if (in_off + head) % 8 == 0 { 16 } else { 17 };
    ((len - 4 * vectors) as u64, vectors as u64, sectors)
}

/// (requests, bytes, sectors) of `op` over the lines that move `width` bytes a lane.
fn traffic(report: &Report, op: Op, width: u32) -> (u64, u64, u64) {
    let lines = report.counters.of(op).filter(|s| s.width == width);
    lines.fold((0, 0, 0), |(r, b, t), s| (r + s.tally.requests, b + s.tally.bytes, t + s.tally.transactions))
}

/// What each launch moves, from its loops: 4-byte accesses in the head and
/// tail (or everywhere, when input and output are off 16-byte alignment by
/// different amounts), 16-byte ones in between. A warp of 16-byte accesses
/// reads or writes 512 contiguous bytes: 16 sectors a request (17 after a
/// head of 3 floats, 16 bytes into a sector). One of 4-byte accesses, 128
/// bytes: 4 sectors, or 5 when it starts 4 bytes into a sector. Every
/// unfused launch after the first runs in place, on the output.
#[test]
fn every_variant_counts_the_sectors_of_its_loops() {
    let mut rng = rng("counted nested_sin");
    // (length, offsets, sectors per request of the first launch's scalar
    // loads and stores, where they are whole warps)
    let cases = [(4099, (0, 0), None), (4099, (1, 1), None), (4096, (1, 0), Some((5, 4)))];
    for (len, offsets, scalar_sectors) in cases {
        let xs = shuffled_inputs(&mut rng, len);
        for variant in Variant::ALL {
            for (launch, report) in checked(variant, &xs, offsets).iter().enumerate() {
                let what = format!("{} len {len} offsets {offsets:?} launch {launch}", variant.name());
                let at = if launch == 0 { offsets } else { (offsets.1, offsets.1) };
                let (scalars, vectors, sectors_per_vector_request) = loops(len, at);
                for (op, sectors) in
                    [(Op::GlobalLoad, scalar_sectors.map(|s| s.0)), (Op::GlobalStore, scalar_sectors.map(|s| s.1))]
                {
                    assert!(report.counters.of(op).all(|s| s.width == 4 || s.width == 16), "{what}: widths");
                    // 1024 vectors: 32 requests of whole warps.
                    let want = (vectors / 32, 16 * vectors, vectors / 32 * sectors_per_vector_request);
                    assert_eq!(traffic(report, op, 16), want, "{what}: {} vectors", op.name());
                    let (requests, bytes, transactions) = traffic(report, op, 4);
                    assert_eq!(bytes, 4 * scalars, "{what}: {} scalars", op.name());
                    if let Some(per) = sectors.filter(|_| launch == 0) {
                        assert_eq!(
                            (requests, transactions),
                            (scalars / 32, per * scalars / 32),
                            "{what}: {}",
                            op.name()
                        );
                    }
                }
            }
        }
    }
}
