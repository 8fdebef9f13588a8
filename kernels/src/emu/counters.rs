//! The memory counters: per source line of an access through a view (a
//! [`Site`]), the requests it made and what they cost.
//!
//! [`super::launch_checked`] counts them. A *request* is one warp-level
//! execution of a line, the 32 lanes' accesses grouped by (block, warp,
//! line, how many times each thread had executed that line before). Each
//! thread logs its accesses during a block; at the block's end one thread
//! groups the logs into requests and tallies each line: requests, accesses,
//! the bytes the lanes asked for, and the transactions that [`super::cost`]
//! charges a request (32-byte sectors in global memory, wavefronts in
//! shared memory) against their ideal. The two sides of a `cp.async`
//! ([`crate::Shared::copy_async_16`]) count apart, as [`Op::CopyAsyncLoad`]
//! (sectors) and [`Op::CopyAsyncStore`] (wavefronts), since `ncu` counts
//! `LDGSTS` apart from shared stores. Each line also keeps its first
//! request, lane by lane: what a picture of the line draws.
//!
//! The emulator has no SIMT scheduler, so lanes are paired by how many times
//! each executed the line: exact when the lanes of a warp that execute a
//! line execute the same iterations of it (every interior tile here, and
//! edges where a lane either takes or skips a whole run of iterations), an
//! approximation where lanes skip different iterations of an inner loop
//! (step 7's scalar path on its right edge tiles).
//!
//! Counted per line of the source, that is at PTX granularity: where
//! ptxas merges a kernel's consecutive 4-byte shared loads into one 8- or
//! 16-byte load, the GPU makes fewer, wider requests than counted here. The
//! operands a `wgmma` reads from shared memory pass the checker (races,
//! unwritten words) but are not counted: they do not go through the
//! load/store unit; nor are bulk copies (TMA) and mbarrier operations.

use super::cost;
use super::memory::{Memory, Site, ThreadMemory};
use crate::mem::Space;
use std::vec::Vec;

/// What an access does, and to which memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    GlobalLoad,
    GlobalStore,
    SharedLoad,
    SharedStore,
    /// The global side of a `cp.async` (`LDGSTS`): read without a register.
    CopyAsyncLoad,
    /// Its shared side: written without a register.
    CopyAsyncStore,
}

impl Op {
    /// Every op, in the order tables list them.
    pub const ALL: [Op; 6] =
        [Op::GlobalLoad, Op::GlobalStore, Op::SharedLoad, Op::SharedStore, Op::CopyAsyncLoad, Op::CopyAsyncStore];

    /// `copy_async`: the access is one side of a `cp.async`, which `ncu`
    /// counts apart from loads and stores (`op_ldgsts`).
    pub(super) fn new(space: Space, store: bool, copy_async: bool) -> Op {
        match (space, store, copy_async) {
            (Space::Global, false, false) => Op::GlobalLoad,
            (Space::Global, true, _) => Op::GlobalStore,
            (Space::Shared, false, _) => Op::SharedLoad,
            (Space::Shared, true, false) => Op::SharedStore,
            (Space::Global, false, true) => Op::CopyAsyncLoad,
            (Space::Shared, true, true) => Op::CopyAsyncStore,
        }
    }

    pub fn space(self) -> Space {
        match self {
            Op::GlobalLoad | Op::GlobalStore | Op::CopyAsyncLoad => Space::Global,
            Op::SharedLoad | Op::SharedStore | Op::CopyAsyncStore => Space::Shared,
        }
    }

    pub fn is_store(self) -> bool {
        matches!(self, Op::GlobalStore | Op::SharedStore | Op::CopyAsyncStore)
    }

    /// `global ld`, `shared st`, ...
    pub fn name(self) -> &'static str {
        match self {
            Op::GlobalLoad => "global ld",
            Op::CopyAsyncLoad => "cp.async ld",
            Op::CopyAsyncStore => "cp.async st",
            Op::GlobalStore => "global st",
            Op::SharedLoad => "shared ld",
            Op::SharedStore => "shared st",
        }
    }

    /// What a request costs in this memory: `sectors` or `wavefronts`.
    pub fn unit(self) -> &'static str {
        match self.space() {
            Space::Global => "sectors",
            Space::Shared => "wavefronts",
        }
    }
}

/// Counts of one [`Op`] at one line, or summed over lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Warp-level executions of the access.
    pub requests: u64,
    /// Thread-level accesses (32 per request of a full warp).
    pub accesses: u64,
    /// Bytes the threads asked for.
    pub bytes: u64,
    /// Global: 32-byte sectors touched. Shared: wavefronts.
    pub transactions: u64,
    /// The fewest transactions that serve the same requests: global, the
    /// sectors of each request's distinct bytes packed and aligned; shared,
    /// one wavefront per phase.
    pub ideal: u64,
}

impl Tally {
    pub(super) fn add(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.accesses += other.accesses;
        self.bytes += other.bytes;
        self.transactions += other.transactions;
        self.ideal += other.ideal;
    }

