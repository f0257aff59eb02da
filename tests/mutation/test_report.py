"""The mutation-testing page: mutmut's results joined with the triage list (tests/mutation/report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from report import (
    NOT_RUN_NOTE,
    TRIAGE_KINDS,
    _change_lines,
    default_triage_path,
    draw_sample,
    load_triage,
    mutant_changes,
    wilson_interval,
    write_mutation_report,
)

from csconform.errors import InvalidInputError

AMP = "csconform.engine.amp"
PRECISION = "csconform.engine.precision"


def _results(tmp_path: Path, mutants: list[dict[str, str]]) -> Path:
    path = tmp_path / "mutation.json"
    path.write_text(json.dumps({"tool": "mutmut 3.8.1", "generated": "2026-01-01 00:00 UTC", "mutants": mutants}))
    return path


def _mutant(module: str, number: int, status: str, change: str = "") -> dict[str, str]:
    entry = {"id": f"{module}.x_f__mutmut_{number}", "module": module, "status": status}
    if change:
        entry["change"] = change
    return entry


def _triage(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "equivalent.yaml"
    path.write_text(text)
    return path


def test_without_results_the_page_says_how_to_produce_them(tmp_path):
    (tmp_path / "mutation.csv").write_text("stale\n")
    written = write_mutation_report(tmp_path, triage_path=tmp_path / "none.yaml")
    assert written == [tmp_path / "mutation.md"]
    assert NOT_RUN_NOTE in (tmp_path / "mutation.md").read_text()
    assert "tox -e mutation" in NOT_RUN_NOTE
    assert not (tmp_path / "mutation.csv").exists()


def test_counts_and_kill_rate_per_module_exclude_only_matching_triage(tmp_path):
    mutants = [_mutant(AMP, n, "killed") for n in range(1, 8)]
    mutants += [
        _mutant(AMP, 8, "timeout"),
        _mutant(AMP, 9, "survived", "- a < b / + a <= b"),
        _mutant(AMP, 10, "survived", "- x = 1 / + x = 2"),
        _mutant(PRECISION, 1, "killed"),
        _mutant(PRECISION, 2, "no tests", "- f(x) / + f(None)"),
        _mutant(PRECISION, 3, "survived", "- y / + z"),
    ]
    triage = _triage(
        tmp_path,
        f"""
{AMP}.x_f__mutmut_9: {{kind: identical, change: "- a < b / + a <= b", reason: a never equals b}}
{AMP}.x_f__mutmut_10: {{kind: identical, change: "- x = 0 / + x = 2", reason: recorded for an older function}}
{AMP}.x_f__mutmut_1: {{kind: message, change: "- m / + n", reason: killed now}}
{PRECISION}.x_f__mutmut_2: {{kind: internal, change: "- f(x) / + f(None)", reason: no interface reaches it}}
""",
    )
    write_mutation_report(tmp_path, {"engine": _results(tmp_path, mutants)}, triage)
    table = pd.read_csv(tmp_path / "mutation.csv").set_index("module")
    amp = table.loc[AMP]
    assert (amp["mutants"], amp["killed"], amp["timed_out"], amp["survived"], amp["equivalent"]) == (10, 7, 1, 1, 1)
    assert amp["kill_rate"] == amp["kill_rate_strict"] == pytest.approx(8 / 9, abs=1e-3)
    precision = table.loc[PRECISION]
    assert (precision["survived"], precision["no_tests"], precision["equivalent"], precision["unspecified"]) == (
        1,
        0,
        0,
        1,
    )
    assert precision["kill_rate"] == pytest.approx(1 / 2)
    assert precision["kill_rate_strict"] == pytest.approx(1 / 3, abs=1e-3)
    assert table.loc["total", "mutants"] == 13
    page = (tmp_path / "mutation.md").read_text()
    assert "Below the goal of 90%: csconform.engine.amp, csconform.engine.precision." in page
    assert f"`{AMP}.x_f__mutmut_10` (survived): `- x = 1 / + x = 2`" in page  # its triage is stale
    assert f"`{AMP}.x_f__mutmut_10`: no longer a survivor" in page
    assert f"`{AMP}.x_f__mutmut_1`: no longer a survivor" in page
    assert "- identical (1, equivalent)" in page and "- internal (1, unspecified)" in page


def test_a_module_at_the_goal_is_not_listed_below_it(tmp_path):
    mutants = [_mutant(AMP, n, "killed") for n in range(1, 10)] + [_mutant(AMP, 10, "survived", "- a / + b")]
    write_mutation_report(tmp_path, {"engine": _results(tmp_path, mutants)}, tmp_path / "none.yaml")
    assert "Every module meets the goal of 90%" in (tmp_path / "mutation.md").read_text()


def test_a_triage_entry_of_a_mutant_not_run_waits_instead_of_going_stale(tmp_path):
    mutants = [_mutant(AMP, 1, "killed"), _mutant(AMP, 2, "not checked"), _mutant(AMP, 3, "killed")]
    triage = _triage(
        tmp_path,
        f"{AMP}.x_f__mutmut_2: {{kind: identical, change: '- a / + b', reason: r}}\n"
        f"{AMP}.x_f__mutmut_3: {{kind: identical, change: '- a / + b', reason: r}}\n",
    )
    write_mutation_report(tmp_path, {"engine": _results(tmp_path, mutants)}, triage)
    page = (tmp_path / "mutation.md").read_text()
    assert "## Stale triage entries (1)" in page and f"`{AMP}.x_f__mutmut_3`" in page
    assert f"`{AMP}.x_f__mutmut_2`" not in page
    assert "1 more triage entries name mutants not run here" in page


def test_the_page_says_how_the_results_were_produced(tmp_path):
    mutants = [_mutant(AMP, 1, "killed")]
    write_mutation_report(tmp_path, {"engine": _results(tmp_path, mutants)}, tmp_path / "none.yaml")
    assert "Produced by `tox -e mutation` in one clean run" in (tmp_path / "mutation.md").read_text()
    resumed = json.loads((tmp_path / "mutation.json").read_text()) | {"run": "amp alone, resumed."}
    (tmp_path / "mutation.json").write_text(json.dumps(resumed))
    write_mutation_report(tmp_path, {"engine": tmp_path / "mutation.json"}, tmp_path / "none.yaml")
    page = (tmp_path / "mutation.md").read_text()
    assert "How these results were produced: amp alone, resumed." in page
    assert "one clean run" not in page


@pytest.mark.parametrize(
    "text, problem",
    [
        ("- a\n- b\n", "mapping"),
        ("m.x_f__mutmut_1: {kind: identical, change: x}\n", "kind, change and reason"),
        ("m.x_f__mutmut_1: {kind: harmless, change: x, reason: y}\n", "unknown kind 'harmless'"),
    ],
)
def test_a_malformed_triage_list_is_refused(tmp_path, text, problem):
    with pytest.raises(InvalidInputError, match=problem):
        load_triage(_triage(tmp_path, text))


def test_malformed_results_are_refused(tmp_path):
    (tmp_path / "mutation.json").write_text("{")
    with pytest.raises(InvalidInputError, match="invalid JSON"):
        write_mutation_report(tmp_path, triage_path=tmp_path / "none.yaml")


def test_the_repository_triage_list_is_valid_and_names_modules_of_the_package():
    package = Path(__file__).resolve().parents[2] / "csconform"
    triage = load_triage(default_triage_path())
    assert triage, "tests/mutation/equivalent.yaml is empty"
    for mutant_id, entry in triage.items():
        module = mutant_id.rsplit(".", 1)[0]
        assert module.startswith("csconform.") and "__mutmut_" in mutant_id, mutant_id
        assert (package.parent / (module.replace(".", "/") + ".py")).is_file(), f"{mutant_id}: no such module"
        assert entry["kind"] in TRIAGE_KINDS and entry["reason"].strip() and entry["change"].startswith("- ")


def test_mutation_runs_order_tests_fastest_first_and_do_not_shrink(pytester):
    pytester.makepyfile(
        test_order="""
        from hypothesis import Phase, settings

        def test_slow(): pass
        def test_fast(): assert Phase.shrink not in settings().phases
        def test_unknown(): pass
        """
    )
    durations = {"test_order.py::test_slow": 3.0, "test_order.py::test_fast": 0.5, "test_order.py::test_unknown": 1.0}
    (pytester.path / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": durations}))
    plugin = Path(__file__).resolve().with_name("plugin.py")
    pytester.syspathinsert(plugin.parent)
    result = pytester.runpytest("-p", "plugin", "-v", "-p", "no:csconform", "-p", "no:cacheprovider")
    order = [line.split("::")[1].split()[0] for line in result.outlines if "::test_" in line and "PASSED" in line]
    assert order == ["test_fast", "test_unknown", "test_slow"]


def test_out_of_reach_survivors_are_triaged_but_count_as_not_killed(tmp_path):
    mutants = [_mutant(AMP, n, "killed") for n in range(1, 9)]
    mutants += [_mutant(AMP, 9, "survived", "- f(a, b) / + f(a, None)"), _mutant(AMP, 10, "survived", "- m / + n")]
    triage = _triage(
        tmp_path,
        f"""
{AMP}.x_f__mutmut_9: {{kind: scale, change: "- f(a, b) / + f(a, None)", reason: only a 40 GB model shows it}}
{AMP}.x_f__mutmut_10: {{kind: message, change: "- m / + n", reason: wording}}
""",
    )
    write_mutation_report(tmp_path, {"engine": _results(tmp_path, mutants)}, triage)
    amp = pd.read_csv(tmp_path / "mutation.csv").set_index("module").loc[AMP]
    assert (amp["survived"], amp["out_of_reach"], amp["unspecified"]) == (0, 1, 1)
    assert amp["kill_rate"] == pytest.approx(8 / 9, abs=1e-3)  # out of reach: still in the denominator
    assert amp["kill_rate_strict"] == pytest.approx(8 / 10, abs=1e-3)
    page = (tmp_path / "mutation.md").read_text()
    assert "## Not killed and not triaged (0)" in page and "- scale (1, out_of_reach)" in page


MATRIX = "csconform.spec.matrix"


def test_each_suite_has_its_table_goal_and_triage(tmp_path):
    engine = _results(
        tmp_path, [_mutant(AMP, n, "killed") for n in range(1, 10)] + [_mutant(AMP, 10, "survived", "- a")]
    )
    judge_mutants = [_mutant(MATRIX, n, "killed") for n in range(1, 10)]
    judge_mutants += [_mutant(MATRIX, 10, "survived", "- b"), _mutant(MATRIX, 11, "survived", "- c")]
    judge = tmp_path / "mutation_judge.json"
    judge.write_text(
        json.dumps(
            {
                "tool": "mutmut 3.8.1",
                "generated": "2026-01-02 00:00 UTC",
                "tests": ["tests/meta/test_verdicts.py", "tests/unit/report"],
                "mutants": judge_mutants,
            }
        )
    )
    triage = _triage(
        tmp_path,
        f"{MATRIX}.x_f__mutmut_11: {{kind: identical, change: '- c', reason: r}}\n"
        f"csconform.report.site.x_f__mutmut_1: {{kind: identical, change: '- d', reason: not run anywhere}}\n",
    )
    written = write_mutation_report(tmp_path, {"engine": engine, "judge": judge}, triage)
    assert written == [tmp_path / "mutation.md", tmp_path / "mutation.csv", tmp_path / "mutation_judge.csv"]
    engine_table = pd.read_csv(tmp_path / "mutation.csv").set_index("module")
    judge_table = pd.read_csv(tmp_path / "mutation_judge.csv").set_index("module")
    assert list(engine_table.index) == [AMP, "total"] and list(judge_table.index) == [MATRIX, "total"]
    assert engine_table.loc[AMP, "kill_rate"] == pytest.approx(0.9)
    assert (judge_table.loc[MATRIX, "equivalent"], judge_table.loc[MATRIX, "survived"]) == (1, 1)
    assert judge_table.loc[MATRIX, "kill_rate"] == pytest.approx(0.9)
    page = (tmp_path / "mutation.md").read_text()
    engine_part, judge_part = page.split("## The reference engine, against the conformance suite")[1].split(
        "## The judge, against the harness's unit and meta tests"
    )
    assert "Every module meets the goal of 90%" in engine_part
    assert f"Below the goal of 95%: {MATRIX}." in judge_part
    assert "ran, for each mutant, the tests of tests/meta/test_verdicts.py, tests/unit/report" in judge_part
    assert "ran, for each mutant, the conformance tests (csconform/conformance" in engine_part
    # an entry of a module no suite ran waits; it is not stale
    assert "## Stale triage entries (0)" in page and "1 more triage entries name mutants not run here" in page


def test_a_suite_without_results_says_how_to_produce_them(tmp_path):
    engine = _results(tmp_path, [_mutant(AMP, 1, "killed")])
    (tmp_path / "mutation_judge.csv").write_text("stale\n")
    written = write_mutation_report(tmp_path, {"engine": engine}, tmp_path / "none.yaml")
    assert written == [tmp_path / "mutation.md", tmp_path / "mutation.csv"]
    assert not (tmp_path / "mutation_judge.csv").exists()
    page = (tmp_path / "mutation.md").read_text()
    assert "Not run yet: run `tox -e mutation` to produce reports/mutation_judge.json." in page


SOURCE = """\
def area(width, height=2):
    total = width * height
    return total


