//! The emulator's mbarriers: Hopper's shared-memory barriers with phases
//! and transaction counts (PTX ISA, "Parallel Synchronization and
//! Communication Instructions: mbarrier").
//!
//! Each barrier is kept per block, by its shared address: the arrivals
//! each phase expects (`count`), those still pending, the transaction
//! bytes still expected (tx-count), and the phase number (phases completed
//! since the init). A phase completes when its pending arrivals and its
//! tx-count are both zero: the phase number goes up, pending goes back to
//! `count`, and the threads waiting for that phase wake. The barrier's 8
//! bytes of shared memory hold nothing here: views that touch them are
//! reported ([`super::FindingKind::MbarrierBytes`]).
//!
//! For the checker ([`super::races`]), an arrival releases what the
//! arriving thread did and knew (a vector clock, joined into the phase);
//! a wait that returns acquires what the completed phase released, and the
//! phase itself, which orders the bulk copies (TMA) that counted their
//! bytes towards it.
//!
//! A wait that no thread can end fails the launch instead of hanging
//! ([`super::EmuError::MbarrierDeadlock`]): the launch counts its threads
//! that are not blocked, in a wait or at a barrier of any kind (a block's
//! end included); the thread whose blocking makes that count zero knows
//! that nobody is left to arrive.

use super::error::EmuError;
use super::fiber::Fiber;
use super::memory::Request;
use super::races::Event;
use super::types::unlinear;
use super::types::{MBARRIER_INITS, MBARRIER_MAX, MbarrierProblem};
use crate::Dim3;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use std::vec::Vec;

/// How long a wait may see its barrier make no progress (no arrival, no
/// transaction) before it fails the launch ([`EmuError::MbarrierTimeout`]):
/// a backstop for the hangs that the blocked-thread count does not see
/// (other threads of the block looping through shuffles or barriers, which
/// resume the waiting fiber each round without ever arriving), generous
/// enough for a slow debug build. The step limit ([`super::STEP_LIMIT`])
/// usually ends such a loop first, the looping thread's steps being
/// counted; this is for launches that raise it. A thread that loops with
/// no synchronisation point nor access at all never lets the others run,
/// and neither check sees it.
pub const MBARRIER_TIMEOUT: Duration = Duration::from_secs(120);

/// One barrier of the block.
struct Mbar {
    addr: u32,
    count: u32,
    pending: u32,
    tx: i64,
    /// Phases completed since the init: the current phase's number.
    phase: u32,
    /// The init, for [`MbarrierProblem::InitNotOrdered`].
    init: Event,
    /// What the current phase's arrivals released so far.
    release: Vec<u32>,
    /// What each of the last two completed phases released, by parity.
    completed: [Vec<u32>; 2],
    /// Arrivals and transactions so far, for the timeout.
    progress: u64,
}

/// A thread blocked in a wait.
struct Waiter {
    thread: u32,
    index: usize,
    parity: u32,
}

#[derive(Default)]
struct Registry {
    /// The block's barriers, in order of init (a second init of one address
    /// makes a new one: what threads knew of the old one's phases must not
    /// order the new one's copies).
    bars: Vec<Mbar>,
    waiting: Vec<Waiter>,
}

impl Registry {
    /// The index of the live barrier at `addr`.
    fn find(&self, addr: u32) -> Option<usize> {
        self.bars.iter().rposition(|b| b.addr == addr)
    }
}

/// The mbarriers of the block running, and what the waits need.
pub(super) struct Mbarriers {
    state: Mutex<Registry>,
}

/// What an mbarrier operation needs of the thread and the launch.
pub(super) struct Caller<'a> {
    pub request: Request<'a>,
    pub block: Dim3,
    pub shared_bytes: u32,
    /// Threads of the launch not blocked (see the module docs).
    pub running: &'a AtomicU32,
    pub abort: &'a AtomicBool,
    /// What a wait suspends.
    pub fiber: &'a Fiber,
}

impl Caller<'_> {
    fn error(&self, bar: u32, problem: MbarrierProblem) -> EmuError {
        EmuError::Mbarrier { block: self.block, thread: self.request.thread, bar, problem }
    }
}