    /// Sectors (global) or wavefronts (shared) per request; 0 without requests.
    pub fn per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.transactions as f64 / self.requests as f64 }
    }

    /// The ideal per request.
    pub fn ideal_per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.ideal as f64 / self.requests as f64 }
    }

    /// Ideal over actual transactions, 1 when there were none: for global
    /// memory the share of the sectors' bytes that were asked for (when every
    /// byte is asked for once), for shared memory 1 / (the average conflict
    /// degree).
    pub fn efficiency(&self) -> f64 {
        if self.transactions == 0 { 1.0 } else { self.ideal as f64 / self.transactions as f64 }
    }
}

/// The counters of one line of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteCounters {
    pub site: Site,
    pub op: Op,
    /// Bytes one thread moves per access (4 for an f32, 16 for an F4).
    pub width: u32,
    pub tally: Tally,
    /// One request of this line, lane by lane: the first one counted (the
    /// first block's first warp that runs the line, its first execution).
    /// What a picture of the line draws.
    pub sample: Vec<LaneAccess>,
}

/// One lane's part of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneAccess {
    /// The lane, 0-31.
    pub lane: u32,
    /// Global memory: the byte offset from the start of the first 32-byte
    /// sector the request touches, so that the sectors are `addr / 32` and
    /// nothing depends on where the host put the buffer. Shared memory: the
    /// byte offset in the block's shared memory (bank `addr / 4 % 32`).
    pub addr: u64,
    pub bytes: u32,
}

/// The counters of one launch, one entry per (line, op), in source order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sites: Vec<SiteCounters>,
}

impl Counters {
    /// The sum over every line of `op`.
    pub fn total(&self, op: Op) -> Tally {
        let mut t = Tally::default();
        self.sites.iter().filter(|s| s.op == op).for_each(|s| t.add(&s.tally));
        t
    }

    /// The lines of `op`, in source order.
    pub fn of(&self, op: Op) -> impl Iterator<Item = &SiteCounters> {
        self.sites.iter().filter(move |s| s.op == op)
    }
}

/// What the counters keep of one (line, op): the widest access, the
/// tally, the first request's lanes, and the position in the launch's
/// order of the cluster they come from.
pub(super) type LineTally = (u32, Tally, Vec<LaneAccess>, u64);

/// One access as a thread logged it, for the counters.
#[derive(Clone, Copy)]
pub(super) struct Record {
    pub(super) site: u32,
    pub(super) instance: u32,
    pub(super) op: Op,
    pub(super) bytes: u32,
    /// Global: the host address; shared: the byte offset in the block's memory.
    pub(super) addr: usize,
}

impl Memory {
    /// Hands this block's records of thread `linear` over for counting.
    pub(super) fn end_block(&self, linear: u32, local: &ThreadMemory) {
        if self.counting {
            let records = core::mem::take(&mut *local.records.borrow_mut());
            *self.logs[linear as usize].lock().unwrap_or_else(|e| e.into_inner()) = records;
        }
        local.sites.borrow_mut().iter_mut().for_each(|s| s.2 = 0);
    }

    /// Counts the block's requests (one thread calls this, between two
    /// barriers, after every thread's [`Memory::end_block`]).
    pub(super) fn tally_block(&self) {
        if !self.counting {
            return;
        }
        let mut tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        let mut warp = Vec::new();
        for lanes in self.logs.chunks(super::WARP_SIZE as usize) {
            warp.clear();
            for (lane, log) in lanes.iter().enumerate() {
                let log = core::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
                warp.extend(log.into_iter().map(|r| (lane as u32, r)));
            }
            // A line may access both memories (a helper called with a
            // global and a shared view): the op keeps their requests apart.
            warp.sort_unstable_by_key(|&(lane, r)| (r.site, r.op, r.instance, lane));
            for group in warp.chunk_by(|a, b| (a.1.site, a.1.op, a.1.instance) == (b.1.site, b.1.op, b.1.instance)) {
                let r = group[0].1;
                let position = self.position();
                let (width, tally, sample, _) =
                    tallies.entry((r.site, r.op)).or_insert((r.bytes, Tally::default(), Vec::new(), position));
                *width = (*width).max(r.bytes);
                let lanes: Vec<(u32, usize, u32)> = group.iter().map(|&(l, r)| (l, r.addr, r.bytes)).collect();
                if sample.is_empty() {
                    let base = match r.op.space() {
                        Space::Global => lanes.iter().map(|l| l.1).min().unwrap_or(0) / 32 * 32,
                        Space::Shared => 0,
                    };
                    let at = |a: usize| (a - base) as u64;
                    sample.extend(lanes.iter().map(|&(lane, a, bytes)| LaneAccess { lane, addr: at(a), bytes }));
                }
                let (transactions, ideal) = cost::charge(r.op.space(), &lanes);
                tally.add(&Tally {
                    requests: 1,
                    accesses: lanes.len() as u64,
                    bytes: lanes.iter().map(|l| l.2 as u64).sum(),
                    transactions,
                    ideal,
                });
            }
        }
    }
}
