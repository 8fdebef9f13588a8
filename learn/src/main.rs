//! `cargo learn`: the exercises, graded on the CPU emulator.
//!
//!     cargo learn              # the list
//!     cargo learn 1            # grade exercise 1 (your file)
//!     cargo learn 1 --solution # the ladder's step that solves it
//!     cargo learn 1 --answer   # grade it, and say what the missed goals' answers are
//!
//! Pictures go to `target/learn/<N>-<yours|solution>/` (`--svg DIR` for
//! another folder), cleared first. A grading runs in a child process that
//! is ended past 30 s or 2 GB (`watch`). `cargo learn check` (CI's, not in the
//! usage line) grades every untouched exercise, which must fail, and every
//! solution, which must pass.

use coalesce::emu::picture;
use coalesce_learn::{Exercise, Grade, Launch, Which, all, counters_table, grade};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: cargo learn [N [--solution | --answer] | list] [--svg DIR]";

fn main() -> ExitCode {
    let mut svg = None;
    let mut solution = false;
    let mut answer = false;
    let mut words = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--solution" => solution = true,
            "--answer" => answer = true,
            "--svg" => match args.next() {
                _ if svg.is_some() => return usage("--svg given twice"),
                Some(dir) if !dir.is_empty() && !dir.starts_with('-') => svg = Some(PathBuf::from(dir)),
                _ => return usage("--svg needs a folder"),
            },
            flag if flag.starts_with('-') && flag.parse::<i64>().is_err() => {
                return usage(&format!("unknown option {flag:?}"));
            }
            _ => words.push(a),
        }
    }
    let svg = svg.unwrap_or_else(|| PathBuf::from("target/learn"));
    match words.as_slice() {
        [] if solution => usage("--solution needs an exercise number"),
        [] if answer => usage("--answer needs an exercise number"),
        _ if solution && answer => usage("--solution runs the ladder's step, --answer grades yours: one of them"),
        [] => list(),
        [cmd, ..] if (cmd == "list" || cmd == "check") && (words.len() > 1 || solution || answer) => {
            usage(&format!("`{cmd}` takes no other argument"))
        }
        [cmd] if cmd == "list" => list(),
        [cmd] if cmd == "check" => check(),
        [n] => match n.parse::<u32>().ok().and_then(|n| all().iter().find(|e| e.number == n)) {
            Some(_) if std::env::var_os(WATCHED).is_none() => watch(),
            Some(e) => one(e, if solution { Which::Solution } else { Which::Yours }, answer, &svg),
            None => usage(&format!("no exercise {n:?}: they are 1 to {}", all().len())),
        },
        _ => usage("one exercise at a time"),
    }
}

/// Set in the child that [`watch`] runs the grading in.
const WATCHED: &str = "COALESCE_LEARN_WATCHED";
/// How long a grading may take: a few seconds when it goes well.
const WATCH_SECONDS: u64 = 30;
/// How much memory it may hold (its resident set, where the system says).
const WATCH_BYTES: u64 = 2 << 30;

