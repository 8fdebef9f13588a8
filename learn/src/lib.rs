//! Exercises in memory coalescing and bank conflicts, graded by coalesce's
//! CPU emulator: no GPU, no CUDA, stable Rust.
//!
//! Each exercise is a kernel body in `src/exercises/`, generic over the
//! thread context like every kernel of the ladder, with the part to write
//! marked `your code`. Exercise files are `#![forbid(unsafe_code)]`: they
//! read and write through the views' checked methods (`get`, `set`), so
//! every access they make is one the emulator sees, checks and counts.
//!
//! [`grade`] judges a submission ([`Submission`]: the learner's file, the
//! ladder's step that solves it, or any kernel of the same shape, as the
//! wrong-solution tests give):
//!
//! - **Correct**, at odd sizes (edge tiles, scalar tails) and at one drawn
//!   at random on every run, with the output poisoned with NaN first,
//!   against an exact reference (a float64 one for GEMM), and once more in
//!   a shuffled block and thread order.
//! - **Checked**: the emulator's findings (out of bounds, outside every
//!   buffer, misaligned, races in shared memory and between blocks, reads
//!   of unwritten shared memory), and what stops a launch (a panic, a
//!   barrier some threads skip, a loop that does not end), each with a
//!   hint of its own.
//! - **Its own work**: every counted access is made by the submission's
//!   file (or, for exercises 3 and 4, the kernel given around its layout),
//!   not by a ladder step it calls, and the file names none of the
//!   ladder's answers (its layouts, `tiled_with`, `Variant`).
//! - **Counted**, at two sizes whose blocks are all interior (one drawn at
//!   random): every line meets its goal, an op the exercise needs is
//!   there, the bytes moved per element (or per FMA) are the ideal's, and
//!   the shared memory per block is what the exercise needs and within the
//!   48 KB a block gets without opting in.
//!
//! `cargo learn N` is the command (`learn` in `.cargo/config.toml`).

pub mod exercises;

use coalesce::emu::{EmuError, Finding, FindingKind, Op, Options, Report, Schedule, SiteCounters, staged_with};
use coalesce::kernels::LaunchDims;
use coalesce::kernels::emu::EmuCtx;
use coalesce::kernels::gemm::Problem;
use coalesce::kernels::transpose::Variant;
use coalesce::{Error, Result};
use rand::Rng;
use std::fmt::Write as _;

/// Which kernel an exercise runs: the learner's file, or the ladder's step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Yours,
    Solution,
}

/// What a goal asks of the counters of one launch whose blocks are all
/// interior (every request a whole warp's).
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// Sectors (global) or wavefronts (shared) per request of this op, at
    /// most this many, at every line that makes it.
    AtMost(Op, f64),
    /// Bytes per request of this op, at least this many, at every line
    /// that makes it.
    BytesAtLeast(Op, f64),
    /// Floats of shared memory per block, at most this many.
    SharedFloats(u32),
    /// Load requests of every kind, global and shared, per FMA (a warp's
    /// request per 32 FMAs: one per FMA and lane), at most this many.
    LoadsPerFma(f64),
    /// Bytes this op moves per unit of work, at most this many (and, for
    /// the output's stores, exactly: each output element written once).
    Traffic(Op, Per, f64),
    /// Lanes per request at every line: 32, a whole warp, where every
    /// block is interior (a thread that does its block's work alone makes
    /// cheap one-lane requests, and many of them).
    FullWarps,
}

/// The unit of work a [`Target::Traffic`] counts bytes against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// An element of the output.
    Element,
    /// A fused multiply-add of a GEMM.
    Fma,
}

/// One goal of an exercise: what to think about when it is missed (a
/// question that leads to the idea), and the answer (`--answer`).
#[derive(Clone, Copy, Debug)]
pub struct Goal {
    pub target: Target,
    pub hint: &'static str,
    pub answer: &'static str,
}

