#!/usr/bin/env python3
"""Runs the hostile-input corpus (tests/data/hostile/*.cases) against fa-bench and fa-check.

    python3 tests/hostile_corpus.py --bin BUILD_DIR [--cases DIR] [--only NAME[,NAME]] [-v]

Each case gets a fresh scratch folder (the working directory of the run), is set up
there, snapshotted, run, and checked:
  - the exit code is the one the case expects;
  - the program was not killed by a signal (a crash) and did not hang (timeout);
  - stderr holds no sanitizer report (AddressSanitizer, LeakSanitizer, UBSan);
  - a run that must be rejected (expected exit 2) created, removed or changed nothing
    in the scratch folder: every file, folder, link and special file is compared before
    and after (type, size, mtime, contents, link target), so an output file that existed
    before the run must survive it byte for byte.
The case format is described in tests/data/hostile/README.md. Exit 0 when every case
passes, 1 otherwise (each failure printed with its file and line).
"""
import argparse
import codecs
import hashlib
import json
import os
import shlex
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ("fa-bench", "fa-check")
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: UndefinedBehaviorSanitizer", "WARNING: AddressSanitizer")


def unescape(text):
    """Backslash escapes (\\n, \\xff, \\\\) -> bytes, so a case can hold any byte."""
    return codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0]


def arg(text):
    """One command-line word: escapes decoded, bytes kept as they are (non-UTF-8 names)."""
    return os.fsdecode(unescape(text.replace("{src}", ROOT)))


# --- functions a `gen` expression may use ---------------------------------------------------------

def npy(shape, descr="<f4", fill=0.5, values=None, header=None, data=None, version=1,
        fortran="False", magic=b"\x93NUMPY"):
    """A .npy file as bytes. `header` replaces the dict text, `data` the payload, so a case
    can write a header that lies about its size."""
    if header is None:
        dims = ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "")
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, dims)
    head = header.encode("latin-1")
    pre = 10 if version == 1 else 12
    head += b" " * ((64 - (pre + len(head) + 1) % 64) % 64) + b"\n"
    if data is None:
        count = 1
        for s in shape:
            count *= s
        vals = values if values is not None else [fill] * count
        code = {"<f4": "f", "<f2": "e", "<f8": "d"}.get(descr, "f")
        data = struct.pack("<%d%s" % (len(vals), code), *vals)
    size = struct.pack("<H", len(head)) if version == 1 else struct.pack("<I", len(head))
    return magic + bytes([version, 0]) + size + head + data


def deep(n, open_="[", close="]", inner="1"):
    return open_ * n + inner + close * n


GEN_NAMES = {"npy": npy, "deep": deep, "json": json, "range": range, "str": str, "len": len, "list": list,
             "float": float, "bytes": bytes}


# --- the case file ------------------------------------------------------------------------------

class Case:
    def __init__(self, name, where):
        self.name, self.where = name, where
        self.exit = None
        self.setup = []      # (directive, args, line)
        self.run = None
        self.stderr, self.stdout = [], []
        self.expect_file, self.expect_symlink, self.expect_unchanged = [], [], []
        self.timeout = 60


def split_words(text):
    """Shell-like words; backslashes are kept for unescape() (a case names bytes as \\xff)."""
    lex = shlex.shlex(text, posix=True)
    lex.whitespace_split = True
    lex.escape = ""
    return list(lex)


