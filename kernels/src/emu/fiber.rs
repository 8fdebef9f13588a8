//! Fibers: the threads of one block (of one cluster) as stackful
//! coroutines ([`corosensei`]) on one OS thread.
//!
//! A CUDA thread's body runs on a fiber of its own until it waits (at a
//! barrier, a shuffle, a `wgmma` or an mbarrier), where it suspends itself;
//! [`run`] resumes the fibers round by round until every one has returned.
//! A switch costs tens of nanoseconds, where an OS thread's costs
//! microseconds and a system call, and nothing depends on how the operating
//! system schedules: the same launch runs the same way every time. A round
//! resumes the fibers in order of their linear index, or in an order that a
//! seed draws anew each round ([`Schedule::Seeded`]).
//!
//! Stacks are reused: each is an mmap of [`EMU_STACK_BYTES`] of which only
//! touched pages are real, kept in a pool between launches.

use super::types::EMU_STACK_BYTES;
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::sync::Mutex;
use std::vec::Vec;

/// What a waiting thread suspends itself with.
pub type Fiber = Yielder<(), ()>;

/// The order in which a launch runs what CUDA leaves unordered: the blocks
/// (the clusters) of the grid, and the threads of a block between two of
/// their synchronisation points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Blocks in order of their linear index, threads in order of theirs.
    /// What the emulator does unless told otherwise: every run of a launch
    /// gives the same counters, findings and output.
    #[default]
    InOrder,
    /// Blocks in an order drawn from the seed, and a block's threads in an
    /// order drawn anew at each round: the same seed gives the same run,
    /// another seed another interleaving, to hunt races with.
    Seeded(u64),
}

impl Schedule {
    /// What a launch that names none runs: [`Schedule::Seeded`] with the
    /// number in the environment variable `COALESCE_EMU_SEED`, if it holds
    /// one, else [`Schedule::InOrder`].
    pub fn from_env() -> Schedule {
        static SEED: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        match SEED.get_or_init(|| std::env::var("COALESCE_EMU_SEED").ok()?.trim().parse().ok()) {
            Some(seed) => Schedule::Seeded(*seed),
            None => Schedule::InOrder,
        }
    }
}

/// SplitMix64: a stream of well-mixed numbers from a seed, enough to
/// shuffle an order.
pub(super) struct Mix(u64);

impl Mix {
    pub(super) fn new(seed: u64) -> Mix {
        Mix(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Shuffles `items` (Fisher-Yates).
    pub(super) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// Stacks that no launch is using, for the next one.
static POOL: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
/// The most stacks the pool keeps: a few launches' worth of the largest
/// blocks; what a launch returns beyond it is unmapped.
const POOL_MAX: usize = 4096;

/// The stacks of one OS thread's fibers, returned to the pool when dropped.
pub(super) struct Stacks(Vec<DefaultStack>);

impl Stacks {
    pub(super) fn new() -> Stacks {
        Stacks(Vec::new())
    }

    fn take(&mut self) -> DefaultStack {
        if let Some(s) = self.0.pop() {
            return s;
        }
        let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        pooled
            .unwrap_or_else(|| DefaultStack::new(EMU_STACK_BYTES).expect("the emulator could not map a fiber's stack"))
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let room = POOL_MAX.saturating_sub(pool.len());
        let keep = self.0.len().min(room);
        pool.extend(self.0.drain(..keep));
    }
}

/// Runs `body(i, fiber, limit)` for every `i < n`, each on a fiber of its
/// own whose stack ends at address `limit` (it grows down towards it),
/// until all have returned: round by round, resuming in order of `i`, or
/// in an order `mix` draws each round. A body that waits suspends its
/// fiber; one that can never go on must unwind (the barriers see to that),
/// so that every body returns. A panic that escapes a body is raised here,
/// once every other fiber has returned.
pub(super) fn run(stacks: &mut Stacks, n: u32, mut mix: Option<&mut Mix>, body: &(dyn Fn(u32, &Fiber, usize) + '_)) {
    let mut fibers: Vec<Option<Coroutine<(), (), (), DefaultStack>>> = (0..n)
        .map(|i| {
            let stack = stacks.take();
            let limit = stack.limit().get();
            // SAFETY: `body` outlives every fiber: each is resumed until it
            // returns (or dropped, which unwinds it) before `run` returns.
            Some(unsafe { Coroutine::with_stack_unchecked(stack, move |fiber: &Fiber, ()| body(i, fiber, limit)) })
        })
        .collect();
    let mut order: Vec<u32> = (0..n).collect();
    let mut escaped = None;
    let mut live = n;
    while live > 0 {
        if let Some(mix) = mix.as_deref_mut() {
            mix.shuffle(&mut order);
        }
        for &i in &order {
            let Some(fiber) = fibers[i as usize].as_mut() else { continue };
            let done = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fiber.resume(()))) {
                Ok(CoroutineResult::Yield(())) => false,
                Ok(CoroutineResult::Return(())) => true,
                Err(payload) => {
                    escaped.get_or_insert(payload);
                    true
                }
            };
            if done {
                if let Some(f) = fibers[i as usize].take() {
                    stacks.0.push(f.into_stack());
                }
                live -= 1;
            }
        }
    }
    if let Some(payload) = escaped {
        std::panic::resume_unwind(payload);
    }
}