/// The launch an exercise grades its kernels with.
#[derive(Clone, Copy, Debug)]
pub enum Launch {
    /// A transpose, `(rows, cols)`, on this ladder step's grid.
    Transpose(Variant),
    /// A copy of `len` floats, on the copy kernel's grid.
    Copy,
    /// `C = A * B`, on the grid of GEMM step 3 (blocktile_1d).
    Gemm,
}

/// A transpose body: `(ctx, input, output, rows, cols)`.
pub type TransposeBody<'k> = dyn Fn(&EmuCtx<'_>, *const f32, *mut f32, u32, u32) + Sync + 'k;
/// A copy body: `(ctx, src, dst, len)`.
pub type CopyBody<'k> = dyn Fn(&EmuCtx<'_>, *const f32, *mut f32, u64) + Sync + 'k;
/// A GEMM body: `(ctx, a, b, c, problem)`.
pub type GemmBody<'k> = dyn Fn(&EmuCtx<'_>, *const f32, *const f32, *mut f32, Problem) + Sync + 'k;

/// A kernel body of one of the exercises' shapes.
#[derive(Clone, Copy)]
pub enum Body<'k> {
    Transpose(&'k TransposeBody<'k>),
    Copy(&'k CopyBody<'k>),
    Gemm(&'k GemmBody<'k>),
}

/// What is graded: a body, the shared memory it asks for, and where its
/// accesses must come from.
#[derive(Clone, Copy)]
pub struct Submission<'k> {
    pub body: Body<'k>,
    /// Floats of shared memory per block that the kernel asks for (a tile
    /// layout's); `None`: the exercise's launch gives what its step needs.
    pub shared_floats: Option<usize>,
    /// The file that must make every counted access (`None`: the ladder's
    /// own step, graded as the reference).
    pub file: Option<&'k str>,
    /// The text of that file, which must keep its `#![forbid(unsafe_code)]`
    /// (`None`: not checked).
    pub source: Option<&'k str>,
}

/// One exercise.
pub struct Exercise {
    pub number: u32,
    pub title: &'static str,
    /// The file the learner edits, from the repository's root.
    pub file: &'static str,
    /// That file's text.
    pub source: &'static str,
    /// The file of the kernel around the learner's code where that is not
    /// theirs (exercises 3 and 4: the learner writes a tile's layout, the
    /// tiled transpose around it is given): its accesses count as theirs.
    pub kernel: Option<&'static str>,
    /// The ladder step that solves it.
    pub solution: &'static str,
    pub goals: &'static [Goal],
    pub launch: Launch,
    /// Hands the learner's kernel, or the solution, to `grade` (the kernels
    /// are generic over the context, whose lifetime a plain function
    /// pointer cannot name: each is a closure made here).
    submit: fn(Which, Grader<'_>) -> Result<Grade>,
}

/// What an exercise hands its kernel to: [`grade_submission`], for it.
pub type Grader<'g> = &'g mut dyn FnMut(Submission<'_>) -> Result<Grade>;

/// A size the kernel ran at, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// `(rows, cols, 0)` for a transpose, `(len, 0, 0)` for a copy, `(m, n, k)`.
    pub dims: (u64, u64, u64),
    /// Drawn at random on this run.
    pub drawn: bool,
}

impl core::fmt::Display for Size {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.dims {
            (len, 0, 0) => write!(f, "{len} floats")?,
            (r, c, 0) => write!(f, "{r}x{c}")?,
            (m, n, k) => write!(f, "{m}x{n}x{k}")?,
        }
        if self.drawn { write!(f, " (drawn at random)") } else { Ok(()) }
    }
}

/// Why an emulated launch stopped, or what its checker found: one problem
/// for the learner, with the hint of its kind.
#[derive(Clone, Debug)]
pub struct Trouble {
    /// What happened, as the emulator says it.
    pub what: String,
    pub hint: &'static str,
    /// The finding, where it is one (to draw a race).
    pub finding: Option<Finding>,
}