def parse_cases(path):
    cases, case, defines = [], None, {}

    def expand(text):
        for k, v in defines.items():
            text = text.replace("{" + k + "}", v)
        return text

    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{os.path.relpath(path, ROOT)}:{lineno}"
            word, _, rest = line.partition(" ")
            if word == "define":
                key, _, value = rest.strip().partition(" ")
                defines[key] = expand(value.strip())
                continue
            word, _, rest = expand(line).partition(" ")
            rest = rest.strip()
            if word == "case":
                case = Case(rest, where)
                cases.append(case)
                continue
            if case is None:
                raise SystemExit(f"{where}: '{word}' before the first 'case'")
            if word == "exit":
                case.exit = int(rest)
            elif word == "run":
                case.run = (split_words(rest), where)
            elif word == "stderr":
                case.stderr.append(unescape(rest).decode("utf-8", "replace"))
            elif word == "stdout":
                case.stdout.append(unescape(rest).decode("utf-8", "replace"))
            elif word == "timeout":
                case.timeout = float(rest)
            elif word == "expect-file":
                case.expect_file.append(arg(rest))
            elif word == "expect-symlink":
                case.expect_symlink.append(arg(rest))
            elif word == "expect-unchanged":
                case.expect_unchanged.append(arg(rest))
            elif word in ("file", "gen", "copy", "mkdir", "fifo", "symlink", "chardev", "pre", "pre-sh",
                          "json-edit"):
                case.setup.append((word, rest, where))
            else:
                raise SystemExit(f"{where}: unknown directive '{word}'")
    for c in cases:
        if c.exit is None or c.run is None:
            raise SystemExit(f"{c.where}: case '{c.name}' needs 'exit' and 'run'")
    return cases


# --- running --------------------------------------------------------------------------------------

class Skip(Exception):
    pass


def command(words, bindir, scratch=None):
    argv = []
    for w in words:
        if w.startswith("@file:") and scratch:  # a word too long for a case line
            with open(os.path.join(scratch, arg(w[6:])), "rb") as f:
                argv.append(os.fsdecode(f.read()))
        else:
            argv.append(arg(w))
    if argv[0] in PROGRAMS:
        argv[0] = os.path.join(bindir, argv[0])
    return argv


