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
//! shared memory) against their ideal (`Tallies` keeps a worker's). The two sides of a `cp.async`
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
use super::types::Site;
pub use super::types::{LaneAccess, Op};
use crate::mem::Space;
use std::sync::Mutex;
use std::vec::Vec;

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
/// tally, the first request's lanes, and the index of the cluster they
/// come from.
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

/// A worker's counters: the records each thread of the running cluster
/// logged, and per (line id, op) what its requests cost so far.
pub(super) struct Tallies {
    logs: Vec<Vec<Record>>,
    /// By line id and op (`id * 6 + op`).
    lines: Vec<Option<LineTally>>,
    /// Room for the records of a warp whose lanes diverged.
    warp: Vec<(u32, Record)>,
}

/// Record lists no launch is using, emptied, with their room: a launch's
/// threads log into lists of the launches before, instead of growing new
/// ones (and faulting their pages in) access by access.
static ROOM: Mutex<Vec<Vec<Record>>> = Mutex::new(Vec::new());
/// The most lists [`ROOM`] keeps, and the most records one may hold room for.
const ROOM_LISTS: usize = 8192;
const ROOM_RECORDS: usize = 1 << 16;

/// An empty record list, with room if a launch left some.
pub(super) fn record_list() -> Vec<Record> {
    ROOM.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default()
}

/// Gives `list`'s room back for later launches.
pub(super) fn give_back(mut list: Vec<Record>) {
    if list.capacity() == 0 || list.capacity() > ROOM_RECORDS {
        return;
    }
    list.clear();
    let mut room = ROOM.lock().unwrap_or_else(|e| e.into_inner());
    if room.len() < ROOM_LISTS {
        room.push(list);
    }
}

impl Drop for Tallies {
    fn drop(&mut self) {
        self.logs.drain(..).for_each(give_back);
    }
}

impl Tallies {
    /// The counters of clusters of `threads` threads.
    pub(super) fn new(threads: u32) -> Tallies {
        Tallies { logs: (0..threads).map(|_| record_list()).collect(), lines: Vec::new(), warp: Vec::new() }
    }

    /// Thread `linear`'s records of the cluster that ended, swapped for the
    /// emptied list of the cluster before (its room kept for the next).
    pub(super) fn hand_over(&mut self, linear: u32, records: &mut Vec<Record>) {
        core::mem::swap(&mut self.logs[linear as usize], records);
        records.clear();
    }

    /// Counts the requests of cluster `cluster` (after every thread's
    /// [`Tallies::hand_over`]). A line keeps the sample of the lowest
    /// cluster that ran it.
    pub(super) fn tally_block(&mut self, cluster: u64) {
        let (mut warp, mut lanes) = (core::mem::take(&mut self.warp), Vec::new());
        for w in 0..self.logs.len().div_ceil(super::WARP_SIZE as usize) {
            let at = w * super::WARP_SIZE as usize;
            let logs = &self.logs[at..(at + super::WARP_SIZE as usize).min(self.logs.len())];
            // A line may access both memories (a helper called with a
            // global and a shared view): the op keeps their requests apart.
            let key = |r: &Record| (r.site, r.op, r.instance);
            let first = &logs[0];
            if logs.iter().all(|l| l.len() == first.len() && l.iter().zip(first).all(|(a, b)| key(a) == key(b))) {
                // Every lane made the same accesses in the same order (no
                // divergence): the i-th access of each lane is one request.
                for (i, &r) in first.iter().enumerate() {
                    lanes.clear();
                    lanes.extend(logs.iter().enumerate().map(|(lane, log)| (lane as u32, log[i].addr, log[i].bytes)));
                    count(&mut self.lines, cluster, r, &lanes);
                }
            } else {
                warp.clear();
                for (lane, log) in logs.iter().enumerate() {
                    warp.extend(log.iter().map(|&r| (lane as u32, r)));
                }
                warp.sort_unstable_by_key(|&(lane, r)| (r.site, r.op, r.instance, lane));
                for group in warp.chunk_by(|a, b| key(&a.1) == key(&b.1)) {
                    lanes.clear();
                    lanes.extend(group.iter().map(|&(l, r)| (l, r.addr, r.bytes)));
                    count(&mut self.lines, cluster, group[0].1, &lanes);
                }
            }
        }
        self.logs.iter_mut().for_each(Vec::clear);
        self.warp = warp;
    }

    /// Every line's counters, `sites` naming the line ids, each with the
    /// index of the cluster its sample comes from.
    pub(super) fn into_counters(mut self, sites: &[Site]) -> Vec<(u64, SiteCounters)> {
        core::mem::take(&mut self.lines)
            .into_iter()
            .enumerate()
            .filter_map(|(slot, line)| {
                let (site, op) = (sites[slot / Op::ALL.len()], Op::ALL[slot % Op::ALL.len()]);
                line.map(|(width, tally, sample, cluster)| (cluster, SiteCounters { site, op, width, tally, sample }))
            })
            .collect()
    }
}

/// One request of cluster `cluster`: `r`'s line and op, made by the
/// lanes' `(lane, address, bytes)`.
fn count(lines: &mut Vec<Option<LineTally>>, cluster: u64, r: Record, lanes: &[(u32, usize, u32)]) {
    let op = Op::ALL.iter().position(|&o| o == r.op).unwrap_or(0);
    let slot = r.site as usize * Op::ALL.len() + op;
    if lines.len() <= slot {
        lines.resize_with(slot + 1, || None);
    }
    let (width, tally, sample, from) =
        lines[slot].get_or_insert_with(|| (r.bytes, Tally::default(), Vec::new(), cluster));
    *width = (*width).max(r.bytes);
    if cluster < *from {
        (*from, *sample) = (cluster, Vec::new());
    }
    if sample.is_empty() {
        let base = match r.op.space() {
            Space::Global => lanes.iter().map(|l| l.1).min().unwrap_or(0) / 32 * 32,
            Space::Shared => 0,
        };
        let at = |a: usize| (a - base) as u64;
        sample.extend(lanes.iter().map(|&(lane, a, bytes)| LaneAccess { lane, addr: at(a), bytes }));
    }
    let (transactions, ideal) = cost::charge(r.op.space(), lanes);
    tally.add(&Tally {
        requests: 1,
        accesses: lanes.len() as u64,
        bytes: lanes.iter().map(|l| l.2 as u64).sum(),
        transactions,
        ideal,
    });
}
