"""A page as a real browser lays it out: headless Chromium (Debian's `chromium` package) at a given
window width, with what a person would see measured in the page itself.

`layout(page, width)` copies the page with a small script appended (the pages themselves carry
none), loads it in `chromium --headless --dump-dom` and reads back what the script wrote into the
DOM: the viewport's and the page's widths; for every conformance matrix, scrolled to its far right
edge (and down to each row in turn, when it scrolls down too), where its row labels and its last
column are and whether each row label is the element actually shown at its own centre (not
scrolled away, not covered), and the same for its header's corner; for every timeline, scrolled to
its far right edge, the same for its lane names; for every bar chart, its labels' boxes and texts.
`screenshot(page, width, path)` saves what the window shows, for a person to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

HEIGHT = 900
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
LANES = ("producer", "broker", "c0", "c1", "c2")  # the lane names of the sample histories
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions", "--no-first-run",
         "--disable-dev-shm-usage", "--force-device-scale-factor=1")

MEASURE = """
<script>
(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                  bottom: r.bottom}; };
  const shown = e => { const r = e.getBoundingClientRect();
                       const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
                       return hit !== null && (hit === e || e.contains(hit)); };
  const scroller = e => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
                            const s = getComputedStyle(p).overflowX;
                            if (s === "auto" || s === "scroll") return p; }
                          return null; };
  const wide = s => s !== null && s.scrollWidth > s.clientWidth;
  const atRightEdge = e => { const s = scroller(e); if (s) s.scrollLeft = s.scrollWidth;
                             e.scrollIntoView({block: "start", inline: "nearest"}); return s; };
  const out = {viewport: window.innerWidth, page: document.documentElement.scrollWidth,
               matrices: [], timelines: [], charts: []};
  for (const table of document.querySelectorAll("table.matrix")) {
    const s = atRightEdge(table);
    const rows = [...table.querySelectorAll("tbody tr")].map(tr => {
      if (s) {  // the row in the middle of its box, when the box scrolls down too
        const r = tr.getBoundingClientRect(), c = s.getBoundingClientRect();
        s.scrollTop += (r.top + r.bottom) / 2 - (c.top + c.bottom) / 2;
      }
      const label = tr.querySelector("th");
      return {text: label.textContent, box: box(label), shown: shown(label), last: box(tr.lastElementChild)};
    });
    const corner = table.querySelector("thead th");  // with the box scrolled to its last row
    out.matrices.push({scrolls: wide(s), box: box(s || table), labels: rows, last: rows.map(r => r.last),
                       head: {text: corner.textContent, box: box(corner), shown: shown(corner)}});
  }
  for (const svg of document.querySelectorAll("svg.timeline")) {
    const s = atRightEdge(svg);
    const area = s || svg.parentElement;
    const names = [...area.querySelectorAll("text")].filter(t => LANES.includes(t.textContent.trim()));
    out.timelines.push({scrolls: wide(s), box: box(area),
                        lanes: names.map(e => ({text: e.textContent, box: box(e), shown: shown(e)}))});
  }
  for (const chart of document.querySelectorAll(".chart, svg[role=img]:not(.timeline):not(.legend)")) {
    chart.scrollIntoView({block: "start"});
    const labels = [...chart.querySelectorAll(".bar-label, text[text-anchor=end]")];
    out.charts.push({box: box(chart), labels: labels.map(e => ({text: e.textContent, box: box(e)}))});
  }
  const pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
""".replace("LANES", json.dumps(list(LANES)))


def _with_script(page: Path, script: str) -> Path:
    copy = page.with_name(page.stem + ".measured.html")
    text = page.read_text()
    copy.write_text(text.replace("</body>", script + "</body>") if "</body>" in text else text + script)
    return copy


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, *FLAGS, *args], capture_output=True, text=True, timeout=120, check=False)


def layout(page: Path, width: int) -> dict:
    """What `page` looks like in a `width` x 900 window (see the module's docstring)."""
    copy = _with_script(page, MEASURE)
    done = _run(f"--window-size={width},{HEIGHT}", "--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="layout">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise RuntimeError(f"chromium wrote no layout (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(unescape(found.group(1)))


def screenshot(page: Path, width: int, path: Path) -> Path:
    done = _run(f"--window-size={width},{HEIGHT}", f"--screenshot={path}", page.as_uri())
    if not path.is_file():
        raise RuntimeError(f"chromium saved no screenshot (exit {done.returncode}): {done.stderr[-2000:]}")
    return path
