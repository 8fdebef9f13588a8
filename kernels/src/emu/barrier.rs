//! The emulator's barriers: the block's `sync_threads`, and the meeting
//! points of a warp's shuffle and a warpgroup's `wgmma`.
//!
//! Real hardware may hang, or silently pair a thread with the wrong
//! barrier, when not every thread arrives. These barriers notice instead:
//! arrivals that disagree on where they are (inside the kernel or at the
//! block's end) are a divergence, and an arrival that finds no thread of
//! the launch left running is a deadlock. Either way the launch fails and
//! every waiting thread unwinds, so a broken kernel ends with an error.

use std::boxed::Box;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

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
    cv: Condvar,
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
        Barrier {
            parties,
            state: Mutex::new(BarrierState { arrived: 0, generation: 0, site: None, diverged: false }),
            cv: Condvar::new(),
        }
    }

    /// Waits for all parties. Returns `Err` to the last arrival if arrivals
    /// disagreed on the site, and to an arrival that finds every thread of
    /// the launch blocked (`running`, the threads that are not, drops to
    /// zero); every other thread then unwinds with [`Abandoned`], as it
    /// does whenever `abort` is raised. The last arrival counts the others
    /// as running again before it wakes them.
    pub(super) fn wait(&self, site: Waypoint, abort: &AtomicBool, running: &AtomicU32) -> Result<(), Unmet> {
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
            self.cv.notify_all();
            return if diverged { Err(Unmet::Diverged) } else { Ok(()) };
        }
        if running.fetch_sub(1, Ordering::SeqCst) == 1 {
            return Err(Unmet::Deadlock);
        }
        let generation = s.generation;
        loop {
            if abort.load(Ordering::Acquire) {
                drop(s);
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            if s.generation != generation {
                return Ok(());
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(super) fn wake_all(&self) {
        let _guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
}
