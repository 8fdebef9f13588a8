//! The memory model: what one warp-level request costs, as the counters
//! ([`super::counters`]) charge it and as Nsight Compute counts it.
//!
//! - global memory: the 32-byte sectors that the lanes' bytes touch, at
//!   their real addresses (a request of 32 consecutive floats is 4 sectors
//!   when aligned, 5 when not);
//! - shared memory: wavefronts, as the Hopper L1 processes them. Shared
//!   memory has 32 banks of 4-byte words (word `w` in bank `w % 32`); lanes
//!   that touch the same word are served together (a broadcast for loads, one
//!   write for stores), different words in one bank take a wavefront each.
//!   Accesses of 4 bytes or less go through as one phase of 32 lanes, 8-byte
//!   accesses as two phases of 16 lanes (lanes 0-15, 16-31), 16-byte accesses
//!   as four phases of 8 lanes (128 bytes a phase, what the banks deliver per
//!   cycle). A phase takes as many wavefronts as the most distinct words any
//!   one bank holds among its lanes' words; a request, the sum over its
//!   phases with active lanes. Not modelled: lanes of different phases
//!   that read the same address are served together on the GPU, so a
//!   16-byte load whose lanes share addresses (GEMM steps 5-7's fragment
//!   loads) takes fewer wavefronts than the four phases charged here
//!   (`docs/gemm.md` puts the two side by side).
//!
//! Each request's cost comes with its ideal: for global memory the sectors
//! a packed, aligned request for the same bytes would touch, for shared
//! memory one wavefront per phase.
//!
//! Sources: the CUDA C++ Programming Guide, "Shared Memory" for compute
//! capability 5.x and later (32 banks of successive 32-bit words; lanes on
//! one word do not conflict: broadcast for reads, one writer for writes);
//! Nsight Compute's Kernel Profiling Guide (requests, sectors of 32 bytes,
//! wavefronts: "at least one wavefront is generated for each request");
//! for 16-byte accesses, four wavefronts of 128 bytes as the minimum
//! (NVIDIA developer forums, "bank_conflicts metric vs wavefronts for shared
//! memory LDS.128", where `ncu` counts 4 wavefronts and 0 conflicts).

use super::types::{LaneAccess, Op};
use crate::mem::Space;
use std::vec::Vec;

/// What one request costs, as the counters count it: 32-byte sectors
/// (global memory) or wavefronts (shared), and the ideal (see
/// [`super::Tally`]).
pub fn request_cost(op: Op, lanes: &[LaneAccess]) -> (u64, u64) {
    let lanes: Vec<(u32, usize, u32)> = lanes.iter().map(|l| (l.lane, l.addr as usize, l.bytes)).collect();
    charge(op.space(), &lanes)
}

/// [`request_cost`] of the lanes' `(lane, address, bytes)` in `space`.
pub(super) fn charge(space: Space, lanes: &[(u32, usize, u32)]) -> (u64, u64) {
    match space {
        Space::Global => (sectors(lanes), ideal_sectors(lanes)),
        Space::Shared => wavefronts(lanes),
    }
}

/// `f` of a scratch slice of `n` default values: on the stack for the sizes
/// of one warp's request (the counters charge millions of them), on the
/// heap beyond.
fn scratch<T: Copy + Default, R>(n: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    const STACK: usize = 256;
    if n <= STACK {
        let mut buf = [T::default(); STACK];
        f(&mut buf[..n])
    } else {
        f(&mut std::vec![T::default(); n])
    }
}

/// How many distinct values `items` holds (sorted in place).
fn distinct(items: &mut [usize]) -> usize {
    items.sort_unstable();
    items.iter().enumerate().filter(|&(i, v)| i == 0 || items[i - 1] != *v).count()
}

/// The first and last of the `size`-byte units that `bytes` bytes at `a` touch.
fn span(a: usize, bytes: u32, size: usize) -> core::ops::RangeInclusive<usize> {
    a / size..=(a + bytes.max(1) as usize - 1) / size
}

/// The 32-byte sectors that the lanes' `(lane, address, bytes)` touch.
fn sectors(lanes: &[(u32, usize, u32)]) -> u64 {
    let n = lanes.iter().map(|&(_, a, b)| span(a, b, 32).count()).sum();
    scratch(n, |s| {
        lanes.iter().flat_map(|&(_, a, b)| span(a, b, 32)).zip(s.iter_mut()).for_each(|(v, slot)| *slot = v);
        distinct(s) as u64
    })
}

/// The sectors of the lanes' distinct bytes, packed into aligned sectors.
fn ideal_sectors(lanes: &[(u32, usize, u32)]) -> u64 {
    scratch(lanes.len(), |ranges: &mut [(usize, usize)]| {
        lanes.iter().zip(ranges.iter_mut()).for_each(|(&(_, a, n), r)| *r = (a, a + n as usize));
        ranges.sort_unstable();
        let (mut distinct, mut end) = (0usize, 0usize);
        for &(a, b) in ranges.iter() {
            let a = a.max(end);
            if b > a {
                distinct += b - a;
                end = b;
            }
        }
        distinct.div_ceil(32) as u64
    })
}

/// Wavefronts and the ideal of one shared-memory request (see the module
/// docs): phases of 32, 16 or 8 lanes for 4-, 8- and 16-byte accesses.
fn wavefronts(lanes: &[(u32, usize, u32)]) -> (u64, u64) {
    let (_, ways) = phases(lanes);
    let busy = ways.iter().map(|w| w.iter().copied().max().unwrap_or(0) as u64).filter(|&w| w > 0);
    busy.fold((0, 0), |(total, phases), w| (total + w, phases + 1))
}

/// The lanes of each phase of a shared-memory request (32 for accesses of
/// 4 bytes or less, 16 for 8-byte ones, 8 for 16-byte ones), and per phase
/// the distinct words each bank holds among its lanes' words (lanes on one
/// word are a broadcast, not a conflict; a phase with no lane is all 0).
fn phases(lanes: &[(u32, usize, u32)]) -> (u32, Vec<[u32; 32]>) {
    let width = lanes.iter().map(|l| l.2).max().unwrap_or(4).max(4);
    let per_phase = (32 / width.div_ceil(4)).max(8);
    let ways = (0..32 / per_phase)
        .map(|phase| {
            let mine = || lanes.iter().filter(move |l| l.0 / per_phase == phase);
            let n = mine().map(|&(_, a, b)| span(a, b, 4).count()).sum();
            scratch(n, |words| {
                mine().flat_map(|&(_, a, b)| span(a, b, 4)).zip(words.iter_mut()).for_each(|(w, slot)| *slot = w);
                let n = distinct(words);
                let mut per_bank = [0u32; 32];
                // `distinct` sorted the words and counted them; walk the
                // distinct ones.
                let mut last = None;
                for &w in words.iter() {
                    if last != Some(w) {
                        per_bank[w % 32] += 1;
                        last = Some(w);
                    }
                }
                debug_assert_eq!(per_bank.iter().sum::<u32>() as usize, n);
                per_bank
            })
        })
        .collect();
    (per_phase, ways)
}

/// [`phases`] of a sampled shared-memory request: lanes per phase, and the
/// distinct words of each bank in each phase (the conflicts a picture marks).
pub fn bank_ways(lanes: &[LaneAccess]) -> (u32, Vec<[u32; 32]>) {
    let lanes: Vec<(u32, usize, u32)> = lanes.iter().map(|l| (l.lane, l.addr as usize, l.bytes)).collect();
    phases(&lanes)
}
