#!/usr/bin/env python3
"""Fills the generated pages from their templates and run files.

    python3 scripts/docs/pages.py [--check] [--counters FILE] [PAGE ..]

Each template `docs/templates/<page>.md` is a Jinja2 page that names its run
files in a front matter and reads every figure from them:

    ---
    H200: 2026-11-28-h200-transpose
    ---
    # Transpose ...
    {{ run.t("vec4_cols", "8192x8192").gb_per_s | num }} GB/s

The front matter maps a label (the GPU) to a run folder under
docs/measurements whose `run.json` follows docs/contributing.md's schema;
the first is `run` in the template, all of them `runs`. A claim that the
prose makes rests on a named check beside its figure,
`{{ claim("vec4_cols_beats_vec4", a > b, "detail") }}`, which prints nothing
and fails the page when the run contradicts it. The emulator's counters are
not stored with the runs (no GPU makes them): they come from
`cargo emulate --counters --counters-json`, run once here or given with
--counters. The page `docs/<page>.md` is written, or with --check compared,
and the command exits 1 on a false claim or (--check) a difference."""
import argparse, json, pathlib, re, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".cuda" / "docs-py"))  # .ci/setup installs Jinja2 there
import jinja2  # noqa: E402

DOCS, TEMPLATES, RUNS = ROOT / "docs", ROOT / "docs" / "templates", ROOT / "docs" / "measurements"
REGISTRY = json.loads((DOCS / "registry.json").read_text())
SCHEMA = 1


class DocsError(Exception):
    """A page that cannot be filled: a figure its run file lacks, a false claim."""


# ---- run files -----------------------------------------------------------------

# A run file's top-level keys and their types: docs/contributing.md explains each.
FIELDS = {"schema": int, "made_by": str, "commit": str, "date": str, "gpu": dict, "roofs": dict, "timings": list,
          "ncu": list, "ptxas": dict, "sanitizer": list, "tests": list, "values": dict}
TIMING = {"source", "op", "kernel", "shape", "statistic", "ms"}


class Timing:
    """One timing of a run file: its fields, and the rates its `bytes` and
    `flops` give at `ms` (decimal GB/s, TFLOP/s), and `pct`, its bandwidth's
    share of the run's `cuMemcpyDtoD` roof."""

    def __init__(self, row, roofs):
        self.__dict__.update(row)
        self.row, self.roofs = row, roofs

    @property
    def gb_per_s(self):
        return self._need("bytes") / (self.ms * 1e6)

    @property
    def tflop_per_s(self):
        return self._need("flops") / (self.ms * 1e9)

    @property
    def us(self):
        return self.ms * 1e3

    @property
    def pct(self):
        return 100 * self.gb_per_s / self.roofs["copy_gb_per_s"]

    def _need(self, key):
        if self.row.get(key) is None:
            raise DocsError(f"timing {self.kernel} at {self.shape} ({self.source}) has no `{key}`")
        return self.row[key]

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        raise DocsError(f"timing {self.row.get('kernel')} at {self.row.get('shape')} has no field `{key}`")