/// What one exercise's kernel did on the emulator.
#[derive(Default)]
pub struct Run {
    /// The sizes checked for correctness.
    pub checked: Vec<Size>,
    /// The first wrong element, if any, at any of the sizes.
    pub wrong: Option<String>,
    /// The checker's findings and the launch's failures: the first
    /// launch's that had any, folded by kind.
    pub troubles: Vec<Trouble>,
    /// The launches counted, every block interior.
    pub counted: Vec<Counted>,
    /// Shared memory the launch gave each block, in floats.
    pub shared_floats: u32,
}

/// One counted launch: its size, its report, and the work it did.
pub struct Counted {
    pub size: Size,
    pub report: Report,
    /// FMAs (0 where the kernel does none).
    pub fmas: u64,
    /// Output elements.
    pub elements: u64,
}

/// A goal's measured value (at the counted size where it is worst), and
/// whether it is met there and at every other.
pub struct Measured {
    pub goal: Goal,
    pub value: f64,
    pub met: bool,
    /// No line made the op the goal is about.
    pub missing: bool,
    /// The counted size the value is from.
    pub size: Option<Size>,
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
    /// The answers of the goals missed (`--answer`).
    pub answers: Vec<&'static str>,
}

impl Grade {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Shared memory a block gets without opting in (`cudaFuncSetAttribute`
/// raises it on GPUs that have more): 48 KB on every GPU since Kepler.
pub const SHARED_LIMIT_BYTES: u32 = 48 * 1024;

/// The most steps (accesses and synchronisations) one emulated thread may
/// take in one block: a thousand times what a thread of the largest
/// exercise takes, so that a loop that does not end stops within a second.
pub const STEP_LIMIT: u64 = 1 << 20;

impl Target {
    /// `global st sectors per request 32.0 (worst line), target 4.0`
    pub fn describe(&self, value: f64) -> String {
        match *self {
            Target::AtMost(op, t) => {
                format!("{} {} per request {value:.1} (worst line), target {t:.1}", op.name(), op.unit())
            }
            Target::BytesAtLeast(op, t) => {
                format!("{} bytes per request {value:.0} (worst line), target {t:.0}", op.name())
            }
            Target::SharedFloats(t) => format!("shared memory {value:.0} floats per block, target at most {t}"),
            Target::LoadsPerFma(t) => format!("load requests (global and shared) per FMA {value:.3}, target {t:.3}"),
            Target::FullWarps => format!("lanes per request {value:.1} (worst line), target 32"),
            Target::Traffic(op, per, t) => {
                let unit = match per {
                    Per::Element => "output element",
                    Per::Fma => "FMA",
                };
                let exactly = if Target::exact(op, per) { "exactly" } else { "at most" };
                format!("{} bytes per {unit} {value:.3}, target {exactly} {t:.3}", op.name())
            }
        }
    }

    /// Whether the target names an op that the kernel must make.
    fn op(&self) -> Option<Op> {
        match *self {
            Target::AtMost(op, _) | Target::BytesAtLeast(op, _) | Target::Traffic(op, ..) => Some(op),
            Target::SharedFloats(_) | Target::LoadsPerFma(_) | Target::FullWarps => None,
        }
    }

    /// The output's stores move exactly one element each: fewer bytes
    /// means outputs written where the emulator cannot see.
    fn exact(op: Op, per: Per) -> bool {
        op == Op::GlobalStore && per == Per::Element
    }

    /// The value of this target in `report` (`None` for an op no line
    /// made), whether it is met, and its worst line.
    fn measure(&self, report: &Report, shared_floats: u32, (fmas, elements): (u64, u64)) -> Measure {
        let counters = &report.counters;
        let missing = self.op().is_some_and(|op| counters.total(op).requests == 0);
        let (value, met, line) = match *self {
            Target::AtMost(op, t) => {
                let worst = counters.of(op).max_by(|a, b| a.tally.per_request().total_cmp(&b.tally.per_request()));
                let v = worst.map_or(0.0, |w| w.tally.per_request());
                (v, v <= t + 1e-9, worst.cloned())
            }
            Target::BytesAtLeast(op, t) => {
                let per = |c: &SiteCounters| c.tally.bytes as f64 / c.tally.requests.max(1) as f64;
                let worst = counters.of(op).min_by(|a, b| per(a).total_cmp(&per(b)));
                let v = worst.map_or(0.0, per);
                (v, v + 1e-9 >= t, worst.cloned())
            }
            Target::SharedFloats(t) => (shared_floats as f64, shared_floats <= t, None),
            Target::FullWarps => {
                let lanes = |c: &SiteCounters| c.tally.accesses as f64 / c.tally.requests.max(1) as f64;
                let worst = counters.sites.iter().min_by(|a, b| lanes(a).total_cmp(&lanes(b)));
                let v = worst.map_or(32.0, lanes);
                (v, v + 1e-9 >= 32.0, worst.cloned())
            }
            Target::LoadsPerFma(t) => {
                let loads: u64 = [Op::GlobalLoad, Op::SharedLoad].map(|op| counters.total(op).requests).iter().sum();
                let v = 32.0 * loads as f64 / fmas.max(1) as f64;
                let worst = counters.sites.iter().filter(|c| !c.op.is_store()).max_by_key(|c| c.tally.requests);
                (v, v <= t + 1e-9, worst.cloned())
            }
            Target::Traffic(op, per, t) => {
                let units = match per {
                    Per::Element => elements,
                    Per::Fma => fmas,
                };
                let v = counters.total(op).bytes as f64 / units.max(1) as f64;
                let exact_ok = !Target::exact(op, per) || v + 1e-9 >= t;
                let worst = counters.of(op).max_by_key(|c| c.tally.bytes);
                (v, v <= t + 1e-9 && exact_ok, worst.cloned())
            }
        };
        Measure { value, met: met && !missing, missing, line }
    }
}

struct Measure {
    value: f64,
    met: bool,
    missing: bool,
    line: Option<SiteCounters>,
}

/// The ladder's own answers, which a learner's file may not name: a layout
/// (`Padded::at`) or a step's kernel (`Variant::run`, `tiled_with`) does
/// the work the exercise teaches, and a layout's arithmetic makes no access
/// the counters would trace to another file.
const LADDER_ANSWERS: [&str; 5] = ["Padded", "Swizzled", "Plain", "tiled_with", "Variant"];

/// The first of [`LADDER_ANSWERS`] that the code of `source` (its lines
/// that are not comments) names as a whole word.
fn ladder_answer_named(source: &str) -> Option<&'static str> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let code = || source.lines().filter(|l| !l.trim_start().starts_with("//"));
    LADDER_ANSWERS.into_iter().find(|name| {
        code().any(|line| {
            line.match_indices(name)
                .any(|(at, _)| !line[..at].ends_with(word) && !line[at + name.len()..].starts_with(word))
        })
    })
}

/// Runs exercise `e` (yours or its solution) and grades it.
pub fn grade(e: &Exercise, which: Which) -> Result<Grade> {
    (e.submit)(which, &mut |s| grade_submission(e, s))
}

/// Grades `s` as a solution of exercise `e`: correctness, the checker's
/// findings, whose work it is, and the goals at every counted size.
///
/// # Panics
/// When `s`'s body is not of the shape `e.launch` runs (a copy body for
/// a transpose exercise, say).
pub fn grade_submission(e: &Exercise, s: Submission<'_>) -> Result<Grade> {
    let run = run(e.launch, &s)?;
    let mut problems = Vec::new();
    if let Some(name) = s.source.and_then(ladder_answer_named) {
        problems.push(format!(
            "your file names `{name}`, an answer from the ladder (coalesce::kernels)\n-> the exercise grades what you \
             write: a layout or kernel taken from the ladder does the work without you. Write your own in its place."
        ));
    }
    if let Some(source) = s.source
        && !source.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]")
    {
        problems.push(
            "your file no longer starts with #![forbid(unsafe_code)]\n-> the grader counts the accesses made \
             through views (get, set); an access through a raw pointer is invisible to it. Put the line back."
                .to_owned(),
        );
    }
    for t in &run.troubles {
        problems.push(if t.hint.is_empty() { t.what.clone() } else { format!("{}\n-> {}", t.what, t.hint) });
    }
    if let Some(wrong) = &run.wrong {
        problems.push(format!(
            "wrong result: {wrong}\n-> which element does each thread move, and does every thread of every \
             block move its share once? The comment at the top of the file says what the kernel must do."
        ));
    }
    if let Some(file) = s.file {
        let foreign: Vec<String> = run
            .counted
            .iter()
            .flat_map(|c| &c.report.counters.sites)
            .filter(|c| c.site.file != file && Some(c.site.file) != e.kernel)
            .map(|c| c.site.to_string())
            .collect();
        if let Some(first) = foreign.first() {
            problems.push(format!(
                "counted accesses come from {first}{}, not from {file}\n-> the exercise grades the loads and \
                 stores you write: calling a ladder step (or another file's kernel) does the work somewhere \
                 the exercise cannot teach. Write the accesses in your file.",
                if foreign.len() > 1 { format!(" and {} other line(s)", foreign.len() - 1) } else { String::new() }
            ));
        }
    }
    if run.shared_floats * 4 > SHARED_LIMIT_BYTES {
        problems.push(format!(
            "shared memory {} bytes per block, past the {SHARED_LIMIT_BYTES} a block gets without opting in\n-> \
             a GPU refuses to launch this block as it is: how many floats does one tile need?",
            run.shared_floats * 4
        ));
    }
    let mut measured = Vec::new();
    let mut answers = Vec::new();
    for goal in e.goals {
        // The worst of the counted sizes: a goal met at one size only is not met.
        let mut worst: Option<(Size, Measure)> = None;
        for c in &run.counted {
            let m = goal.target.measure(&c.report, run.shared_floats, (c.fmas, c.elements));
            let replace = match &worst {
                None => true,
                Some((_, w)) => (w.met && !m.met) || (w.met == m.met && worse(&goal.target, m.value, w.value)),
            };
            if replace {
                worst = Some((c.size, m));
            }
        }
        let Some((size, m)) = worst else { continue };
        if !m.met {
            let op = goal.target.op().map_or("", |op| op.name());
            let what = if m.missing {
                format!(
                    "no {op} request was counted at {size}\n-> the exercise needs this access, made through a view \
                     (ctx.global, ctx.global_mut, ctx.shared) with get or set, so that the emulator sees it"
                )
            } else {
                format!("{} at {size}\n-> {}", goal.target.describe(m.value), goal.hint)
            };
            // A missing op is said once, whichever goals need it.
            if !problems.contains(&what) {
                problems.push(what);
                answers.push(goal.answer);
            }
        }
        measured.push(Measured {
            goal: *goal,
            value: m.value,
            met: m.met,
            missing: m.missing,
            size: Some(size),
            line: m.line,
        });
    }
    Ok(Grade { run, measured, problems, answers })
}

