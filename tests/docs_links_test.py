#!/usr/bin/env python3
"""scripts/check_docs_links.py: on a hand-made tree it reports exactly the planted broken
link, anchor, path and PERF_NOTES citations (so it can fail), then on this repository it
finds nothing broken. Exit 0 on success, 1 with what differed."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_docs_links.py")

FILES = {
    "docs/PERF_NOTES.md": "# Notes\n\n## FA3\n\n### fa3-kept-entry\n\ntext\n",
    "docs/A.md": ("See [notes](PERF_NOTES.md#fa3-kept-entry), [the FA3 part](PERF_NOTES.md#fa3), "
                  "[gone](PERF_NOTES.md#fa3-gone-entry) and [missing](MISSING.md).\n"
                  "Also docs/PERF_NOTES.md and results/old/run.json, and results/<device>/ as a pattern.\n"
                  "```\nresults/in/a/code/block.json [x](nowhere.md)\n```\n"),
    "src/k.cuh": ("// measured (PERF_NOTES fa3-kept-entry); see also PERF_NOTES fa3-missing-entry\n"
                  "// and docs/PERF_NOTES.md A2-1\n"),
}
EXPECT = {
    "docs/A.md:1: link to PERF_NOTES.md#fa3-gone-entry: no heading with that anchor in docs/PERF_NOTES.md",
    "docs/A.md:1: link to MISSING.md: no such tracked file or folder",
    "docs/A.md:2: results/old/run.json: no such tracked file or folder",
    "src/k.cuh:1: PERF_NOTES entry 'fa3-missing-entry' does not exist",
    "src/k.cuh:2: PERF_NOTES cited by number 'A2-1', not by entry name",
}


def run(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in FILES.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        r = run(tmp)
        got = set(r.stdout.splitlines()[:-1])
        if r.returncode != 1:
            failures.append(f"planted tree: exit {r.returncode}, expected 1")
        for line in sorted(EXPECT - got):
            failures.append(f"planted tree: not reported: {line}")
        for line in sorted(got - EXPECT):
            failures.append(f"planted tree: reported but not planted: {line}")
    r = run(ROOT)
    if r.returncode != 0:
        failures.append("this repository:\n" + r.stdout)
    for f in failures:
        print(f)
    print("docs_links: ok" if not failures else f"docs_links: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
