//! Exercises in memory coalescing and bank conflicts, graded by coalesce's
//! CPU emulator: no GPU, no CUDA, stable Rust.
//!
//! Each exercise is a kernel body in `src/exercises/`, generic over the
//! thread context like every kernel of the ladder, with the part to write
//! marked `your code`. [`grade`] runs it on the emulator at odd sizes
//! (output poisoned with NaN first) against an exact reference, counts its
//! memory requests, and compares the counters with the exercise's goals;
//! its reference solution is the ladder's own step. `cargo learn N` is the
//! command (`learn` in `.cargo/config.toml`).

pub mod exercises;

use coalesce::emu::{Op, Report, SiteCounters, staged};
use coalesce::kernels::LaunchDims;
use coalesce::kernels::emu::EmuCtx;
use coalesce::kernels::transpose::{TILE, TileLayout, Variant};
use coalesce::{Error, Result};
use rand::Rng;
use std::fmt::Write as _;

/// Which kernel an exercise runs: the learner's file, or the ladder's step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Yours,
    Solution,
}

/// What a goal asks of the counters (at an interior-only size, where every
/// request is a whole warp's).
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// Sectors (global) or wavefronts (shared) per request of this op, at
    /// most this many.
    AtMost(Op, f64),
    /// Bytes per request of this op, at least this many.
    BytesAtLeast(Op, f64),
    /// Exactly this many floats of shared memory per block.
    SharedFloats(u32),
    /// Requests of this op per FMA (a warp's request per 32 FMAs: one
    /// per FMA and lane), at most this many.
    PerFma(Op, f64),
}

/// One goal of an exercise, and what to think about when it is missed.
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    pub target: Target,
    pub hint: &'static str,
}

/// One exercise.
pub struct Exercise {
    pub number: u32,
    pub title: &'static str,
    /// The file the learner edits, from the repository's root.
    pub file: &'static str,
    /// The ladder step that solves it.
    pub solution: &'static str,
    pub goals: &'static [Goal],
    /// Runs the kernel on the emulator.
    run: fn(Which) -> Result<Run>,
}

/// What one exercise's kernel did on the emulator.
#[derive(Default)]
pub struct Run {
    /// The first wrong element, if any, at any of the sizes.
    pub wrong: Option<String>,
    /// The checker's findings, at every size.
    pub findings: Vec<String>,
    /// The launch counted (at its interior-only size).
    pub counted: Report,
    /// Shared memory the launch gave each block, in floats.
    pub shared_floats: u32,
    /// FMAs of the counted launch (0 where the kernel does none).
    pub fmas: u64,
}

/// A goal's measured value, and whether it is met.
pub struct Measured {
    pub goal: Goal,
    pub value: f64,
    pub met: bool,
    /// The line of the kernel the goal is about (its worst one), for a picture.
    pub line: Option<SiteCounters>,
}

/// An exercise's grade.
pub struct Grade {
    pub run: Run,
    pub measured: Vec<Measured>,
    /// Empty when everything is met; else, what is missing, in the order
    /// to fix it.
    pub problems: Vec<String>,
}