class Run:
    """One run folder's run.json, read for a page."""

    def __init__(self, name):
        self.name, self.folder = name, RUNS / name
        path = self.folder / "run.json"
        if not path.is_file():
            raise DocsError(f"{path.relative_to(ROOT)}: no such run file")
        self.data = json.loads(path.read_text())
        for key, kind in FIELDS.items():
            if not isinstance(self.data.get(key), kind):
                raise DocsError(f"{path.relative_to(ROOT)}: `{key}` missing or not a {kind.__name__}")
        if self.data["schema"] != SCHEMA:
            raise DocsError(f"{path.relative_to(ROOT)}: schema {self.data['schema']}, this generator reads {SCHEMA}")
        for row in self.data["timings"]:
            if not TIMING <= row.keys():
                raise DocsError(f"{path.relative_to(ROOT)}: a timing without {sorted(TIMING - row.keys())}: {row}")
        self.gpu, self.roofs, self.values = self.data["gpu"], self.data["roofs"], self.data["values"]
        self.commit, self.date, self.made_by = self.data["commit"], self.data["date"], self.data["made_by"]
        self.link = f"[{name}](measurements/{name})"

    def timings(self, source=None, op=None, kernel=None):
        """The run's timings, in the file's order, of a source, op or kernel."""
        return [Timing(r, self.roofs) for r in self.data["timings"]
                if source in (None, r["source"]) and op in (None, r["op"]) and kernel in (None, r["kernel"])]

    def shapes(self, source=None, op=None, kernel=None):
        """The shapes of those timings, first seen first."""
        return list(dict.fromkeys(t.shape for t in self.timings(source, op, kernel)))

    def has(self, kernel, shape, source="report"):
        return any(r["kernel"] == kernel and r["shape"] == shape and r["source"] == source for r in self.data["timings"])

    def t(self, kernel, shape, source="report", op=None):
        """The one timing of `kernel` at `shape` from `source`."""
        found = [t for t in self.timings(source, op, kernel) if t.shape == shape]
        if len(found) != 1:
            raise DocsError(f"{self.name}: {len(found)} {source} timings of {kernel} at {shape}" + (f" ({op})" if op else ""))
        return found[0]

    def ncu(self, kernel, label=None):
        """ncu's metrics, by name, of the launch of `kernel` (and `label`, where one kernel was profiled more than once)."""
        found = [n["metrics"] for n in self.data["ncu"] if n["kernel"] == kernel and label in (None, n.get("label"))]
        if not found:
            raise DocsError(f"{self.name}: no ncu launch of {kernel}" + (f" ({label})" if label else ""))
        return found[0]

    def ptxas(self, entry):
        if entry not in self.data["ptxas"]:
            raise DocsError(f"{self.name}: no ptxas report of {entry}")
        return self.data["ptxas"][entry]

    def value(self, name):
        if name not in self.values:
            raise DocsError(f"{self.name}: no value `{name}`")
        return self.values[name]

    @property
    def sanitizer(self):
        return self.data["sanitizer"]

    @property
    def tests(self):
        return self.data["tests"]


# ---- what every template may use -----------------------------------------------


def steps(op):
    """The op's steps from docs/registry.json, in teaching order."""
    for o in REGISTRY:
        if o["op"] == op:
            return o["steps"]
    raise DocsError(f"docs/registry.json has no op {op}")


def step(op, name):
    found = [s for s in steps(op) if s["name"] == name]
    if not found:
        raise DocsError(f"docs/registry.json: {op} has no step {name}")
    return found[0]


def pictures(op, kernel):
    """Markdown for the emulator's pictures of `kernel` in docs/pictures/<op>/:
    its summary, and one warp's request at each of its lines, folded. Empty
    when it has none."""
    folder = DOCS / "pictures" / op
    if not (folder / f"{kernel}.svg").exists():
        return ""
    out = [f"![{op} {kernel}: requests at each line, counted by the emulator](pictures/{op}/{kernel}.svg)\n",
           "<details><summary>One warp's request at each line, drawn from the emulator's trace</summary>\n"]
    out += [f"![{op} {kernel}: {p.stem.removeprefix(kernel + '-')}](pictures/{op}/{p.name})\n"
            for p in sorted(folder.glob(f"{kernel}-*.svg"))]
    out.append("</details>\n")
    return "\n".join(out)


class Counters:
    """The emulator's counters (`--counters-json`), by op, kernel and shape."""

    def __init__(self, path):
        self.kernels = json.loads(pathlib.Path(path).read_text())["kernels"]

    def __call__(self, op, kernel, shape=None):
        found = [k for k in self.kernels if (k["op"], k["kernel"]) == (op, kernel) and shape in (None, k["shape"])]
        if len(found) != 1:
            raise DocsError(f"the emulator's counters hold {len(found)} entries of {op} {kernel}"
                            + (f" at {shape}" if shape else "") + ": name the shape")
        return found[0]


