#!/usr/bin/env python3
"""Checks the run folders under docs/measurements against what names them:

- every `measurements/<run>` that a file of the repository names (pages,
  sources, scripts, other runs' notes) is a folder there, or is named as
  `measurements/<run>[/<file>] at commit <sha>`, a run (or a file of it)
  that git history holds;
- every run folder is named by some file outside itself, so no evidence
  lies in the tree that no page, source or note stands on.

    python3 scripts/docs/runs.py

Prints each dangling name with its file and line, and each folder nothing
names; exits 1 if there is one."""
import pathlib, re, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "measurements"
NAME = re.compile(r"measurements/(20\d\d-\d\d-\d\d-[\w.-]*\w)(/[\w./-]*\w)?`?(\s+at\s+commit\s+([0-9a-f]{7,40}))?")


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


files = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout.split("\0")
shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
named, bad = set(), 0
for rel in filter(None, files):
    path = ROOT / rel
    if not path.is_file():
        continue
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        continue
    inside = rel.startswith("docs/measurements/") and rel.split("/")[2]
    for m in NAME.finditer(text):
        run, path, sha = m.group(1), m.group(2) or "", m.group(4)
        if run != inside:
            named.add(run)
        line = text.count("\n", 0, m.start()) + 1
        if sha:
            if not shallow and git("cat-file", "-e", f"{sha}:docs/measurements/{run}{path}").returncode:
                print(f"{rel}:{line}: {run}{path} at commit {sha}: commit {sha} has no such run file or folder",
                      file=sys.stderr)
                bad += 1
        elif not (RUNS / run).is_dir():
            print(f"{rel}:{line}: {run}: no such run folder (a run that is gone: name it '... at commit <sha>')", file=sys.stderr)
            bad += 1
folders = sorted(p.name for p in RUNS.iterdir() if p.is_dir())
for run in folders:
    if run not in named:
        print(f"docs/measurements/{run}: no file outside it names it: cite it or remove it", file=sys.stderr)
        bad += 1
print(f"runs: {len(folders)} run folders, {bad} problems", file=sys.stderr if bad else sys.stdout)
sys.exit(1 if bad else 0)
