#!/usr/bin/env python3
"""Fills the generated pages from their templates and run files.

    python3 scripts/docs/pages.py [--check] [--counters FILE] [PAGE ..]
    python3 scripts/docs/pages.py --dry RUN_JSON [--counters FILE] [PAGE ..]

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
and the command exits 1 on a false claim or (--check) a difference.

--dry fills each page with every run of its front matter but `CPU` (a run
on no GPU) read from RUN_JSON, writes nothing, enforces no claim, and lists
every figure the page looks up that RUN_JSON lacks (or holds as null): what
one device call of the page's script must write (exit 1 if any; run by
scripts/gpu/test_runfile.py on synthetic output of each script)."""
import argparse, json, pathlib, re, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".cuda" / "docs-py"))  # .ci/setup installs Jinja2 there
import jinja2  # noqa: E402

DOCS, TEMPLATES, RUNS = ROOT / "docs", ROOT / "docs" / "templates", ROOT / "docs" / "measurements"
REGISTRY = json.loads((DOCS / "registry.json").read_text())
SCHEMA = 1


class DocsError(Exception):
    """A page that cannot be filled: a figure its run file lacks, a false claim."""


class Dry(jinja2.Undefined):
    """A dry fill's stand-in for what a run file lacks: its message goes
    into `Dry.missing` when the page uses it, and every operation on it
    gives itself (a number 0, a string "?"), so the fill goes on."""
    missing = {}  # messages, first seen first

    def _note(self, *args, **kwargs):
        Dry.missing.setdefault(self._undefined_message, None)
        return self

    def __getattr__(self, name):
        if name[:2] == "__" or name.startswith("jinja"):
            raise AttributeError(name)
        return self._note()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _note
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __pos__ = __neg__ = _note
    __abs__ = __round__ = __ceil__ = __floor__ = __call__ = __getitem__ = __lt__ = __le__ = __gt__ = __ge__ = _note

    def _as(value):  # noqa: N805: a method's maker, called in the class body
        return lambda self, *args: (self._note(), value)[1]

    __str__, __format__, __bool__, __contains__ = _as("?"), _as("?"), _as(False), _as(False)
    __int__, __index__, __len__, __float__ = _as(0), _as(0), _as(0), _as(0.0)
    __iter__ = lambda self: (self._note(), iter(()))[1]  # noqa: E731
    del _as


class Rec(dict):
    """A run file's object in a dry fill, named by its path: a key it lacks or holds as null reads as Dry."""

    def __init__(self, data, path):
        super().__init__({k: record(v, f"{path}.{k}") for k, v in data.items()})
        self.path = path

    def __getitem__(self, key):
        return Dry(f"{self.path}: no `{key}`") if self.get(key) is None else dict.__getitem__(self, key)


def record(value, path):
    """`value` (a run file's JSON) with each object a Rec."""
    if isinstance(value, list):
        return [record(v, f"{path}[{v.get('kernel', i) if isinstance(v, dict) else i}]") for i, v in enumerate(value)]
    return Rec(value, path) if isinstance(value, dict) else value


def lack(message):
    """A dry fill's missing figure, noted now: Dry."""
    return Dry(message)._note()


# ---- run files -----------------------------------------------------------------

# A run file's top-level keys and their types: docs/contributing.md explains each.
FIELDS = {"schema": int, "made_by": str, "commit": str, "date": str, "gpu": dict, "roofs": dict, "timings": list,
          "ncu": list, "ptxas": dict, "sanitizer": list, "tests": list, "values": dict}
TIMING = {"source", "op", "kernel", "shape", "statistic", "ms"}


class Timing:
    """One timing of a run file: its fields, and the rates its `bytes` and
    `flops` give at `ms` (decimal GB/s, TFLOP/s), and `pct`, its bandwidth's
    share of the run's `cuMemcpyDtoD` roof."""

    def __init__(self, row, roofs, dry=False):
        self.__dict__.update({k: v for k, v in row.items() if not dry or v is not None})
        self.row, self.roofs, self.dry = row, roofs, dry

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
        return self._lacks(key) if self.row.get(key) is None else self.row[key]

    def __getattr__(self, key):
        if key.startswith("_") or key in ("row", "dry"):
            raise AttributeError(key)
        return self._lacks(key)

    def _lacks(self, key):
        message = f"timing {self.row.get('kernel')} at {self.row.get('shape')} ({self.row.get('source')}) has no `{key}`"
        return lack(message) if self.dry else fail(message)