def num(x, nd=0):
    """A figure with thousands separators and `nd` decimals; '-' for None."""
    return "-" if x is None else f"{x:,.{nd}f}"


def sci(x, nd=1):
    return "-" if x is None else f"{x:.{nd}e}"


def signed(x, nd=1):
    return f"{x:+.{nd}f}"


class Claims:
    """The named checks of one page: each false one is kept with its detail."""

    def __init__(self):
        self.names, self.false = set(), []

    def __call__(self, name, ok, detail=""):
        if name in self.names:
            raise DocsError(f"claim `{name}` is made twice")
        self.names.add(name)
        if not ok:
            self.false.append(f"{name}" + (f": {detail}" if detail else ""))
        return ""


def fail(message):
    raise DocsError(message)


# ---- pages ---------------------------------------------------------------------


def front_matter(text, page):
    """A template's run folders by label, and its body."""
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise DocsError(f"docs/templates/{page}.md: no front matter naming its runs")
    runs = dict(line.split(":", 1) for line in m.group(1).splitlines() if line.strip())
    return {k.strip(): v.strip() for k, v in runs.items()}, text[m.end():]


def render(page, counters):
    """docs/<page>.md as its template and runs give it, and its false claims."""
    runs, body = front_matter((TEMPLATES / f"{page}.md").read_text(), page)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                             lstrip_blocks=True, autoescape=False)
    env.filters.update(num=num, sci=sci, signed=signed)
    claims = Claims()
    loaded = {label: Run(name) for label, name in runs.items()}
    context = dict(runs=loaded, run=next(iter(loaded.values())), steps=steps, step=step, pictures=pictures,
                   emu=counters, claim=claims, fail=fail, max=max, min=min, abs=abs, sum=sum, sorted=sorted,
                   zip=zip, enumerate=enumerate, round=round, len=len, any=any, all=all)
    title, _, rest = env.from_string(body).render(context).partition("\n")
    named = " and ".join(f"docs/measurements/{name}" for name in runs.values())
    head = f"<!-- Generated by scripts/docs/pages.py from docs/templates/{page}.md and {named}; do not edit by hand. -->"
    return f"{title}\n\n{head}\n{rest}", claims.false


def emulator_counters(folder):
    """Runs the emulator's counters into `folder` (no GPU, no CUDA) and returns the file."""
    path = pathlib.Path(folder) / "counters.json"
    subprocess.run(["cargo", "run", "--release", "-q", "-p", "coalesce-report", "--no-default-features", "--",
                    "--emulate", "--counters", "--counters-json", str(path)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="*", help="page names (docs/templates/<name>.md); every template when none")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 where a page differs")
    ap.add_argument("--counters", help="the emulator's counters (--counters-json); made here when not given")
    args = ap.parse_args()
    pages = args.pages or sorted(p.stem for p in TEMPLATES.glob("*.md"))
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        counters = Counters(args.counters or emulator_counters(tmp))
        for page in pages:
            try:
                text, false = render(page, counters)
            except (DocsError, jinja2.TemplateError) as e:
                print(f"docs/{page}.md: {type(e).__name__}: {e}", file=sys.stderr)
                status = 1
                continue
            for claim in false:
                print(f"docs/{page}.md: the run contradicts the claim {claim}", file=sys.stderr)
                status = 1
            out = DOCS / f"{page}.md"
            if args.check:
                if not out.is_file() or out.read_text() != text:
                    print(f"docs/{page}.md is not what docs/templates/{page}.md and its runs give: "
                          f"python3 scripts/docs/pages.py {page}", file=sys.stderr)
                    status = 1
            elif not false:
                out.write_text(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
