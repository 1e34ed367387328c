"""report.html renders in a real headless browser (Debian's chromium; .ci/run installs it): a screenshot that is
not blank, and every plot present as an image the page decodes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from kforge.suite.report import write_reports
from kforge.suite.results import SuiteRow, summarize

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="needs chromium (apt-get install chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def rows() -> list[SuiteRow]:
    return [SuiteRow(problem="gemm_gelu.py", path="/p/a", status="solved", verdict="correct", runtime_ms=0.41,
                     spread=0.02, speedup_vs_eager=2.4, speedup_vs_compile=1.3, roofline_share=0.61, wall_s=40.0,
                     attempts=6),
            SuiteRow(problem="norms/layer_norm.py", path="/p/b", status="solved", verdict="correct", runtime_ms=1.2,
                     speedup_vs_eager=0.8, speedup_vs_compile=0.7, wall_s=25.0, attempts=4),
            SuiteRow(problem="scan.py", path="/p/c", status="unsolved", verdict="rejected", rule="static.io",
                     reason="the C++ may not read files <script>alert(1)</script>", wall_s=5.0, attempts=2)]


def browse(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


@needs_browser
def test_the_report_renders_with_its_plots(tmp_path: Path) -> None:
    data = rows()
    write_reports(data, summarize(data), tmp_path)
    page = tmp_path / "report.html"
    assert "<script>" not in page.read_text()  # a reason is text, never markup

    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,2400")
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50, "the screenshot is blank"
    bars = sum(count for count, (r, g, b) in colours if b > 150 and r < 100)  # matplotlib's first colour, blue
    assert bars > 2000, "no plot shows in the screenshot"

    # The page's own script-free DOM, as the browser parsed it: four images, each decoded with a size.
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace(
        "</body>", "<script>window.onload=()=>{document.title=[...document.images].map("
                   "i=>i.complete&&i.naturalWidth>0).join(',')}</script></body>"))
    dom = browse(probe, tmp_path, "--dump-dom", "--virtual-time-budget=5000").stdout
    assert "<title>true,true,true,true</title>" in dom