impl Grade {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Target {
    /// `global st sectors per request 32.0, target 4.0`
    pub fn describe(&self, value: f64) -> String {
        match *self {
            Target::AtMost(op, t) => format!("{} {} per request {value:.1}, target {t:.1}", op.name(), op.unit()),
            Target::BytesAtLeast(op, t) => format!("{} bytes per request {value:.0}, target {t:.0}", op.name()),
            Target::SharedFloats(t) => format!("shared memory {value:.0} floats per block, target {t}"),
            Target::PerFma(op, t) => format!("{} requests per FMA {value:.3}, target {t:.3}", op.name()),
        }
    }
}

/// Runs exercise `e` (yours or its solution) and grades it.
pub fn grade(e: &Exercise, which: Which) -> Result<Grade> {
    let run = (e.run)(which)?;
    let mut problems = Vec::new();
    if !run.findings.is_empty() {
        problems.push(format!(
            "the emulator's checker found:\n{}\n-> each finding names the line, the block and the thread: a read \
             of shared memory that no barrier orders after the write it needs is a race (every thread must pass a \
             barrier between the tile's writes and its reads)",
            run.findings.join("\n")
        ));
    }
    if let Some(wrong) = &run.wrong {
        problems.push(format!("wrong result: {wrong}"));
    }
    let counters = &run.counted.counters;
    let mut measured = Vec::new();
    for goal in e.goals {
        let (value, met, line) = match goal.target {
            Target::AtMost(op, t) => {
                let v = counters.total(op).per_request();
                let worst = counters.of(op).max_by(|a, b| a.tally.per_request().total_cmp(&b.tally.per_request()));
                (v, v <= t + 1e-9, worst.cloned())
            }
            Target::BytesAtLeast(op, t) => {
                let tally = counters.total(op);
                let v = if tally.requests == 0 { 0.0 } else { tally.bytes as f64 / tally.requests as f64 };
                let worst = counters.of(op).min_by_key(|c| c.width);
                (v, v + 1e-9 >= t, worst.cloned())
            }
            Target::SharedFloats(t) => (run.shared_floats as f64, run.shared_floats == t, None),
            Target::PerFma(op, t) => {
                // A request is a warp's: 32 lanes' accesses.
                let v = 32.0 * counters.total(op).requests as f64 / run.fmas.max(1) as f64;
                let worst = counters.of(op).max_by_key(|c| c.tally.requests);
                (v, v <= t + 1e-9, worst.cloned())
            }
        };
        if !met {
            problems.push(format!("{}\n-> {}", goal.target.describe(value), goal.hint));
        }
        measured.push(Measured { goal: *goal, value, met, line });
    }
    Ok(Grade { run, measured, problems })
}

/// Every exercise, in ladder order.
pub fn all() -> &'static [Exercise] {
    exercises::ALL
}

/// A fresh random `f32` in [-8, 8) per element, from the thread's
/// OS-seeded generator: every run checks other inputs.
fn random(len: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..len).map(|_| rng.random_range(-8.0f32..8.0)).collect()
}

/// The sizes a transpose exercise runs at: odd ones (edge tiles on both
/// sides) for correctness, then an interior-only one, which is counted.
const TRANSPOSE_SIZES: [(u32, u32); 3] = [(257, 251), (33, 95), (256, 256)];

/// Runs a transpose kernel at [`TRANSPOSE_SIZES`] with `dims(rows, cols)`.
fn transpose_run<F>(dims: impl Fn(u32, u32) -> LaunchDims, kernel: F) -> Result<Run>
where
    F: Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync,
{
    let mut run = Run::default();
    for (rows, cols) in TRANSPOSE_SIZES {
        let (r, c) = (rows as usize, cols as usize);
        let input = random(r * c);
        let mut output = vec![f32::NAN; r * c];
        let d = dims(rows, cols);
        run.shared_floats = d.shared_bytes / 4;
        let launch = staged(d, [&input], &mut output, |ctx, [i], o| kernel(ctx, i, o, rows, cols));
        run.record(launch, || {
            (0..r * c).find(|&k| output[(k % c) * r + k / c] != input[k]).map(|k| {
                let (row, col) = (k / c, k % c);
                format!(
                    "{rows}x{cols}: output[{col}][{row}] is {}, should be input[{row}][{col}] = {}",
                    output[col * r + row],
                    input[k]
                )
            })
        })?;
    }
    Ok(run)
}

/// The element counts a copy exercise runs at: odd for correctness (a
/// scalar tail), then a multiple of 4 warps' worth, which is counted.
const COPY_LENS: [usize; 2] = [100_003, 65_536];

