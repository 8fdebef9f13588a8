//! Every exercise as shipped fails, with a message that points at its idea
//! (never a panic or an error of the harness), and every reference solution
//! (the ladder's own step) passes.

use coalesce::emu::Op;
use coalesce_learn::{Target, Which, all, grade};

#[test]
fn every_solution_passes() {
    for e in all() {
        let g = grade(e, Which::Solution).unwrap();
        assert!(g.passed(), "exercise {}'s solution fails: {:?}", e.number, g.problems);
        assert!(g.run.wrong.is_none() && g.run.troubles.is_empty());
    }
}

#[test]
fn every_untouched_exercise_fails_with_its_idea() {
    for e in all() {
        let g = grade(e, Which::Yours).unwrap();
        assert!(!g.passed(), "exercise {} passes as shipped", e.number);
        let first = &g.problems[0];
        // A goal's own hint, or the hint of a race (exercise 6).
        let pointed =
            e.goals.iter().any(|goal| first.contains(goal.hint)) || first.contains("every thread of the block pass");
        assert!(pointed, "exercise {}'s message does not point at its idea: {first}", e.number);
    }
}

#[test]
fn the_counters_are_those_each_exercise_teaches() {
    let by_number = |n: u32| all().iter().find(|e| e.number == n).unwrap();
    // Exercise 1: the strided stores of the naive transpose, 32 sectors.
    let g = grade(by_number(1), Which::Yours).unwrap();
    assert_eq!(g.run.counted[0].report.counters.total(Op::GlobalStore).per_request(), 32.0);
    assert!(g.run.wrong.is_none());
    // Exercise 3: the column read of a [32][32] tile, a 32-way conflict.
    let g = grade(by_number(3), Which::Yours).unwrap();
    assert_eq!(g.run.counted[0].report.counters.total(Op::SharedLoad).per_request(), 32.0);
    // Exercise 4's solution keeps the footprint; padding would not pass it.
    let swizzle = by_number(4);
    assert!(swizzle.goals.iter().any(|g| matches!(g.target, Target::SharedFloats(1024))));
    // Exercise 6: the race is found, and the values are wrong or right by chance only.
    let g = grade(by_number(6), Which::Yours).unwrap();
    assert!(g.run.troubles.iter().any(|t| t.what.contains("no barrier between")), "{:?}", g.problems);
}

/// The command line: help, and a clear error (exit 2) for every word it
/// does not take, before anything is graded.
#[test]
fn the_command_line_refuses_what_it_does_not_take() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_learn")).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    for help in ["--help", "-h"] {
        let (code, text) = run(&[help]);
        assert_eq!(code, Some(0), "{help}: {text}");
        assert!(text.starts_with("usage: cargo learn"), "{help}: {text}");
    }
    for (args, says) in [
        (&["--bogus"][..], "unknown option \"--bogus\""),
        (&["--solution"], "--solution needs an exercise number"),
        (&["list", "--solution"], "`list` takes no other argument"),
        (&["check", "extra"], "`check` takes no other argument"),
        (&["--answer"], "--answer needs an exercise number"),
        (&["1", "--answer", "--solution"], "one of them"),
        (&["1", "--svg", "--solution"], "--svg needs a folder"),
        (&["1", "--svg", ""], "--svg needs a folder"),
        (&["--svg", "a", "--svg", "b", "1"], "--svg given twice"),
        (&["0"], "no exercise \"0\""),
        (&["-1"], "no exercise \"-1\""),
        (&["1", "2"], "one exercise at a time"),
    ] {
        let (code, text) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

/// `check` is CI's, not the learner's: it stays out of the usage line.
/// A run clears the pictures an earlier one left in its folder.
#[test]
fn the_usage_line_is_the_learners_and_pictures_are_fresh() {
    let learn = || std::process::Command::new(env!("CARGO_BIN_EXE_learn"));
    let out = learn().arg("--help").output().unwrap();
    let usage = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!usage.contains("check"), "{usage}");
    let dir = std::env::temp_dir().join(format!("coalesce-learn-{}", std::process::id()));
    let stale = dir.join("1-yours").join("stale.svg");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "<svg/>").unwrap();
    let out = learn().args(["1", "--svg"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!stale.exists(), "a picture of an earlier run stays");
    assert!(dir.join("1-yours").join("global-st-1.svg").exists());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("(drawn at random)"), "the sizes are not printed: {text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