/// Whether `a` is further from meeting `target` than `b`.
fn worse(target: &Target, a: f64, b: f64) -> bool {
    match target {
        Target::BytesAtLeast(..) | Target::FullWarps => a < b,
        _ => a > b,
    }
}

/// Every exercise, in ladder order.
pub fn all() -> &'static [Exercise] {
    exercises::ALL
}

/// The `rand` generator of this thread, seeded by the OS: every run
/// checks other inputs and another drawn size.
fn random(len: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..len).map(|_| rng.random_range(-8.0f32..8.0)).collect()
}

/// The sizes a launch shape runs at: for correctness (odd: edge tiles,
/// scalar tails; one drawn at random), and counted (every block interior;
/// one drawn at random).
fn sizes(launch: Launch) -> (Vec<Size>, Vec<Size>) {
    let mut rng = rand::rng();
    let fixed = |dims| Size { dims, drawn: false };
    let drawn = |dims| Size { dims, drawn: true };
    match launch {
        Launch::Transpose(_) => {
            // An odd size has a ragged edge in at least one dimension.
            let (r, c) = loop {
                let (r, c) = (rng.random_range(1..=300u64), rng.random_range(1..=300u64));
                if r % 32 != 0 || c % 32 != 0 {
                    break (r, c);
                }
            };
            // Never the fixed counted size: a kernel tuned to it must meet another.
            let (a, b) = loop {
                let (a, b) = (rng.random_range(2..=9u64), rng.random_range(2..=9u64));
                if (a, b) != (8, 8) {
                    break (a, b);
                }
            };
            (
                vec![fixed((257, 251, 0)), fixed((33, 95, 0)), drawn((r, c, 0))],
                vec![fixed((256, 256, 0)), drawn((32 * a, 32 * b, 0))],
            )
        }
        Launch::Copy => {
            let len = 4 * rng.random_range(250..50_000u64) + rng.random_range(1..4);
            let counted = loop {
                let n = 128 * rng.random_range(256..=1024u64);
                if n != 65_536 {
                    break n;
                }
            };
            (vec![fixed((100_003, 0, 0)), drawn((len, 0, 0))], vec![fixed((65_536, 0, 0)), drawn((counted, 0, 0))])
        }
        Launch::Gemm => {
            let odd = (rng.random_range(1..=150u64), rng.random_range(1..=150u64), rng.random_range(1..=40u64));
            let counted = loop {
                let d =
                    (64 * rng.random_range(1..=3u64), 64 * rng.random_range(1..=3u64), 8 * rng.random_range(4..=10u64));
                if d != (128, 128, 64) {
                    break d;
                }
            };
            (vec![fixed((97, 75, 29)), drawn(odd)], vec![fixed((128, 128, 64)), drawn(counted)])
        }
    }
}

