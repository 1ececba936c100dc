#!/usr/bin/env python3
"""Checks that the documents point at things that exist.

    python3 scripts/check_docs_links.py [ROOT]        (default: this repository)

In every tracked Markdown file, outside fenced code blocks:
  - a relative link `[text](target)` must name a tracked file or folder, and its
    `#anchor`, if any, a heading of that Markdown file (GitHub's anchor rule);
  - a repository path written in the text (`docs/X.md`, `results/h200/...`, `scripts/x.py`)
    must name a tracked file or folder, or a program by its source (`.cu`, `.cpp`); paths
    with `<`, `*`, `{` or `$` are patterns, and skipped.
In every tracked text file, a name cited after "PERF_NOTES" (`PERF_NOTES fa3-foo`,
`docs/PERF_NOTES.md, fa1-bar`) must be an entry (a `###` heading) of docs/PERF_NOTES.md,
and no entry may be cited by a number (`PERF_NOTES A2-1`).
Prints one line per broken reference (file:line: what) and exits 1 if there is any, else 0.
"""
import os
import re
import subprocess
import sys

TOP_DIRS = ("docs", "results", "scripts", "configs", "kernels", "src", "tests", "reference", "cmake")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./<>*{}$-]*[\w/])" % "|".join(TOP_DIRS))
ENTRY = re.compile(r"\b(?:fa1|fa2|fa3|standard|cudnn|measure|full-run)-[a-z0-9]+(?:-[a-z0-9]+)*\b")
NUMBERED = re.compile(r"\b[A-Z][0-9]+-[0-9]+\b")  # a citation by number, such as "A2-1"
CITE_SPAN = 90  # characters after "PERF_NOTES" searched for entry names
TEXT_EXT = (".md", ".cuh", ".cu", ".h", ".cpp", ".cmake", ".txt", ".py", ".sh", ".json")
# This checker and its test name made-up entries on purpose.
NOT_SCANNED = {"scripts/check_docs_links.py", "tests/docs_links_test.py"}


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, _, names in os.walk(root):
            if os.sep + "." in d or os.path.basename(d).startswith("build"):
                continue
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def anchor(heading):
    """GitHub's anchor: lower case, punctuation dropped except - and _, spaces to -."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path):
    out, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                out.add(anchor(line.lstrip("#")))
    return out


def prose_lines(path):
    """(line number, text) of a Markdown file outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield n, line


def check(root):
    files = tracked_files(root)
    tracked = set(files)
    dirs = {os.path.dirname(f) for f in files}
    for f in files:  # every ancestor folder too
        parts = f.split("/")[:-1]
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    def exists(p):  # a program may be named by its source (tests/gpu/standalone/fa3_check)
        return any(q in tracked for q in (p, p + ".cu", p + ".cpp")) or p.rstrip("/") in dirs

    heading_cache = {}

    def anchors_of(rel):
        if rel not in heading_cache:
            heading_cache[rel] = headings(os.path.join(root, rel))
        return heading_cache[rel]

    problems = []
    for rel in sorted(f for f in files if f.endswith(".md")):
        base = os.path.dirname(rel)
        for n, line in prose_lines(os.path.join(root, rel)):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(base, path)) if path else rel
                dest = "" if dest == "." else dest
                if path and not exists(dest):
                    problems.append(f"{rel}:{n}: link to {target}: no such tracked file or folder")
                elif frag and dest.endswith(".md") and frag not in anchors_of(dest):
                    problems.append(f"{rel}:{n}: link to {target}: no heading with that anchor in {dest}")
            for p in PATH.findall(LINK.sub("", line)):
                if any(c in p for c in "<*{$") or exists(p):
                    continue
                problems.append(f"{rel}:{n}: {p}: no such tracked file or folder")

    entries = anchors_of("docs/PERF_NOTES.md") if exists("docs/PERF_NOTES.md") else set()
    for rel in sorted(f for f in files if f.endswith(TEXT_EXT) and f not in NOT_SCANNED):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        # Names inside Markdown links are anchors, checked above: blank the links out.
        text = LINK.sub(lambda k: " " * len(k.group(0)), text)
        for m in re.finditer(r"PERF_NOTES", text):
            end = m.end() + CITE_SPAN
            while end < len(text) and not text[end].isspace():  # never cut a name in two
                end += 1
            span = text[m.end():end].split("\n\n")[0].split("PERF_NOTES")[0]
            line = text.count("\n", 0, m.start()) + 1
            for name in ENTRY.findall(span):
                if name not in entries:
                    problems.append(f"{rel}:{line}: PERF_NOTES entry '{name}' does not exist")
            for number in NUMBERED.findall(span):
                problems.append(f"{rel}:{line}: PERF_NOTES cited by number '{number}', not by entry name")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check_docs_links: {len(problems)} broken reference(s)" if problems else "check_docs_links: all references resolve")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