def set_up(case, scratch, bindir, env):
    for word, rest, where in case.setup:
        if word == "file":
            path, _, text = rest.partition(" ")
            write(scratch, arg(path), unescape(text))
        elif word == "gen":
            path, _, expr = rest.partition(" ")
            value = eval(expr, dict(GEN_NAMES, __builtins__={}))  # noqa: S307 (trusted case files)
            write(scratch, arg(path), value if isinstance(value, bytes) else value.encode())
        elif word == "copy":
            dst, src = split_words(rest)
            full = os.path.join(scratch, arg(dst))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            shutil.copyfile(os.path.join(ROOT, src), full)
        elif word == "mkdir":
            os.makedirs(os.path.join(scratch, arg(rest)), exist_ok=True)
        elif word == "fifo":
            os.mkfifo(os.path.join(scratch, arg(rest)))
        elif word == "symlink":
            link, target = split_words(rest)
            os.symlink(arg(target), os.path.join(scratch, arg(link)))
        elif word == "chardev":
            try:
                os.mknod(os.path.join(scratch, arg(rest)), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            except PermissionError:
                raise Skip("making a character device needs root")
        elif word == "json-edit":
            path, _, stmt = rest.partition(" ")
            full = os.path.join(scratch, arg(path))
            with open(full) as f:
                d = json.load(f)
            exec(stmt, dict(GEN_NAMES, __builtins__={}, d=d))  # noqa: S102 (trusted case files)
            with open(full, "w") as f:
                json.dump(d, f, indent=1)
        elif word in ("pre", "pre-sh"):
            argv = command(split_words(rest), bindir) if word == "pre" else ["sh", "-c", rest]
            p = subprocess.run(argv, cwd=scratch, env=dict(env, FA_BENCH=os.path.join(bindir, "fa-bench")),
                               capture_output=True, timeout=120)
            if p.returncode != 0:
                raise SystemExit(f"{where}: setup command failed ({p.returncode}):\n"
                                 f"{p.stderr.decode(errors='replace')}")


def write(scratch, rel, data):
    full = os.path.join(scratch, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)


def snapshot(scratch):
    """Every entry under scratch, links not followed, special files never opened."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(scratch):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, scratch)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    digest = hashlib.sha1(f.read()).hexdigest()
                out[rel] = ("file", st.st_size, st.st_mtime_ns, digest)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_rdev)
    return out


def describe_changes(before, after):
    changes = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            changes.append(f"removed {rel!r}")
        elif rel not in before:
            changes.append(f"created {rel!r}")
        elif before[rel] != after[rel]:
            changes.append(f"changed {rel!r}: {before[rel][0]} -> {after[rel][0]}")
    return changes


def run_case(case, bindir, env, keep):
    scratch = tempfile.mkdtemp(prefix="fa_hostile_")
    problems, sanitizer, crashed, changed, hung, wrong_exit = [], False, False, False, False, False
    try:
        set_up(case, scratch, bindir, env)
        before = snapshot(scratch)
        words, _ = case.run
        try:
            p = subprocess.run(command(words, bindir, scratch), cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=case.timeout)
            rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, out, err = None, "", (e.stderr or b"").decode(errors="replace")
        after = snapshot(scratch)
        if rc is None:
            hung = True
            problems.append(f"did not finish within {case.timeout:g} s")
        elif rc < 0:
            crashed = True
            problems.append(f"killed by signal {-rc}")
        elif rc != case.exit:
            wrong_exit = True
            problems.append(f"exit code {rc}, expected {case.exit}")
        if any(m in err for m in SANITIZER_MARKS):
            sanitizer = True
            problems.append("sanitizer report in stderr")
        for want in case.stderr:
            if want not in err:
                problems.append(f"stderr lacks {want!r}")
        for want in case.stdout:
            if want not in out:
                problems.append(f"stdout lacks {want!r}")
        if case.exit == 2:
            diff = describe_changes(before, after)
            if diff:
                changed = True
                problems.append("a rejected run touched files: " + "; ".join(diff))
        for rel in case.expect_unchanged:
            if before.get(rel) != after.get(rel):
                changed = True
                problems.append(f"{rel!r} changed")
        for rel in case.expect_file:
            if not os.path.isfile(os.path.join(scratch, rel)):
                problems.append(f"{rel!r} was not written")
        for rel in case.expect_symlink:
            if not os.path.islink(os.path.join(scratch, rel)):
                problems.append(f"{rel!r} is no longer a symbolic link")
        if problems and err:
            problems.append("stderr: " + err.strip().replace("\n", "\n    ")[-1500:])
        return dict(problems=problems, sanitizer=sanitizer, crashed=crashed, changed=changed, hung=hung,
                    wrong_exit=wrong_exit, skipped=None)
    except Skip as s:
        return dict(problems=[], skipped=str(s))
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder holding fa-bench and fa-check")
    ap.add_argument("--cases", default=os.path.join(ROOT, "tests", "data", "hostile"))
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folders")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    bindir = os.path.abspath(args.bin)
    for prog in PROGRAMS:
        if not os.access(os.path.join(bindir, prog), os.X_OK):
            print(f"hostile_corpus.py: {os.path.join(bindir, prog)} is not an executable", file=sys.stderr)
            return 2
    files = sorted(os.path.join(args.cases, n) for n in os.listdir(args.cases) if n.endswith(".cases"))
    cases = [c for f in files for c in parse_cases(f)]
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print(f"hostile_corpus.py: duplicate case names: {', '.join(sorted(dup))}", file=sys.stderr)
        return 2
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.name in wanted]
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    env["LC_ALL"] = "C"
    counts = dict(passed=0, failed=0, skipped=0, crashed=0, sanitizer=0, changed=0, hung=0, wrong_exit=0)
    for case in cases:
        r = run_case(case, bindir, env, args.keep)
        if r["skipped"]:
            counts["skipped"] += 1
            print(f"SKIPPED {case.name} ({case.where}): {r['skipped']}")
            continue
        if r["problems"]:
            counts["failed"] += 1
            for k in ("crashed", "sanitizer", "changed", "hung", "wrong_exit"):
                counts[k] += bool(r[k])
            print(f"FAIL {case.name} ({case.where})")
            for p in r["problems"]:
                print(f"    {p}")
        else:
            counts["passed"] += 1
            if args.verbose:
                print(f"ok   {case.name}")
    print(f"hostile corpus: {len(cases)} cases, {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped; among the failures: {counts['crashed']} crashed, "
          f"{counts['hung']} hung, {counts['sanitizer']} sanitizer reports, {counts['changed']} touched files "
          f"they must not, {counts['wrong_exit']} wrong exit codes")
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