/// Why a wait did not return.
pub(super) enum Stuck {
    /// The launch was abandoned by another thread.
    Abandoned,
    Failed(EmuError),
}

impl Mbarriers {
    pub(super) fn new() -> Mbarriers {
        Mbarriers { state: Mutex::new(Registry::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets the block's barriers (between blocks, every thread parked).
    pub(super) fn reset(&self) {
        *self.lock() = Registry::default();
    }

    /// The error of a launch in which every thread is blocked: the first
    /// waiter's, or `None` when nobody waits on an mbarrier (barriers alone
    /// that can never complete).
    pub(super) fn deadlock(&self, block: Dim3, threads: Dim3) -> Option<EmuError> {
        let reg = self.lock();
        let w = reg.waiting.first()?;
        let (bar, thread) = (reg.bars[w.index].addr, unlinear(w.thread as u64, threads));
        Some(EmuError::MbarrierDeadlock { block, thread, bar, parity: w.parity })
    }

    /// The barrier at `bar`, checked for use by this thread.
    fn live(&self, reg: &Registry, c: &Caller<'_>, bar: u32) -> Result<usize, EmuError> {
        let i = reg.find(bar).ok_or_else(|| c.error(bar, MbarrierProblem::Uninitialised))?;
        if !c.request.ordered(&reg.bars[i].init) {
            return Err(c.error(bar, MbarrierProblem::InitNotOrdered));
        }
        Ok(i)
    }

    /// `mbarrier.init`: a new barrier at `bar` expecting `count` arrivals
    /// a phase, in phase 0.
    pub(super) fn init(&self, c: &Caller<'_>, bar: u32, count: u32) -> Result<(), EmuError> {
        if !bar.is_multiple_of(8) {
            return Err(c.error(bar, MbarrierProblem::Misaligned));
        }
        if bar as u64 + 8 > c.shared_bytes as u64 {
            return Err(c.error(bar, MbarrierProblem::PastSharedMemory { shared_bytes: c.shared_bytes }));
        }
        if count == 0 || count > MBARRIER_MAX {
            return Err(c.error(bar, MbarrierProblem::BadCount(count)));
        }
        let mut reg = self.lock();
        if reg.bars.len() >= MBARRIER_INITS {
            return Err(c.error(bar, MbarrierProblem::TooManyInits));
        }
        let r = &c.request;
        let init = r.event(0);
        r.memory.races.mark_mbarrier(bar as usize, r.local.clock.epoch(), r.local.clock.block_start());
        reg.bars.push(Mbar {
            addr: bar,
            count,
            pending: count,
            tx: 0,
            phase: 0,
            init,
            release: Vec::new(),
            completed: [Vec::new(), Vec::new()],
            progress: 0,
        });
        Ok(())
    }

    /// `mbarrier.arrive` (`tx` 0) or `mbarrier.arrive.expect_tx`: `tx` more
    /// bytes expected, then one arrival, releasing this thread's accesses.
    pub(super) fn arrive(&self, c: &Caller<'_>, bar: u32, tx: u32) -> Result<(), EmuError> {
        let mut reg = self.lock();
        let i = self.live(&reg, c, bar)?;
        let b = &mut reg.bars[i];
        if b.pending == 0 {
            return Err(c.error(bar, MbarrierProblem::TooManyArrivals));
        }
        add_tx(b, tx as i64).map_err(|p| c.error(bar, p))?;
        c.request.local.clock.release(c.request.linear, &mut b.release);
        b.pending -= 1;
        b.progress += 1;
        self.complete_if_done(&mut reg, c, i);
        Ok(())
    }

    /// A bulk copy issued by this thread towards `bar`: `copy(agent, phase)`
    /// moves (and records) its bytes, as the agent of the barrier's copies
    /// in its current phase; then the copy's `bytes` count against the
    /// tx-count, which may complete the phase. The registry stays locked
    /// throughout, so that the phase the copy names is the one it counts in.
    pub(super) fn copy(
        &self, c: &Caller<'_>, bar: u32, bytes: u32, copy: impl FnOnce(u32, u32),
    ) -> Result<(), EmuError> {
        let mut reg = self.lock();
        let i = self.live(&reg, c, bar)?;
        copy(c.request.memory.threads + i as u32, reg.bars[i].phase);
        let b = &mut reg.bars[i];
        add_tx(b, -(bytes as i64)).map_err(|p| c.error(bar, p))?;
        b.progress += 1;
        self.complete_if_done(&mut reg, c, i);
        Ok(())
    }

    /// Completes barrier `i`'s phase if it has had all its arrivals and
    /// bytes: the phase releases what its arrivals released and its own
    /// number (which orders its copies), and its waiters wake, counted as
    /// running again by this thread so that the count never drops to zero
    /// while a wake-up is on its way.
    fn complete_if_done(&self, reg: &mut Registry, c: &Caller<'_>, i: usize) {
        let b = &mut reg.bars[i];
        if b.pending != 0 || b.tx != 0 {
            return;
        }
        let mut release = core::mem::take(&mut b.release);
        let agent = (c.request.memory.threads as usize) + i;
        if release.len() <= agent {
            release.resize(agent + 1, 0);
        }
        release[agent] = b.phase + 1;
        b.completed[(b.phase & 1) as usize] = release;
        b.phase += 1;
        b.pending = b.count;
        let before = reg.waiting.len();
        reg.waiting.retain(|w| w.index != i);
        c.running.fetch_add((before - reg.waiting.len()) as u32, Ordering::SeqCst);
    }

    /// `mbarrier.try_wait.parity` until it succeeds: returns once the phase
    /// of parity `parity` has completed, that is, at once if the current
    /// phase's parity is the other one (the last completed phase, or none
    /// yet), else when the current phase completes, acquiring what it
    /// released. (The hardware reads the parity again; a waiter woken here
    /// returns even if the barrier went on to a further phase meanwhile.)
    pub(super) fn wait(&self, c: &Caller<'_>, bar: u32, parity: u32) -> Result<(), Stuck> {
        let parity = parity & 1;
        let mut reg = self.lock();
        let i = self.live(&reg, c, bar).map_err(Stuck::Failed)?;
        let b = &reg.bars[i];
        if b.phase & 1 != parity {
            if b.phase > 0 {
                c.request.local.clock.acquire(&b.completed[((b.phase - 1) & 1) as usize]);
            }
            return Ok(());
        }
        let target = b.phase;
        reg.waiting.push(Waiter { thread: c.request.linear, index: i, parity });
        if c.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Every other thread is blocked too: nobody will arrive.
            let thread = c.request.thread;
            return Err(Stuck::Failed(EmuError::MbarrierDeadlock { block: c.block, thread, bar, parity }));
        }
        let (mut seen, mut since) = (reg.bars[i].progress, Instant::now());
        // No lock across a suspension: the fibers that run meanwhile share
        // this OS thread.
        drop(reg);
        loop {
            c.fiber.suspend(());
            if c.abort.load(Ordering::Acquire) {
                return Err(Stuck::Abandoned);
            }
            let reg = self.lock();
            let b = &reg.bars[i];
            if b.phase > target {
                c.request.local.clock.acquire(&b.completed[(target & 1) as usize]);
                return Ok(());
            }
            if b.progress != seen {
                (seen, since) = (b.progress, Instant::now());
            } else if since.elapsed() >= MBARRIER_TIMEOUT {
                let (thread, seconds) = (c.request.thread, MBARRIER_TIMEOUT.as_secs());
                return Err(Stuck::Failed(EmuError::MbarrierTimeout { block: c.block, thread, bar, parity, seconds }));
            }
        }
    }
}

/// Adds `bytes` (negative: delivered) to the tx-count of `b`, within range.
fn add_tx(b: &mut Mbar, bytes: i64) -> Result<(), MbarrierProblem> {
    let tx = b.tx + bytes;
    if tx.unsigned_abs() > MBARRIER_MAX as u64 {
        return Err(MbarrierProblem::TxCountOverflow);
    }
    b.tx = tx;
    Ok(())
}