class Box:
    def grow(self, by):
        return self.size + by
"""


def test_each_mutant_s_change_is_read_from_one_parse_of_the_mutated_file(tmp_path):
    """The lines a mutant removes and adds, the function named as in the source (a changed default shows
    in its def line), for functions and methods; checked against mutmut's own diff where mutmut is installed."""
    mutmut_file = pytest.importorskip("mutmut.mutation.file_mutation")
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "shapes.py").write_text(SOURCE, encoding="utf-8")
    mutated = tmp_path / "mutants" / "pkg" / "shapes.py"
    mutated.parent.mkdir(parents=True)
    result = mutmut_file.mutate_file_contents("pkg/shapes.py", SOURCE)
    mutated.write_text(result.code, encoding="utf-8")
    changes = mutant_changes(mutated)
    assert set(changes) == set(result.mutant_names) and len(changes) >= 4
    assert changes["x_area__mutmut_1"] == "- def area(width, height=2): / + def area(width, height=3):"
    assert changes["xǁBoxǁgrow__mutmut_1"] == "- return self.size + by / + return self.size - by"
    for name in result.mutant_names:
        mutmut_diff = get_diff_for_mutant(f"pkg.shapes.{name}", source=result.code, path=str(mutated))
        assert changes[name] == _change_lines(mutmut_diff), name


