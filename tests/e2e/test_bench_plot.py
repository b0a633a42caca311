"""make bench's picture (issue 19 item 6): bench/plot.py turns every table
of bench/RESULTS.md that has a ratio column into a panel of bars, with the
budget marked and what is over it in red, as SVG written by hand."""
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import REPO

PLOT = REPO / "bench" / "plot.py"
NS = "{http://www.w3.org/2000/svg}"

SAMPLE = """# Benchmark results

### Start-up

| variant | median ms | min ms | max ms | ratio | budget | verdict |
|---|---:|---:|---:|---:|---:|---|
| python -c pass | 27.6 | 27.2 | 28.0 | 1.000x |  |  |
| python-sb -c pass (subprocess) | 29.5 | 29.1 | 31.2 | 1.071x | 1.10x | within |
| python-sb -c pass (landlock) | 40.0 | 30.2 | 41.4 | 1.450x | 1.15x | over |

### Notified connects

| case | median connect | added | budget | verdict |
|---|---:|---:|---:|---|
| python | 21.2 us | | | |
"""


def plot(tmp_path, text):
    src, dst = tmp_path / "R.md", tmp_path / "R.svg"
    src.write_text(text)
    r = subprocess.run([sys.executable, str(PLOT), str(src), str(dst)],
                       capture_output=True, text=True)
    return r, dst


def test_bars_budgets_and_verdicts(tmp_path):
    r, dst = plot(tmp_path, SAMPLE)
    assert r.returncode == 0, r.stderr
    root = ET.parse(dst).getroot()
    assert root.tag == NS + "svg"
    texts = [t.text for t in root.iter(NS + "text")]
    assert "Start-up" in texts
    assert "Notified connects" not in texts  # no ratio column
    bars = [b for b in root.iter(NS + "rect") if b.find(NS + "title")
            is not None]
    assert [b.find(NS + "title").text for b in bars] == [
        "python -c pass: 1.000x",
        "python-sb -c pass (subprocess): 1.071x",
        "python-sb -c pass (landlock): 1.450x"]
    widths = [float(b.get("width")) for b in bars]
    assert widths[0] < widths[1] < widths[2]
    assert bars[2].get("fill") == "#d8453b"  # over its budget: red
    assert bars[1].get("fill") == "#3b7dd8"
    budgets = [ln for ln in root.iter(NS + "line")
               if ln.get("class") == "b"]
    assert len(budgets) == 2


def test_the_committed_results_plot(tmp_path):
    text = (REPO / "bench" / "RESULTS.md").read_text()
    r, dst = plot(tmp_path, text)
    assert r.returncode == 0, r.stderr
    ET.parse(dst)
    n = sum(1 for line in text.splitlines() if line.startswith("| ")
            and line.rstrip().endswith("|") and "x |" in line)
    bars = [b for b in ET.parse(dst).getroot().iter(NS + "rect")
            if b.find(NS + "title") is not None]
    assert len(bars) >= 10 and len(bars) <= n


def test_bad_input_is_named(tmp_path):
    r, _ = plot(tmp_path, "# nothing here\n")
    assert r.returncode == 1 and "no table with a ratio column" in r.stderr
    r = subprocess.run([sys.executable, str(PLOT), str(tmp_path / "no.md")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "Hint: make bench" in r.stderr
    # a label cannot inject markup
    r, dst = plot(tmp_path, SAMPLE.replace("python -c pass |",
                                           "<script>x</script> |", 1))
    assert r.returncode == 0
    assert "<script>" not in dst.read_text()
