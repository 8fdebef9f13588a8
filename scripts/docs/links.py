#!/usr/bin/env python3
"""Checks every relative link and image of README.md and docs/*.md: each must
lead to a file or folder of the repository, and a link to a Markdown
heading (`page.md#anchor`, `#anchor`) to a heading of that page, with
GitHub's anchors (lower case, punctuation dropped, spaces as hyphens).
External links (with a scheme) are not checked.

    python3 scripts/docs/links.py [FILE.md ...]

Prints each broken link with its file and line; exits 1 if there is one."""
import pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
pages = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def anchors(page):
    """GitHub's anchors of a Markdown page's headings (outside code blocks)."""
    out, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+\s+(.*)", line)):
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", ""))
            out.add(text.replace(" ", "-"))
    return out


def prose(page):
    """The page with its fenced code blocks and inline code blanked out
    (newlines kept, so offsets still give line numbers)."""
    out, fenced = [], False
    for line in page.read_text().splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
            out.append("\n")
        else:
            out.append("\n" if fenced else line)
    return re.sub(r"`[^`\n]*`", "``", "".join(out))


broken = 0
for page in pages:
    text = prose(page)
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        why = None
        if not dest.exists():
            why = "no such file or folder"
        elif not dest.is_relative_to(ROOT):
            why = "outside the repository"
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            why = f"{dest.relative_to(ROOT)} has no heading #{anchor}"
        if why:
            line = text.count("\n", 0, m.start(1)) + 1
            print(f"{page.relative_to(ROOT)}:{line}: {target}: {why}", file=sys.stderr)
            broken += 1
print(f"links: {len(pages)} pages checked, {broken} broken", file=sys.stderr if broken else sys.stdout)
sys.exit(1 if broken else 0)
