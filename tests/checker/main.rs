//! The emulator's checker and memory counters (`coalesce_kernels::emu`:
//! `checker`, `races`, `counters`, `cost`). One test binary
//! (`cargo test --test checker`), one idea per file:
//!
//! - `ladder.rs`: every transpose step and the copy kernel run under the
//!   checker at odd shapes with no finding, and their outputs are exact;
//!   their counters are the model's: sectors per global request,
//!   wavefronts per shared request.
//! - `findings.rs`: kernels broken on purpose (here, not in the library)
//!   are caught, each with the right finding at the right line: a missing
//!   barrier (a race), an off-by-one edge (out of bounds), a read of
//!   unwritten shared memory, a misaligned vector, a shared view past the
//!   launch's shared memory.
//! - `banks.rs`: the counters show a 32-way bank conflict, and the phases
//!   of 8- and 16-byte shared accesses and their broadcasts.
//! - `wgmma.rs`: a `wgmma` that reads its operands before the barrier after
//!   their stores (a race), or reads a row nobody stored (unwritten).
//! - `schedule.rs`: a launch reports the same on every run, and a seed
//!   reorders a racy kernel's threads but not a correct kernel's results.
//! - `robust.rs`: kernels as wrong as a first try end with the right error
//!   or finding, and touch no memory they were not given: an endless loop
//!   (the step limit), an access outside every buffer of the launch, two
//!   blocks writing one word (the global race shadow), a panic in every
//!   thread (one error, printed once), safe accesses, staged buffers.

#[path = "../common/mod.rs"]
mod common;
mod banks;
mod findings;
mod ladder;
mod robust;
mod schedule;
mod wgmma;

use coalesce::emu::{Finding, Report};
use coalesce::kernels::LaunchDims;
use coalesce::kernels::emu::{self as kemu, EmuCtx, SyncMutPtr, SyncPtr};

/// The files whose kernels the findings and counters point into.
const SOURCES: [(&str, &str); 4] = [
    ("findings.rs", include_str!("findings.rs")),
    ("banks.rs", include_str!("banks.rs")),
    ("wgmma.rs", include_str!("wgmma.rs")),
    ("robust.rs", include_str!("robust.rs")),
];

/// The line, in its file of [`SOURCES`], that ends with the comment
/// `marker` (one line in all of them), as `Site::line` gives it.
fn line_of(marker: &str) -> u32 {
    let quoted = format!("\"{marker}");
    let mut lines = SOURCES
        .iter()
        .flat_map(|(_, src)| src.lines().enumerate())
        .filter(|(_, l)| l.ends_with(marker) && !l.contains(&quoted));
    let (i, _) = lines.next().unwrap_or_else(|| panic!("no line ends with {marker:?}"));
    assert!(lines.next().is_none(), "more than one line ends with {marker:?}");
    i as u32 + 1
}

/// Whether `f` is at a line of this test's kernels ([`SOURCES`]).
fn here(f: &Finding) -> bool {
    SOURCES.iter().any(|(name, _)| f.site.file_name() == *name)
}

/// Runs `kernel` on one input and one output buffer under the counters.
fn run<K>(dims: LaunchDims, input: &[f32], output: &mut [f32], kernel: K) -> Report
where
    K: Fn(&EmuCtx<'_>, *const f32, *mut f32) + Sync,
{
    let (i, o) = (SyncPtr::new(input), SyncMutPtr::new(output));
    kemu::launch_checked(dims, |ctx| kernel(ctx, i.get(), o.get())).unwrap()
}
