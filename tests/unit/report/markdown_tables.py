"""Read the tables of a markdown page back, by heading and column label, to check them against their data.

Written independently of the report code (tabulate's and pandas' GitHub tables), so a test compares
what a reader sees on the page with the JSON the page was built from.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

SHOWN_DIGITS = 5e-4  # the pages show numbers to 4 significant digits (pandas' floatfmt=".4g")


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


def shows(cell: str, value: Any) -> bool:
    """Whether a table cell shows ``value``: a number to the pages' 4 significant digits, a flag as
    True/False, a missing value (None, or NaN read back from a CSV) as an empty cell or ``nan``."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return cell == str(bool(value))
    if value is None:
        return cell == ""
    if isinstance(value, float) and math.isnan(value):
        return cell in ("", "nan")
    if isinstance(value, int | float) or type(value).__module__ == "numpy":
        return number(cell) == pytest.approx(float(value), rel=SHOWN_DIGITS, abs=1e-300)
    return cell == str(value)


def assert_table_shows(rows: list[dict[str, str]], frame: Any) -> None:
    """The rows read from a page are the frame's (a pandas DataFrame), in order, every column labelled
    as in the frame (so as in the CSV written from it)."""
    assert rows, "the page shows no such table"
    assert list(rows[0]) == list(frame.columns)
    assert len(rows) == len(frame)
    for row, (_, expected) in zip(rows, frame.iterrows(), strict=True):
        for column in frame.columns:
            assert shows(row[column], expected[column]), (column, row[column], expected[column])