/// How one launch runs: the emulator's options for the grader.
fn options(schedule: Schedule) -> Options {
    Options::default().with_schedule(schedule).with_step_limit(STEP_LIMIT).with_global_races(true)
}

/// Runs `s` at every size of `launch`: correctness sizes, one of them
/// again in a shuffled order, then the counted ones.
fn run(launch: Launch, s: &Submission<'_>) -> Result<Run> {
    let (checked, counted) = sizes(launch);
    let mut run = Run { checked: checked.clone(), ..Run::default() };
    let shuffled = Schedule::Seeded(rand::rng().random());
    let plan = checked
        .iter()
        .map(|&z| (z, Schedule::InOrder, false))
        .chain([(checked[0], shuffled, false)])
        .chain(counted.iter().map(|&z| (z, Schedule::InOrder, true)));
    for (size, schedule, count) in plan {
        let (launched, (fmas, elements)) = once(launch, s, size, options(schedule));
        let (wrong, report) = run.record(launched)?;
        if run.wrong.is_none() {
            run.wrong = wrong
                .map(|w| if schedule == Schedule::InOrder { w } else { format!("{w}, in a shuffled block order") });
        }
        // A launch the emulator stopped counted nothing worth judging:
        // its trouble says why.
        if let (true, Some(report)) = (count, report) {
            run.counted.push(Counted { size, report, fmas, elements });
        }
    }
    Ok(run)
}