fn copy_run<F>(kernel: F) -> Result<Run>
where
    F: Fn(&EmuCtx<'_>, *const f32, *mut f32, u64) + Sync,
{
    let mut run = Run::default();
    for len in COPY_LENS {
        let input = random(len);
        let mut output = vec![f32::NAN; len];
        let dims = coalesce::kernels::copy::copy_dims(len as u64, 8);
        let launch = staged(dims, [&input], &mut output, |ctx, [s], d| kernel(ctx, s, d, len as u64));
        run.record(launch, || {
            (0..len)
                .find(|&k| output[k] != input[k])
                .map(|k| format!("{len} floats: dst[{k}] is {}, should be src[{k}] = {}", output[k], input[k]))
        })?;
    }
    Ok(run)
}

impl Run {
    /// Takes one launch's outcome: the first launch with findings gives the
    /// findings shown (the first few, and how many more), the first wrong
    /// result is kept (`wrong` runs until one is found), and the last launch
    /// is the one counted. A launch that the emulator stopped (a panic in a
    /// kernel thread, a barrier some threads never reach) is the exercise's
    /// to report, as a finding; other errors are the harness's.
    fn record(&mut self, launch: Result<Report>, wrong: impl FnOnce() -> Option<String>) -> Result<()> {
        const SHOWN: usize = 4;
        let (report, mut findings) = match launch {
            Ok(report) => {
                let findings = report.findings.iter().map(|f| format!("  {f}")).collect();
                (report, findings)
            }
            Err(Error::Emulator(e)) => (Report::default(), vec![format!("  the emulator stopped the launch: {e}")]),
            Err(e) => return Err(e),
        };
        if self.findings.is_empty() {
            if findings.len() > SHOWN {
                let more = findings.len() - SHOWN;
                findings.truncate(SHOWN);
                findings.push(format!("  (and {more} more)"));
            }
            self.findings = findings;
        }
        if self.wrong.is_none() {
            self.wrong = wrong();
        }
        self.counted = report;
        Ok(())
    }
}

/// The `(m, n, k)` a GEMM exercise runs at: odd ones (edge blocks on every
/// side, a `k` that is not a multiple of the slice) for correctness, then an
/// interior-only one, which is counted.
const GEMM_SIZES: [(u32, u32, u32); 2] = [(97, 75, 29), (128, 128, 64)];

/// Runs a GEMM kernel, `C = A * B`, at [`GEMM_SIZES`] with `dims(m, n)`,
/// against a float64 product: each element within `k * 2^-23` of
/// `sum |a| |b|` (an FMA chain's rounding bound).
fn gemm_run<F>(dims: impl Fn(u32, u32) -> LaunchDims, kernel: F) -> Result<Run>
where
    F: Fn(&EmuCtx<'_>, *const f32, *const f32, *mut f32, coalesce::kernels::gemm::Problem) + Sync,
{
    let mut run = Run::default();
    for (m, n, k) in GEMM_SIZES {
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let (a, b) = (random(mu * ku), random(ku * nu));
        let mut c = vec![f32::NAN; mu * nu];
        let p = coalesce::kernels::gemm::Problem { m, n, k, alpha: 1.0, beta: 0.0 };
        let d = dims(m, n);
        run.shared_floats = d.shared_bytes / 4;
        let launch = staged(d, [&a, &b], &mut c, |ctx, [a, b], c| kernel(ctx, a, b, c, p));
        run.record(launch, || {
            (0..mu * nu).find_map(|e| {
                let (r, col) = (e / nu, e % nu);
                let terms = (0..ku).map(|j| a[r * ku + j] as f64 * b[j * nu + col] as f64);
                let (want, scale) = terms.fold((0.0, 0.0), |(s, t), x| (s + x, t + x.abs()));
                let bound = ku as f64 * f32::EPSILON as f64 * scale;
                let ok = (c[e] as f64 - want).abs() <= bound;
                (!ok).then(|| format!("{m}x{n}x{k}: C[{r}][{col}] is {}, should be {want} (within {bound:.2e})", c[e]))
            })
        })?;
        run.fmas = (mu * nu * ku) as u64;
    }
    Ok(run)
}

/// A transpose exercise's grid: the ladder step's, with `floats` of shared
/// memory per block when given.
fn step_dims(step: Variant, floats: Option<usize>) -> impl Fn(u32, u32) -> LaunchDims {
    move |rows, cols| {
        let mut d = step.launch_dims(rows, cols);
        if let Some(f) = floats {
            d.shared_bytes = 4 * f as u32;
        }
        d
    }
}

/// The floats of shared memory layout `L` takes for a [`TILE`] tile.
fn tile_floats<L: TileLayout>() -> usize {
    L::floats::<{ TILE as usize }>()
}

/// Lines of the counted launch, one per line of the kernel that accesses
/// memory: `e1_coalesce_stores.rs:40 global st  32.00 sectors (ideal 4.00)`.
pub fn counters_table(report: &Report) -> String {
    let mut s = String::new();
    for c in &report.counters.sites {
        let t = c.tally;
        let _ = writeln!(
            s,
            "  {:<38} {:>6.2} {} per request (ideal {:.2}), {} B per lane",
            coalesce::emu::picture::line_name(c),
            t.per_request(),
            c.op.unit(),
            t.ideal_per_request(),
            c.width
        );
    }
    s
}
