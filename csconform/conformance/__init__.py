"""The conformance suite: one test module per spec area, shipped inside the package.

It travels with the wheel (as ``zarr.testing`` ships its state machines), so a runtime builder who
only installed csconform can judge their implementation::

    csconform check --engine their.module
    pytest --pyargs csconform.conformance --engine their.module

Every test reaches the implementation through the ``engine`` fixture of the csconform pytest plugin
and names the rules it checks with ``@pytest.mark.spec(...)``.

A test is known by the same id wherever the package is installed: its path from the folder holding
the ``csconform`` package (``csconform/conformance/test_x.py::test_y[...]``), which is also its
pytest node id in a source checkout. Expected-failure files and triage entries use that id.
"""

from __future__ import annotations

from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
PACKAGE_NAME = __name__  # "csconform.conformance", for pytest --pyargs


def suite_test_id(path: Path, nodeid: str) -> str:
    """The installation-independent id of a test: the suite's files as seen from the package root.

    ``nodeid`` is pytest's id (relative to whatever rootdir the run chose); a test outside the suite
    keeps it unchanged.
    """
    try:
        relative = Path(path).resolve().relative_to(SUITE_DIR.parent.parent)
    except ValueError:
        return nodeid
    _, separator, rest = nodeid.partition("::")
    return relative.as_posix() + separator + rest