/// What one launch gives back: the report (or why it stopped), and the
/// first wrong element (`None`: all right, or the launch stopped).
type Launched = (Result<Report>, Option<String>, u32);

/// Runs `s` once at `size`: the launch, and its work `(fmas, output elements)`.
fn once(launch: Launch, s: &Submission<'_>, size: Size, options: Options) -> (Launched, (u64, u64)) {
    let floats = |d: LaunchDims| match s.shared_floats {
        Some(f) => LaunchDims { shared_bytes: u32::try_from(4 * f).unwrap_or(u32::MAX), ..d },
        None => d,
    };
    match (launch, s.body) {
        (Launch::Transpose(step), Body::Transpose(body)) => {
            let (rows, cols) = (size.dims.0 as u32, size.dims.1 as u32);
            let (r, c) = (rows as usize, cols as usize);
            let input = random(r * c);
            let mut output = vec![f32::NAN; r * c];
            let d = floats(step.launch_dims(rows, cols));
            let report = staged_with(d, options, [&input], &mut output, |ctx, [i], o| body(ctx, i, o, rows, cols));
            let wrong = (0..r * c).find(|&k| output[(k % c) * r + k / c] != input[k]).map(|k| {
                let (row, col) = (k / c, k % c);
                format!(
                    "{rows}x{cols}: output[{col}][{row}] is {}, should be input[{row}][{col}] = {}",
                    output[col * r + row],
                    input[k]
                )
            });
            ((report, wrong, d.shared_bytes / 4), (0, (r * c) as u64))
        }
        (Launch::Copy, Body::Copy(body)) => {
            let len = size.dims.0 as usize;
            let input = random(len);
            let mut output = vec![f32::NAN; len];
            let d = floats(coalesce::kernels::copy::copy_dims(len as u64, 8));
            let report = staged_with(d, options, [&input], &mut output, |ctx, [i], o| body(ctx, i, o, len as u64));
            let wrong = (0..len)
                .find(|&k| output[k] != input[k])
                .map(|k| format!("{len} floats: dst[{k}] is {}, should be src[{k}] = {}", output[k], input[k]));
            ((report, wrong, d.shared_bytes / 4), (0, len as u64))
        }
        (Launch::Gemm, Body::Gemm(body)) => {
            let (m, n, k) = (size.dims.0 as u32, size.dims.1 as u32, size.dims.2 as u32);
            let (mu, nu, ku) = (m as usize, n as usize, k as usize);
            let (a, b) = (random(mu * ku), random(ku * nu));
            let mut c = vec![f32::NAN; mu * nu];
            let p = Problem { m, n, k, alpha: 1.0, beta: 0.0 };
            let d = floats(coalesce::kernels::gemm::Variant::Blocktile1d.launch_dims(m, n));
            let report = staged_with(d, options, [&a, &b], &mut c, |ctx, [a, b], c| body(ctx, a, b, c, p));
            // Each element within `k * 2^-23` of `sum |a| |b|` of the float64
            // product: an FMA chain's rounding bound.
            let wrong = (0..mu * nu).find_map(|e| {
                let (r, col) = (e / nu, e % nu);
                let terms = (0..ku).map(|j| a[r * ku + j] as f64 * b[j * nu + col] as f64);
                let (want, scale) = terms.fold((0.0, 0.0), |(s, t), x| (s + x, t + x.abs()));
                let bound = ku as f64 * f32::EPSILON as f64 * scale;
                let ok = (c[e] as f64 - want).abs() <= bound;
                (!ok).then(|| format!("{m}x{n}x{k}: C[{r}][{col}] is {}, should be {want} (within {bound:.2e})", c[e]))
            });
            ((report, wrong, d.shared_bytes / 4), ((mu * nu * ku) as u64, (mu * nu) as u64))
        }
        (launch, _) => panic!("a submission to a {launch:?} exercise has a body of another shape"),
    }
}

