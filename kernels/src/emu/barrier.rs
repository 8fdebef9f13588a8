//! The emulator's barriers: the block's `sync_threads`, and the meeting
//! points of a warp's shuffle and a warpgroup's `wgmma`.
//!
//! Real hardware may hang, or silently pair a thread with the wrong
//! barrier, when not every thread arrives. These barriers notice instead:
//! arrivals that disagree on where they are (inside the kernel or at the
//! block's end) are a divergence, and an arrival that finds no thread of
//! the launch left running is a deadlock. Either way the launch fails and
//! every waiting thread unwinds, so a broken kernel ends with an error.
//!
//! The threads of a block are fibers of one OS thread ([`super::fiber`]):
//! a thread that waits suspends itself, and the block's other threads run
//! until the barrier completes.

use super::fiber::Fiber;
use std::boxed::Box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Where a thread is when it waits: inside the kernel or at the block's end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Waypoint {
    Kernel,
    BlockEnd,
}

/// A reusable barrier that notices divergence and aborts instead of hanging.
pub(super) struct Barrier {
    parties: u32,
    state: Mutex<BarrierState>,
}

struct BarrierState {
    arrived: u32,
    generation: u64,
    site: Option<Waypoint>,
    diverged: bool,
}

/// Unwinds a waiting thread when the launch is abandoned.
pub(super) struct Abandoned;

/// Why a barrier did not complete.
pub(super) enum Unmet {
    /// Its arrivals disagreed on the site (the last arrival is told).
    Diverged,
    /// Every thread of the launch is blocked, so it never will (the thread
    /// whose blocking made it so is told).
    Deadlock,
}

impl Barrier {
    pub(super) fn new(parties: u32) -> Self {
        Barrier { parties, state: Mutex::new(BarrierState { arrived: 0, generation: 0, site: None, diverged: false }) }
    }

    /// Waits for all parties. Returns `Err` to the last arrival if arrivals
    /// disagreed on the site, and to an arrival that finds every thread of
    /// the launch blocked (`running`, the threads that are not, drops to
    /// zero); every other thread then unwinds with [`Abandoned`], as it
    /// does whenever `abort` is raised. The last arrival counts the others
    /// as running again. A waiting thread suspends its fiber: the block's
    /// other threads run until the last arrival completes the barrier.
    pub(super) fn wait(
        &self, site: Waypoint, abort: &AtomicBool, running: &AtomicU32, fiber: &Fiber,
    ) -> Result<(), Unmet> {
        let generation = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if abort.load(Ordering::Acquire) {
                drop(s);
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            if s.site.is_some_and(|first| first != site) {
                s.diverged = true;
            }
            s.site.get_or_insert(site);
            s.arrived += 1;
            if s.arrived == self.parties {
                let diverged = s.diverged;
                s.arrived = 0;
                s.site = None;
                s.diverged = false;
                s.generation += 1;
                running.fetch_add(self.parties - 1, Ordering::SeqCst);
                if diverged {
                    abort.store(true, Ordering::Release);
                }
                return if diverged { Err(Unmet::Diverged) } else { Ok(()) };
            }
            if running.fetch_sub(1, Ordering::SeqCst) == 1 {
                return Err(Unmet::Deadlock);
            }
            s.generation
        };
        // The guard is dropped: a suspended fiber holds no lock, since the
        // fibers that run meanwhile share this OS thread.
        loop {
            fiber.suspend(());
            if abort.load(Ordering::Acquire) {
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            if self.state.lock().unwrap_or_else(|e| e.into_inner()).generation != generation {
                return Ok(());
            }
        }
    }
}