MUTATED = """\
def x_area__mutmut_orig(width, height=2):
    total = width * height
    return total


def x_area__mutmut_1(width, height=3):
    total = width * height
    return total


def x_area__mutmut_2(width, height=2):
    total = None
    return total


class Box:
    def xǁBoxǁgrow__mutmut_orig(self, by):
        return self.size + by

    def xǁBoxǁgrow__mutmut_1(self, by):
        return self.size - by
"""


def test_a_mutated_file_s_changes_without_mutmut(tmp_path):
    """The same reading on a file laid out as mutmut writes one (each mutant beside its function's copy)."""
    (tmp_path / "shapes.py").write_text(MUTATED, encoding="utf-8")
    assert mutant_changes(tmp_path / "shapes.py") == {
        "x_area__mutmut_1": "- def area(width, height=2): / + def area(width, height=3):",
        "x_area__mutmut_2": "- total = width * height / + total = None",
        "xǁBoxǁgrow__mutmut_1": "- return self.size + by / + return self.size - by",
    }


def test_a_sample_is_stratified_capped_at_each_module_and_fixed_by_its_seed():
    ids = [f"{AMP}.x_f__mutmut_{n}" for n in range(1, 101)] + [f"{PRECISION}.x_g__mutmut_{n}" for n in range(1, 4)]
    drawn = draw_sample(list(reversed(ids)), per_module=10, seed=7)
    assert drawn == draw_sample(ids, per_module=10, seed=7)  # the order the ids come in changes nothing
    assert sum(i.startswith(AMP + ".") for i in drawn) == 10 and len(set(drawn)) == 13
    assert {i for i in drawn if i.startswith(PRECISION)} == set(ids[100:])  # a smaller module: every mutant
    assert draw_sample(ids, per_module=10, seed=8) != drawn
    with pytest.raises(InvalidInputError, match="at least one mutant per module"):
        draw_sample(ids, per_module=0, seed=7)