/// Grades in a child process of this same command, and ends it when it
/// runs past [`WATCH_SECONDS`] or holds more than [`WATCH_BYTES`]: the
/// emulator ends what it can see (a loop through accesses, a recursion
/// through them, a panic), and this ends the rest (a loop with no access
/// in it, a recursion with none, a kernel that allocates without end),
/// with a verdict instead of a frozen machine. The child's output is the
/// learner's, as it comes.
fn watch() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => return harness_error(&format!("cannot find this program to run the grading in: {err}")),
    };
    let mut child = match std::process::Command::new(exe).args(std::env::args_os().skip(1)).env(WATCHED, "1").spawn() {
        Ok(child) => child,
        Err(err) => return harness_error(&format!("cannot start the grading: {err}")),
    };
    let start = std::time::Instant::now();
    let verdict = loop {
        match child.try_wait() {
            Ok(Some(status)) => break ended(status),
            Ok(None) => {}
            Err(err) => return harness_error(&format!("lost the grading: {err}")),
        }
        if start.elapsed().as_secs() >= WATCH_SECONDS {
            let _ = child.kill();
            let _ = child.wait();
            break Some(format!(
                "your kernel ran {WATCH_SECONDS} s without finishing\n-> a loop that does not end, and touches no \
                 memory on its way round (the emulator ends the others at their line): which loop's condition never \
                 turns false?"
            ));
        }
        if resident_bytes(child.id()).is_some_and(|b| b > WATCH_BYTES) {
            let _ = child.kill();
            let _ = child.wait();
            break Some(format!(
                "your kernel held more than {} GB of memory\n-> a kernel thread keeps a few registers' worth: does \
                 it build a Vec or a String that grows on every pass of a loop?",
                WATCH_BYTES >> 30
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    match verdict {
        None => ExitCode::SUCCESS,
        Some(why) if why.is_empty() => ExitCode::from(1),
        Some(why) => {
            println!("\nNOT YET:\n  {}", why.replace('\n', "\n  "));
            ExitCode::from(1)
        }
    }
}

/// What a finished grading says: `None`, passed; an empty verdict, failed
/// with its own report; else why it ended without one.
fn ended(status: std::process::ExitStatus) -> Option<String> {
    if status.success() {
        return None;
    }
    if status.code().is_some() {
        return Some(String::new());
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        // SIGSEGV and SIGBUS: a fiber ran into its stack's guard page.
        let hint = match signal {
            11 | 7 => {
                "the emulator's thread ran out of stack: does a function of your kernel call itself, with no \
                 access to memory on the way down?"
            }
            _ => "the grading was stopped from outside, or ran out of memory",
        };
        return Some(format!("the grading ended on signal {signal}\n-> {hint}"));
    }
    Some("the grading ended without a verdict".to_owned())
}

/// The resident memory of process `pid`, where the system says (Linux's
/// `/proc`).
fn resident_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn harness_error(why: &str) -> ExitCode {
    eprintln!("error: {why}");
    ExitCode::FAILURE
}

fn usage(why: &str) -> ExitCode {
    eprintln!("error: {why}\n{USAGE}");
    ExitCode::from(2)
}

fn list() -> ExitCode {
    println!("Exercises, graded on the CPU emulator (no GPU needed). Edit the file, then `cargo learn N`.\n");
    for e in all() {
        println!("  {}. {:<42} {}", e.number, e.title, e.file);
    }
    println!(
        "\nStuck? The hints ask a question; `cargo learn N --answer` says the answer, and \
         `cargo learn N --solution` runs the ladder's step that solves it."
    );
    ExitCode::SUCCESS
}

fn one(e: &Exercise, which: Which, answer: bool, svg: &Path) -> ExitCode {
    let whose = match which {
        Which::Yours => format!("your kernel, {}", e.file),
        Which::Solution => format!("the solution, {}", e.solution),
    };
    println!("Exercise {}: {}\n  running {whose} on the CPU emulator", e.number, e.title);
    let g = match grade(e, which) {
        Ok(g) => g,
        Err(err) => {
            eprintln!("error: the exercise could not run: {err}");
            return ExitCode::FAILURE;
        }
    };
    print(e, &g);
    match write_pictures(e, which, &g, svg) {
        Ok(dir) => println!("  pictures: {}", dir.display()),
        Err(err) => eprintln!("warning: pictures not written under {}: {err}", svg.display()),
    }
    if g.passed() {
        let next = all().iter().find(|n| n.number == e.number + 1);
        println!("\nPASSED{}", next.map_or(String::new(), |n| format!(". Next: cargo learn {}", n.number)));
        ExitCode::SUCCESS
    } else {
        println!("\nNOT YET:");
        for p in &g.problems {
            println!("  {}", p.replace('\n', "\n  "));
        }
        if answer {
            println!("\nANSWERS:");
            for a in &g.answers {
                println!("  -> {a}");
            }
            if g.answers.is_empty() {
                println!("  (every goal is met: fix what the checker or the result says above)");
            }
        } else if !g.answers.is_empty() {
            println!("\n  (`cargo learn {} --answer` says the answer)", e.number);
        }
        ExitCode::from(1)
    }
}

fn print(e: &Exercise, g: &Grade) {
    let sizes = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
    let checked = sizes(&mut g.run.checked.iter().map(|z| z.to_string()));
    println!("  checked at {checked}, and at the first again in a shuffled block order");
    let correct = match (&g.run.wrong, g.run.troubles.is_empty()) {
        (None, true) => "yes, at every size (the output poisoned with NaN first)".to_owned(),
        (None, false) => "the values, but see what the emulator found".to_owned(),
        (Some(w), _) => format!("no: {w}"),
    };
    println!("  correct: {correct}");
    if let Some(first) = g.run.counted.first() {
        let all = sizes(&mut g.run.counted.iter().map(|c| c.size.to_string()));
        println!("  counted at {all} (every block interior); at {}:\n{}", first.size, counters_table(&first.report));
    }
    println!("  goals (the worst line, at the worst counted size):");
    for m in &g.measured {
        let value = if m.missing { "none counted".to_owned() } else { m.goal.target.describe(m.value) };
        println!("    [{}] {value}", if m.met { "x" } else { " " });
    }
    if let Some(f) = race(g) {
        println!("\n  {}", picture::race_ascii(f).replace('\n', "\n  ").trim_end());
        return;
    }
    if matches!(e.launch, Launch::Gemm)
        && let Some(c) = g.run.counted.first()
    {
        println!("\n  {}", picture::reuse_ascii(&c.report, c.fmas).replace('\n', "\n  ").trim_end());
        return;
    }
    // The picture of the first goal missed, else of the first goal's line.
    let shown = g.measured.iter().find(|m| !m.met).or(g.measured.first()).and_then(|m| m.line.as_ref());
    if let Some(line) = shown {
        println!("\n  one warp's request at {}", picture::ascii(line).replace('\n', "\n  ").trim_end());
    }
}

/// The first race the checker found, which the pictures draw.
fn race(g: &Grade) -> Option<&coalesce::emu::Finding> {
    g.run.troubles.iter().filter_map(|t| t.finding.as_ref()).find(|f| picture::is_race(f))
}

/// The summary, the lines of the first counted launch, and the race or
/// the register reuse where the exercise teaches one, as SVG in
/// `svg/<N>-<which>/`, which is emptied first (no picture of an earlier
/// run stays).
fn write_pictures(e: &Exercise, which: Which, g: &Grade, svg: &Path) -> std::io::Result<PathBuf> {
    let dir = svg.join(format!("{}-{}", e.number, if which == Which::Yours { "yours" } else { "solution" }));
    match std::fs::remove_dir_all(&dir) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    std::fs::create_dir_all(&dir)?;
    let title = format!("exercise {}", e.number);
    if let Some(f) = race(g) {
        std::fs::write(dir.join("race.svg"), picture::race(&title, f))?;
    }
    let Some(counted) = g.run.counted.first() else { return Ok(dir) };
    let report = &counted.report;
    std::fs::write(dir.join("summary.svg"), picture::summary(&title, report))?;
    if matches!(e.launch, Launch::Gemm) {
        std::fs::write(dir.join("reuse.svg"), picture::reuse(&title, report, counted.fmas))?;
    }
    for line in &report.counters.sites {
        let name = format!("{}.svg", picture::file_stem(report, line));
        std::fs::write(dir.join(name), picture::request(&title, line))?;
    }
    Ok(dir)
}

/// CI's check: every untouched exercise fails with a message, every
/// solution passes.
fn check() -> ExitCode {
    let mut ok = true;
    for e in all() {
        for which in [Which::Yours, Which::Solution] {
            let verdict = match grade(e, which) {
                Ok(g) if which == Which::Solution && g.passed() => "solution passes".to_owned(),
                Ok(g) if which == Which::Yours && !g.passed() => {
                    let lines: Vec<&str> = g.problems[0].lines().collect();
                    let hint = lines.iter().rev().find(|l| l.starts_with("->")).unwrap_or(&"");
                    // A list's heading ("the checker found:") with its first item.
                    let what = match lines.get(1) {
                        Some(first) if lines[0].ends_with(':') => format!("{} {}", lines[0], first.trim()),
                        _ => lines[0].to_owned(),
                    };
                    format!("exercise fails: {what} {hint}")
                }
                Ok(g) => {
                    ok = false;
                    format!("UNEXPECTED: {}", if g.passed() { "passes" } else { "fails" })
                }
                Err(err) => {
                    ok = false;
                    format!("ERROR: {err}")
                }
            };
            println!("{}. {:<10} {verdict}", e.number, if which == Which::Yours { "skeleton" } else { "solution" });
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