impl Run {
    /// Takes one launch's outcome: the first launch with troubles gives
    /// the troubles shown (the first few, and how many more). A launch that
    /// the emulator stopped is the exercise's to report, and has no report
    /// to count; other errors are the harness's. Returns the launch's wrong
    /// element and its report.
    fn record(&mut self, (launch, wrong, floats): Launched) -> Result<(Option<String>, Option<Report>)> {
        const SHOWN: usize = 4;
        self.shared_floats = self.shared_floats.max(floats);
        let (report, mut troubles) = match launch {
            Ok(report) => {
                let troubles: Vec<Trouble> = report.findings.iter().map(finding_trouble).collect();
                (report, troubles)
            }
            Err(Error::Emulator(e)) => {
                // One stopped launch is said, whatever findings came before.
                if !self.troubles.iter().any(|t| t.what.starts_with(STOPPED)) {
                    self.troubles.push(stopped_trouble(&e));
                }
                return Ok((wrong, None));
            }
            Err(e) => return Err(e),
        };
        if self.troubles.is_empty() {
            if troubles.len() > SHOWN {
                let more = troubles.len() - SHOWN;
                troubles.truncate(SHOWN);
                troubles.push(Trouble { what: format!("(and {more} more findings)"), hint: "", finding: None });
            }
            // A hint said once is enough: later troubles of one kind keep theirs empty.
            let mut said = Vec::new();
            for t in &mut troubles {
                if said.contains(&t.hint) {
                    t.hint = "";
                } else {
                    said.push(t.hint);
                }
            }
            self.troubles = troubles;
        }
        Ok((wrong, Some(report)))
    }
}