class Run:
    """One run folder's run.json, read for a page; with `dry`, the run file
    at that path, whose lookups that fail read as Dry."""

    def __init__(self, name, dry=None):
        path = pathlib.Path(dry) if dry else RUNS / name / "run.json"
        self.name, self.folder, self.dry = (path.parent.name if dry else name), path.parent, dry
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        if not path.is_file():
            raise DocsError(f"{where}: no such run file")
        self.data = json.loads(path.read_text())
        for key, kind in FIELDS.items():
            if not isinstance(self.data.get(key), kind):
                raise DocsError(f"{where}: `{key}` missing or not a {kind.__name__}")
        if self.data["schema"] != SCHEMA:
            raise DocsError(f"{where}: schema {self.data['schema']}, this generator reads {SCHEMA}")
        for row in self.data["timings"]:
            if not TIMING <= row.keys():
                raise DocsError(f"{where}: a timing without {sorted(TIMING - row.keys())}: {row}")
        if dry:
            self.data = record(self.data, self.name)
        self.gpu, self.roofs, self.values = self.data["gpu"], self.data["roofs"], self.data["values"]
        self.commit, self.date, self.made_by = self.data["commit"], self.data["date"], self.data["made_by"]
        self.link = f"[{self.name}](measurements/{self.name})"

    def _lacks(self, message, found=None):
        """`found` where it is not empty; else (a lookup that found nothing)
        a DocsError, or in a dry fill a noted Dry ([] for a list)."""
        if found or (found is not None and not self.dry):
            return found
        missing = lack(f"{self.name}: {message}") if self.dry else fail(f"{self.name}: {message}")
        return [] if found is not None else missing

    def timings(self, source=None, op=None, kernel=None):
        """The run's timings, in the file's order, of a source, op or kernel."""
        found = [Timing(r, self.roofs, self.dry) for r in self.data["timings"]
                 if source in (None, r["source"]) and op in (None, r["op"]) and kernel in (None, r["kernel"])]
        if not found and self.dry:
            lack(f"{self.name}: no timings of source {source}, op {op}, kernel {kernel}")
        return found

    def shapes(self, source=None, op=None, kernel=None):
        """The shapes of those timings, first seen first."""
        return list(dict.fromkeys(t.shape for t in self.timings(source, op, kernel)))

    def has(self, kernel, shape, source="report"):
        return any(r["kernel"] == kernel and r["shape"] == shape and r["source"] == source for r in self.data["timings"])

    def t(self, kernel, shape, source="report", op=None):
        """The one timing of `kernel` at `shape` from `source`."""
        found = [t for t in self.timings(source, op, kernel) if t.shape == shape]
        if len(found) == 1:
            return found[0]
        return self._lacks(f"{len(found)} {source} timings of {kernel} at {shape}" + (f" ({op})" if op else ""))

    def ncu(self, kernel, label=None):
        """ncu's metrics, by name, of the launch of `kernel` (and `label`, where one kernel was profiled more than once)."""
        found = [n["metrics"] for n in self.data["ncu"] if n["kernel"] == kernel and label in (None, n.get("label"))]
        return found[0] if found else self._lacks(f"no ncu launch of {kernel}" + (f" ({label})" if label else ""))

    def ptxas(self, entry):
        return self.data["ptxas"][entry] if entry in self.data["ptxas"] else self._lacks(f"no ptxas report of {entry}")

    def value(self, name):
        return self.values[name] if name in self.values else self._lacks(f"no value `{name}`")

    @property
    def sanitizer(self):
        return self._lacks("no sanitizer verdicts", self.data["sanitizer"])

    @property
    def tests(self):
        return self._lacks("no test verdicts", self.data["tests"])


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


def render(page, counters, dry=None):
    """docs/<page>.md as its template and runs give it, and its false claims;
    with `dry` (a run file), every run but `CPU` read from it, no claim
    enforced, and instead of the false claims what the run file lacks."""
    runs, body = front_matter((TEMPLATES / f"{page}.md").read_text(), page)
    env = jinja2.Environment(undefined=Dry if dry else jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters.update(num=num, sci=sci, signed=signed)
    claims = Claims()
    loaded = {label: Run(name, dry if dry and label != "CPU" else None) for label, name in runs.items()}
    context = dict(runs=loaded, run=next(iter(loaded.values())), steps=steps, step=step, pictures=pictures,
                   emu=counters, claim=claims, fail=lack if dry else fail, max=max, min=min, abs=abs, sum=sum,
                   sorted=sorted, zip=zip, enumerate=enumerate, round=round, len=len, any=any, all=all)
    if dry:
        Dry.missing = {}
        try:
            env.from_string(body).render(context)
        except Exception as e:  # noqa: BLE001: a lookup a Dry cannot stand in for ends the fill
            lack(f"the fill stopped: {type(e).__name__}: {e}")
        return None, list(Dry.missing)
    title, _, rest = env.from_string(body).render(context).partition("\n")
    named = " and ".join(dict.fromkeys(f"docs/measurements/{name}" for name in runs.values()))
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
    ap.add_argument("--dry", metavar="RUN_JSON", help="list what each page looks up that this run file lacks")
    args = ap.parse_args()
    pages = args.pages or sorted(p.stem for p in TEMPLATES.glob("*.md"))
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        counters = Counters(args.counters or emulator_counters(tmp))
        for page in pages:
            try:
                text, false = render(page, counters, args.dry)
            except (DocsError, jinja2.TemplateError) as e:
                print(f"docs/{page}.md: {type(e).__name__}: {e}", file=sys.stderr)
                status = 1
                continue
            if args.dry:
                print(f"docs/{page}.md: {len(false)} figures missing from {args.dry}", *false, sep="\n  ")
                status |= bool(false)
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
