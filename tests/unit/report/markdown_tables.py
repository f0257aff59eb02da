"""Read the tables of a markdown page back, by heading and column label, to check them against their data.

Written independently of the report code (tabulate's and pandas' GitHub tables), so a test compares
what a reader sees on the page with the JSON the page was built from.
"""

from __future__ import annotations


def tables(markdown: str) -> dict[str, list[dict[str, str]]]:
    """Every table of the page under the heading above it (``"#"`` headings included), as rows of
    column label -> cell text. A second table under one heading gets ``" (2)"`` after the heading."""
    found: dict[str, list[dict[str, str]]] = {}
    heading, header, rows = "", None, None
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if header is None:
                header, rows = cells, []
            elif not all(set(cell) <= set(":-") for cell in cells):
                assert rows is not None and len(cells) == len(header), f"ragged row under {heading!r}: {line}"
                rows.append(dict(zip(header, cells, strict=True)))
            continue
        if header is not None and rows is not None:
            name, number = heading, 2
            while name in found:
                name, number = f"{heading} ({number})", number + 1
            found[name] = rows
            header, rows = None, None
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
    return found


def number(cell: str) -> float:
    """A table cell as a number (tabulate and pandas may group thousands)."""
    return float(cell.replace(",", ""))
