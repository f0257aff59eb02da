"""The report's index pages gather every table and figure a producer wrote."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from csconform.report.site import write_index  # noqa: E402


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.images: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"] or "")
        elif tag not in ("meta", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"unbalanced </{tag}>"
        self.open.pop()


def _producer_output(out: Path) -> None:
    frame = pd.DataFrame({"rule": ["A-001", "A-002"], "outcome": ["passed", "failed"], "tests": [2, 1]})
    frame.to_csv(out / "conformance.csv", index=False)
    (out / "conformance.md").write_text(
        "# Conformance matrix\n\nTwo rules.\n\n| rule |\n|---|\n| A-001 |\n\n"
        "```python\nx = 1 < 2\n# not a heading\n```\n"
    )
    (out / "figures").mkdir()
    figure, axes = plt.subplots()
    axes.plot([0, 1], [1, 2])
    figure.savefig(out / "figures" / "scaling_efficiency.png")
    plt.close(figure)


def test_index_lists_pages_tables_and_figures(tmp_path: Path) -> None:
    _producer_output(tmp_path)
    index_md, index_html = write_index(tmp_path)
    markdown = index_md.read_text()
    assert "[Conformance matrix](conformance.md)" in markdown
    assert "![scaling_efficiency](figures/scaling_efficiency.png)" in markdown
    page = index_html.read_text()
    collector = _Collector()
    collector.feed(page)
    assert collector.open == []
    assert "table" in collector.tags
    assert collector.images == ["figures/scaling_efficiency.png"]
    assert '<td class="failed">failed</td>' in page and '<td class="passed">passed</td>' in page
    assert "<p>Two rules.</p>" in page
    assert "<pre>x = 1 &lt; 2\n# not a heading</pre>" in page


def test_index_of_an_empty_folder_is_still_a_page(tmp_path: Path) -> None:
    _, index_html = write_index(tmp_path)
    assert "<h1>csconform report</h1>" in index_html.read_text()
