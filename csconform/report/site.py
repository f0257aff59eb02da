"""The report's front pages: ``index.md`` and ``index.html`` over everything in the report folder.

Both open on the summary (:mod:`csconform.report.summary`): per implementation and area, the rules by
level and outcome. Both say which csconform and which spec (its sha256) made them. Each producer
(conformance, performance, placement, benchmarks) writes its own markdown, CSV and PNG files; this
module only gathers them, so a new table appears on the front page without touching it. In the
HTML page every table is rendered from its CSV with pandas, and every figure is embedded by relative
path, so the folder can be opened straight from disk or served as is.
"""

from __future__ import annotations

import html
import io
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from csconform import __version__
from csconform.documents import read_text
from csconform.errors import InputFileError
from csconform.output_guard import write_text
from csconform.report.summary import rule_anchor, summary_html, summary_markdown
from csconform.spec import load_spec, spec_digest

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 1rem 0; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } .scroll { overflow-x: auto; }
figure { margin: 1rem 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
nav a { margin-right: 1rem; } .note { color: #555; } pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; }
td.failed { background: #f8d0d0; } td.passed { background: #d8f0d8; } td.pending { background: #f4f0d0; }
table.summary td { min-width: 5rem; } table.summary a { margin-right: 0.3rem; } td.none { color: #999; }
a.failed { color: #b00; font-weight: bold; } a.xfailed { color: #a60; } details { display: inline; }
tr:target { outline: 2px solid #444; } ul.verdicts { margin: 0.3rem 0; }
"""


def _page_text(markdown: Path) -> str:
    """A page's text; a page in the folder that cannot be read (not UTF-8, a pipe, ...) says so."""
    try:
        return read_text(markdown, what="report page")
    except InputFileError as error:
        return f"# {markdown.stem}\n\n(This page could not be read: {error}.)"


def _title(markdown: Path) -> str:
    for line in _page_text(markdown).splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return markdown.stem.replace("_", " ").capitalize()


def _blocks(markdown: Path) -> list[tuple[str, str]]:
    """The markdown's paragraphs (``p``) and fenced code blocks (``pre``), in order, for the HTML page."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    code: list[str] | None = None
    for line in _page_text(markdown).splitlines():
        if line.startswith("```"):
            if code is None:
                code = []
            else:
                blocks.append(("pre", "\n".join(code)))
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        if not line.strip() or line.startswith(("#", "|", "![")):
            if current:
                blocks.append(("p", " ".join(current)))
                current = []
            continue
        current.append(line.strip())
    if current:
        blocks.append(("p", " ".join(current)))
    return blocks


def _tables_for(markdown: Path) -> list[Path]:
    """CSV files that belong to a markdown page: the same stem, or the stem plus a suffix."""
    return sorted(p for p in markdown.parent.glob(f"{markdown.stem}*.csv"))


def _figures(out_dir: Path) -> list[Path]:
    return sorted((out_dir / "figures").glob("*.png")) if (out_dir / "figures").is_dir() else []


def _table_html(csv_path: Path) -> str:
    """The CSV as an HTML table; in a table of rules each row gets an id the summary links to."""
    try:
        frame = pd.read_csv(io.StringIO(read_text(csv_path, what="report table (CSV)")))
    except (InputFileError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        return f"<p class='note'>(This table could not be read: {html.escape(str(error))}.)</p>"
    table = frame.to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}", na_rep="")
    if "outcome" in frame.columns:
        for outcome in ("failed", "passed", "pending"):
            table = table.replace(f"<td>{outcome}</td>", f'<td class="{outcome}">{outcome}</td>')
    if "rule" in frame.columns:
        for rule_id in frame["rule"]:
            anchor = rule_anchor(csv_path.stem, str(rule_id))
            table = table.replace(f"<tr>\n      <td>{rule_id}</td>", f"<tr id='{anchor}'>\n      <td>{rule_id}</td>", 1)
    return table


def stamp_text() -> str:
    """Which csconform and which spec made the report (the guard in tests/unit/report checks it)."""
    return f"csconform {__version__} from the spec with sha256 {spec_digest()}"


# the front page reads top-down: does it conform (and how much would the suite catch), how fast is it,
# how good is the placer, what it costs
PAGE_ORDER = (
    "conformance",
    "conformance_cstorch",
    "differential_cstorch",
    "mutation",
    "performance",
    "ispd2020",
    "mixed_precision_benchmark",
    "benchmarks",
)


def _page_rank(page: Path) -> tuple[int, str]:
    return (PAGE_ORDER.index(page.stem) if page.stem in PAGE_ORDER else len(PAGE_ORDER), page.stem)


def write_index(out_dir: Path) -> list[Path]:
    pages = sorted((p for p in out_dir.glob("*.md") if p.name not in ("index.md", "README.md")), key=_page_rank)
    figures = _figures(out_dir)
    generated = f"Generated by {stamp_text()} on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}."
    spec = load_spec()

    lines = ["# csconform report\n", f"{generated}\n", *summary_markdown(out_dir, spec), "## Tables\n"]
    lines += [f"- [{_title(page)}]({page.name})" for page in pages]
    lines += ["", "## Figures\n"]
    lines += [f"![{figure.stem}](figures/{figure.name})\n" for figure in figures]
    index_md = out_dir / "index.md"
    write_text(index_md, "\n".join(lines) + "\n", encoding="utf-8")

    body = [f"<h1>csconform report</h1><p class='note'>{html.escape(generated)}</p>", summary_html(out_dir, spec)]
    body.append(
        "<nav><a href='#summary'>Summary</a>"
        + "".join(f"<a href='#{p.stem}'>{html.escape(_title(p))}</a>" for p in pages)
        + "<a href='#figures'>Figures</a></nav>"
    )
    for page in pages:
        body.append(f"<h2 id='{page.stem}'>{html.escape(_title(page))}</h2>")
        body += [f"<{kind}>{html.escape(text)}</{kind}>" for kind, text in _blocks(page)]
        for table in _tables_for(page):
            body.append(f"<h3>{html.escape(table.name)}</h3><div class='scroll'>{_table_html(table)}</div>")
        body.append(f"<p class='note'>Markdown: <a href='{page.name}'>{page.name}</a></p>")
    body.append("<h2 id='figures'>Figures</h2>")
    body += [
        f"<figure><img src='figures/{f.name}' alt='{html.escape(f.stem)}'>"
        f"<figcaption>{html.escape(f.stem.replace('_', ' '))}</figcaption></figure>"
        for f in figures
    ]
    index_html = out_dir / "index.html"
    write_text(
        index_html,
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>csconform report</title>"
        f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n",
        encoding="utf-8",
    )
    return [index_md, index_html]