/// The trouble of a finding, with its kind's hint.
fn finding_trouble(f: &Finding) -> Trouble {
    let hint = match &f.kind {
        FindingKind::OutOfBounds { .. } => {
            "an index past the end of a view: at which size, and for which thread? Compare the guard that \
             protects the access with the index the access uses"
        }
        FindingKind::OutsideAllocation { .. } => {
            "the view reaches past the buffer it was made from: how many elements does the buffer hold, and how \
             many whole F4s is that?"
        }
        FindingKind::PastSharedMemory { .. } => {
            "an index past the shared memory the launch gives: does every index your layout returns stay below \
             the floats it asks for?"
        }
        FindingKind::Misaligned { .. } => {
            "a wide access (an F4, 16 bytes) must start at an address that is a multiple of its size: which \
             element does the F4 view start at, and which float does its element i cover?"
        }
        FindingKind::UnwrittenShared { .. } => {
            "a read of a shared word that no thread of the block wrote: does your layout send every (row, col) \
             to a word of its own, and is the word written before it is read?"
        }
        FindingKind::SharedRace { access, other_access, .. }
            if matches!((access, other_access), (coalesce::emu::Access::Write, coalesce::emu::Access::Write)) =>
        {
            "two threads write one shared word with nothing between them: do two (row, col) of the tile land on \
             one word? Within a row, the layout must be a permutation of the columns"
        }
        FindingKind::SharedRace { .. } => {
            "one thread reads a shared word that another writes, and nothing orders the two: what must every \
             thread of the block pass between the tile's writes and its reads?"
        }
        FindingKind::GlobalRace { .. } => {
            "two blocks touch one global element: blocks run in any order, at once or one after the other. \
             Which block owns each output element, and does any block write outside its own?"
        }
        FindingKind::MbarrierBytes { .. } => "an access to the bytes of an mbarrier: its state lives there",
    };
    Trouble { what: format!("the emulator's checker found: {f}"), hint, finding: Some(f.clone()) }
}

/// How the trouble of a stopped launch starts.
const STOPPED: &str = "the emulator stopped the launch: ";

/// The trouble of a launch the emulator stopped, with its kind's hint.
fn stopped_trouble(e: &EmuError) -> Trouble {
    let hint = match e {
        EmuError::StepLimit { .. } => {
            "a loop that does not end: the thread passed the same line again and again. Does the loop's index \
             grow on every pass, for every thread (thread 0 of block 0 too)?"
        }
        EmuError::StackOverflow { .. } => {
            "the thread's stack ran out: does a function call itself, and what makes the calls stop?"
        }
        EmuError::Panicked { .. } => {
            "the kernel panicked: Rust checks array indices and arithmetic overflow in every thread. Which value \
             was out of range, and for which thread?"
        }
        EmuError::DivergentBarrier { .. } => {
            "not every thread of the block reached the same sync_threads: a barrier inside an `if` (or after a \
             `return`) that some threads skip never meets. Where can a barrier stand so that every thread \
             passes it?"
        }
        EmuError::PartialWarpShuffle { .. } => "a warp shuffle needs all 32 lanes of the warp to take part",
        _ => "the launch could not go on: the message names the block and thread where it stopped",
    };
    Trouble { what: format!("{STOPPED}{e}"), hint, finding: None }
}

/// Lines of a counted launch, one per line of the kernel that accesses
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
