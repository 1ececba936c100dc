#!/usr/bin/env python3
"""fa-bench report in a real headless browser: the page of a run against its baseline
(tests/data/compare/slower.json against baseline.json: every pair slower) loads in
Chromium with no console error or failed load, lays out the results table and every
figure at a visible size, highlights the slower verdicts, and its screenshot is not blank.

    report_browser_test.py --bin BUILD_DIR --out FOLDER   (FOLDER keeps report.html and screenshot.png)

Exit 0 when it all holds, 1 otherwise, 77 (ctest: skipped, with the reason printed) where
no Chromium is installed (Debian: apt-get install chromium) or this python has no
matplotlib, so a machine without them never reports a pass.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Appended to a copy of the page: measures what the browser laid out and writes it
# into the DOM, which --dump-dom prints. The page itself holds no script.
PROBE = """<script>
const box = e => { const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
const t = document.getElementById('results-table');
const out = {
  table: t ? box(t) : null,
  table_rows: t ? t.querySelectorAll('tr').length - 1 : 0,
  figures: [...document.querySelectorAll('figure')].map(f => ({id: f.id, svg: f.querySelector('svg') ?
      box(f.querySelector('svg')) : null})),
  slower_cells: document.querySelectorAll('td.v-slower, td.v-regression').length,
};
const p = document.createElement('pre'); p.id = 'probe'; p.textContent = JSON.stringify(out);
document.body.appendChild(p);
</script>
"""


def chromium(browser, args, timeout=180):
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the folder holding fa-bench")
    ap.add_argument("--out", required=True, help="where the page and the screenshot are kept")
    a = ap.parse_args()
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if not browser:
        print(f"SKIP: no headless browser ({', '.join(BROWSERS)}) on PATH; Debian: apt-get install chromium")
        return 77
    try:
        import matplotlib.image as mpimg
    except ImportError:
        print(f"SKIP: {sys.executable} has no matplotlib (apt-get install python3-matplotlib): no figures to show")
        return 77
    os.makedirs(a.out, exist_ok=True)
    page = os.path.join(a.out, "report.html")
    data = os.path.join(HERE, "data", "compare")
    run = subprocess.run([os.path.join(a.bin, "fa-bench"), "report", os.path.join(data, "slower.json"),
                          os.path.join(data, "baseline.json"), "--html", page, "--python", sys.executable,
                          "--plot-script", os.path.join(ROOT, "scripts", "plot.py")],
                         capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode != 0:
        print(f"FAIL: fa-bench report exited {run.returncode}")
        return 1
    failed = []

    def check(cond, what):
        print(f"{'ok' if cond else 'FAIL'}: {what}")
        if not cond:
            failed.append(what)

    # The page as it is: loads without a console error or a failed request.
    res = chromium(browser, ["--dump-dom", "file://" + os.path.abspath(page)])
    console = [ln for ln in res.stderr.splitlines() if "CONSOLE" in ln or "Failed to load" in ln
               or "Uncaught" in ln or "ERR_" in ln]
    check(res.returncode == 0 and 'id="results-table"' in res.stdout,
          f"Chromium loads the page ({browser}, exit {res.returncode})")
    check(not console, f"no console error or failed load: {console[:3]}")
    check(not re.search(r"<(script|link|img|iframe)\b", open(page).read()), "the page fetches nothing: no script, "
          "link, img or iframe")

    # Laid out: the table and every figure at a visible size.
    probe_page = os.path.join(a.out, "report-probe.html")
    with open(page) as f, open(probe_page, "w") as g:
        g.write(f.read().replace("</body>", PROBE + "</body>"))
    res = chromium(browser, ["--window-size=1400,2000", "--dump-dom", "file://" + os.path.abspath(probe_page)])
    m = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    check(m is not None, "the layout probe ran")
    if m:
        p = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
        rows = len(json.load(open(os.path.join(data, "slower.json")))["results"])
        check(p["table"] and p["table"][0] > 400 and p["table"][1] > 20 * rows,
              f"results table laid out ({p['table']})")
        check(p["table_rows"] == rows, f"the table has every row ({p['table_rows']} of {rows})")
        ids = [f["id"] for f in p["figures"]]
        for want in ("fig-tflops", "fig-latency", "fig-traffic", "fig-memory", "fig-error", "fig-roofline"):
            check(want in ids, f"{want} is in the page")
        for f in p["figures"]:
            check(f["svg"] and f["svg"][0] > 300 and f["svg"][1] > 150, f"{f['id']} shows at {f['svg']}")
        check(p["slower_cells"] > 0, f"slower verdicts highlighted ({p['slower_cells']} cells)")

    # A screenshot, kept for a reader of the CI job: an image, not a blank page.
    shot = os.path.join(a.out, "screenshot.png")
    if os.path.exists(shot):
        os.remove(shot)
    res = chromium(browser, ["--window-size=1400,3000", "--hide-scrollbars", f"--screenshot={shot}",
                             "file://" + os.path.abspath(page)])
    check(os.path.isfile(shot), f"screenshot written ({shot})")
    if os.path.isfile(shot):
        img = mpimg.imread(shot)
        inked = float((img[..., :3].mean(axis=2) < 0.9).mean())
        check(inked > 0.02, f"the screenshot is not blank ({100 * inked:.1f} % of pixels drawn)")
    print(f"{len(failed)} checks failed" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
