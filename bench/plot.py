#!/usr/bin/python3
"""bench/plot.py - the figures of bench/RESULTS.md as a picture: one panel
per table that has a "ratio" column (the ratios against plain python),
one bar per variant, a line at 1.0x and a mark at the budget where there
is one; bars over their budget are drawn red. It reads only the Markdown
bench/run writes and writes SVG by hand: no third-party module.

    bench/plot.py [RESULTS.md [RESULTS.svg]]
"""
import html
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROW_H, GAP, LABEL_W, BAR_W, PAD = 18, 6, 330, 380, 12
COLORS = {"within": "#3b7dd8", "over": "#d8453b", None: "#8a9bb0"}


def parse_float(cell):
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*x?\s*$", cell)
    return float(m.group(1)) if m else None


def tables(text):
    """[(title, [(label, ratio, budget, verdict)])] for every table with a
    ratio column, in file order."""
    out, title, header = [], None, None
    for line in text.splitlines():
        if line.startswith("### "):
            title, header = line[4:].strip(), None
            continue
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            if "ratio" in header and title:
                out.append((title, []))
            continue
        if set(line) <= set("|-: ") or "ratio" not in header:
            continue
        row = dict(zip(header, cells))
        ratio = parse_float(row.get("ratio", ""))
        if ratio is None or not out or out[-1][0] != title:
            continue
        verdict = row.get("verdict") or None
        if verdict not in ("within", "over"):
            verdict = None
        out[-1][1].append((cells[0], ratio, parse_float(row.get("budget",
                                                                "")),
                           verdict))
    return [t for t in out if t[1]]


def svg(panels):
    top = max([r for _, rows in panels for _, r, _, _ in rows] +
              [b or 0 for _, rows in panels for _, _, b, _ in rows] + [1.0])
    top = max(1.2, top * 1.05)
    scale = BAR_W / top
    y, parts = PAD, []
    for title, rows in panels:
        parts.append(f'<text x="{PAD}" y="{y + 14}" class="h">'
                     f'{html.escape(title)}</text>')
        y += 22
        y0 = y
        for label, ratio, budget, verdict in rows:
            x = PAD + LABEL_W
            w = max(1.0, ratio * scale)
            parts.append(f'<text x="{x - 6}" y="{y + 13}" class="l">'
                         f'{html.escape(label)}</text>')
            parts.append(f'<rect x="{x}" y="{y + 2}" width="{w:.1f}" '
                         f'height="{ROW_H - 4}" fill="{COLORS[verdict]}">'
                         f'<title>{html.escape(label)}: {ratio:.3f}x'
                         f'</title></rect>')
            parts.append(f'<text x="{x + w + 4:.1f}" y="{y + 13}" '
                         f'class="v">{ratio:.3f}x</text>')
            if budget:
                bx = x + budget * scale
                parts.append(f'<line x1="{bx:.1f}" y1="{y}" x2="{bx:.1f}" '
                             f'y2="{y + ROW_H}" class="b"/>')
            y += ROW_H
        one = PAD + LABEL_W + scale
        parts.append(f'<line x1="{one:.1f}" y1="{y0}" x2="{one:.1f}" '
                     f'y2="{y}" class="one"/>')
        y += GAP + 8
    width = PAD * 2 + LABEL_W + BAR_W + 70
    legend = (f'<text x="{PAD}" y="{y + 10}" class="l0">ratio against '
              'plain python (1.0x: grey line); dashed: the budget; red: '
              'over budget</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{y + 24}" viewBox="0 0 {width} {y + 24}">\n'
            '<style>text{font:12px sans-serif;fill:#222}'
            '.h{font-weight:bold;font-size:13px}.l{text-anchor:end}'
            '.v{fill:#444}.one{stroke:#999;stroke-width:1}'
            '.b{stroke:#222;stroke-width:1.5;stroke-dasharray:3 2}'
            '</style>\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(parts) + "\n" + legend + "\n</svg>\n")


def main(argv):
    src = pathlib.Path(argv[1]) if len(argv) > 1 else HERE / "RESULTS.md"
    dst = pathlib.Path(argv[2]) if len(argv) > 2 else src.with_suffix(
        ".svg")
    try:
        text = src.read_text()
    except OSError as e:
        print(f"bench/plot.py: read {src}: {e.strerror}\n"
              "Hint: make bench writes it", file=sys.stderr)
        return 1
    panels = tables(text)
    if not panels:
        print(f"bench/plot.py: {src} has no table with a ratio column",
              file=sys.stderr)
        return 1
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.write_text(svg(panels))
    tmp.replace(dst)
    print(f"bench/plot.py: wrote {dst} ({len(panels)} panels)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