def test_a_module_added_or_left_out_leaves_the_other_modules_samples_as_they_were():
    amp = [f"{AMP}.x_f__mutmut_{n}" for n in range(1, 101)]
    precision = [f"{PRECISION}.x_g__mutmut_{n}" for n in range(1, 101)]
    earlier = "csconform.engine.checkpoint"  # sorts before both
    added = [f"{earlier}.x_h__mutmut_{n}" for n in range(1, 101)]
    alone = draw_sample(amp + precision, per_module=10, seed=7)
    beside = draw_sample(added + amp + precision, per_module=10, seed=7)
    assert [i for i in beside if not i.startswith(earlier + ".")] == alone
    assert draw_sample(precision, per_module=10, seed=7) == [i for i in alone if i.startswith(PRECISION + ".")]


@pytest.mark.parametrize(
    "successes, trials, low, high",
    [(8, 10, 0.4902, 0.9433), (40, 40, 0.9124, 1.0), (0, 5, 0.0, 0.4345)],
)
def test_the_wilson_interval_of_a_rate(successes, trials, low, high):
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=1e-4)


def test_a_sampled_suite_s_page_says_it_is_a_sample_with_intervals_and_a_weighted_total(tmp_path):
    """Module amp: 10 of 100 mutants sampled, all killed; precision: all 10, half killed. The total weights
    amp ten times (100 estimated judged mutants against 10), not the pooled 15 of 20."""
    mutants = [_mutant(AMP, n, "killed") for n in range(1, 11)]
    mutants += [_mutant(PRECISION, n, "killed") for n in range(1, 6)]
    mutants += [_mutant(PRECISION, n, "survived", f"- a / + b{n}") for n in range(6, 11)]
    results = json.loads(_results(tmp_path, mutants).read_text()) | {
        "sample": {"per_module": 10, "seed": 7, "population": {AMP: 100, PRECISION: 10}},
        "earlier": {"about": "the full run of 2026-01-01", "table": [{"module": AMP, "mutants": 90, "kill_rate": 0.5}]},
    }
    (tmp_path / "mutation.json").write_text(json.dumps(results))
    write_mutation_report(tmp_path, {"engine": tmp_path / "mutation.json"}, tmp_path / "none.yaml")
    table = pd.read_csv(tmp_path / "mutation.csv").set_index("module")
    assert list(table.loc[AMP, ["population", "mutants", "killed"]]) == [100, 10, 10]
    assert table.loc[AMP, "kill_rate_low"] == pytest.approx(0.722, abs=1e-3)
    assert table.loc[PRECISION, ["kill_rate_low", "kill_rate_high"]].tolist() == pytest.approx([0.237, 0.763], abs=1e-3)
    assert table.loc["total", "population"] == 110 and table.loc["total", "mutants"] == 20
    assert table.loc["total", "kill_rate"] == pytest.approx(105 / 110, abs=1e-3)
    weighted_low = (100 * table.loc[AMP, "kill_rate_low"] + 10 * table.loc[PRECISION, "kill_rate_low"]) / 110
    assert table.loc["total", "kill_rate_low"] == pytest.approx(weighted_low, abs=1e-3)
    page = (tmp_path / "mutation.md").read_text()
    assert "a seeded stratified random sample: 20 of the 110 mutants, up to 10 of each module drawn with seed 7" in page
    assert "one clean run" not in page and "Not one clean `tox -e mutation` run: a sample." in page
    assert "On the sample: Below the goal of 90%: csconform.engine.precision." in page
    assert "For comparison, the full run of 2026-01-01:" in page
    assert "| csconform.engine.amp |        90 |       0.500 |" in page


def test_in_a_sample_a_triage_entry_of_a_mutant_not_drawn_waits_instead_of_going_stale(tmp_path):
    """Entry 2 names a mutant the sample did not draw: it waits. Entry 3's mutant was drawn and killed: stale."""
    mutants = [_mutant(AMP, 1, "killed"), _mutant(AMP, 3, "killed")]
    results = json.loads(_results(tmp_path, mutants).read_text()) | {
        "sample": {"per_module": 2, "seed": 7, "population": {AMP: 10}}
    }
    (tmp_path / "mutation.json").write_text(json.dumps(results))
    triage = _triage(
        tmp_path,
        f"{AMP}.x_f__mutmut_2: {{kind: identical, change: '- a / + b', reason: r}}\n"
        f"{AMP}.x_f__mutmut_3: {{kind: identical, change: '- a / + b', reason: r}}\n",
    )
    write_mutation_report(tmp_path, {"engine": tmp_path / "mutation.json"}, triage)
    page = (tmp_path / "mutation.md").read_text()
    assert "## Stale triage entries (1)" in page and f"`{AMP}.x_f__mutmut_3`" in page
    assert f"`{AMP}.x_f__mutmut_2`" not in page
    assert "1 more triage entries name mutants not run here" in page
