"""Hypothesis strategies for adversarial cases of every ``csconform`` subcommand.

Each ``*_cases`` strategy draws a :class:`~adversarial_cases.Case`: input files derived from a valid
one by a mutation (truncated, binary, another encoding, a byte-order mark, huge, deeply nested,
a YAML alias bomb, a number made non-finite, past int64 or of the wrong type, a duplicated key, a
FIFO), and a command line whose
options are valid, nearly valid or junk, with output paths that may collide with the inputs (the
same name, another spelling, a symbolic or hard link) or lie where nothing can be written.

The expensive parts of a command are kept out of reach by the strategies themselves, not by the
properties: a random ``report`` skips the conformance run and the ISPD instances, a random ``check``
never names a working engine without a broken expected-failures file, and a random ``place`` gets a
small instance and a time limit of a few seconds.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from adversarial_cases import ROOT, Case
from hypothesis import strategies as st

CONFIG_JSON = (ROOT / "csconform/perf/configs/gpt2_small.json").read_text(encoding="utf-8")
CONFIG_YAML = yaml.safe_dump(json.loads(CONFIG_JSON), sort_keys=False)
KGRAPH = (ROOT / "csconform/perf/instances/ispd2020/K.kgraph").read_text(encoding="utf-8")
MEASURED_CSV = (ROOT / "csconform/perf/measured/calibration.csv").read_text(encoding="utf-8")
BENCHMARK_JSON = json.dumps(
    {
        "machine_info": {"node": "x"},
        "benchmarks": [
            {
                "name": "test_step[fc_mnist]",
                "group": "mixed",
                "stats": {"min": 0.001, "median": 0.0012, "mean": 0.0013, "rounds": 5},
                "extra_info": {"model": "fc_mnist", "mixed_ms": [1.0, 1.1], "fp32_ms": [2.0, 2.1]},
            }
        ],
    },
    indent=1,
)
TRIAGE_YAML = """implementation: empty_engine
package: csconform
version: "0.1.0"
rules:
  - ids: [GRADSCALER-010]
    verdict: departs-from-docs
    finding: it does something else
    evidence: engine.py:12
    resolution: triaged
"""
EXPECTED_TXT = "GRADSCALER-010  # known\nLR-001\n"
PARAMS_YAML = (ROOT / "tests/unit/perf_model/data/zoo_params/2.10/params_gpt3_xl.yaml").read_text(encoding="utf-8")
SPEC_FILE = "metrics.yaml"
TRAINING_SCRIPT = (ROOT / "examples" / "fc_mnist_runner.py").read_text(encoding="utf-8")
PYPROJECT_TOML = '[tool.csconform]\nrelease = "2.10"\nignore = ["CONFIG-002"]\nexclude = ["skip/*"]\n'
SPEC_TEXT = (ROOT / "specs" / SPEC_FILE).read_text(encoding="utf-8")

JUNK = [
    "",
    " ",
    "-",
    "0",
    "-1",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "9" * 30,
    "é",
    "\u202e",
    "a,b",
    ",",
    "x" * 300,
    "../",
    "/",
    "None",
    "tcp://",
]
NUMBERS = ["0", "1", "2", "3", "4", "16", "-1", "1.5", "nan", "inf", "1e9", "99999999999999999999", "0x10", "1_000"]


def junk() -> st.SearchStrategy[str]:
    printable = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
    return st.one_of(st.sampled_from(JUNK), printable)


def numbers(valid: list[str] | None = None) -> st.SearchStrategy[str]:
    valid = valid or ["1", "2", "4", "16"]
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(NUMBERS), junk())


def choice_or_junk(valid: list[str]) -> st.SearchStrategy[str]:
    """Mostly valid: a case that is wrong in one place reaches further than one wrong everywhere."""
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(valid), junk())


# --- file contents -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[+-]?\d+)?(?![\w.])")
PAST_INT64 = [str(2**63), str(-(2**63) - 1), str(2**70)]
NON_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1", "0", "1e300", '"12"', "[]", "{}", "null", "true", "2.5"]
NON_NUMBERS += PAST_INT64
YAML_NON_NUMBERS = [".nan", ".inf", "-.inf", "1e999", "-1", "0", "1e300", "'12'", "[]", "{}", "null", "yes", "2.5"]
YAML_NON_NUMBERS += PAST_INT64


@st.composite
def mutated(draw: st.DrawFn, text: str, flavour: str) -> dict[str, Any]:
    """A file spec: ``text`` (of ``flavour`` json, yaml, csv, kgraph or text) after one mutation."""
    kind = draw(
        st.sampled_from(
            [
                "identity",
                "identity",
                "identity",
                "identity",
                "truncate",
                "binary",
                "utf-16",
                "bom",
                "latin-1",
                "nested",
                "number",
                "duplicate-line",
                "huge",
                "empty",
                "fifo",
                "long-token",
                "aliases",
            ]
        )
    )
    if kind == "identity":
        return {"text": text}
    if kind == "truncate":
        return {"text": text, "truncate": draw(st.integers(0, max(len(text) - 1, 0)))}
    if kind == "binary":
        return {"base64": __import__("base64").b64encode(draw(st.binary(min_size=1, max_size=64))).decode()}
    if kind == "utf-16":
        return {"text": text, "encoding": "utf-16"}
    if kind == "bom":
        return {"text": text, "encoding": "utf-8-sig"}
    if kind == "latin-1":
        return {"text": text + "\ncaf\u00e9 \u00ff", "encoding": "latin-1"}
    if kind == "nested":
        depth = draw(st.sampled_from([50, 200, 1000, 100_000]))
        generator = "nested_yaml" if flavour == "yaml" else "nested_json"
        return {"generate": generator, "depth": depth}
    if kind == "number":
        spots = list(_NUMBER.finditer(text))
        if not spots:
            return {"text": text}
        spot = draw(st.sampled_from(spots))
        table = YAML_NON_NUMBERS if flavour == "yaml" else NON_NUMBERS
        replacement = draw(st.sampled_from(table))
        return {"text": text[: spot.start()] + replacement + text[spot.end() :]}
    if kind == "duplicate-line":
        lines = text.splitlines(keepends=True)
        index = draw(st.integers(0, max(len(lines) - 1, 0)))
        return {"text": "".join(lines[: index + 1] + lines[index:])}
    if kind == "huge":
        return {"sparse": draw(st.sampled_from([70_000_000, 300_000_000]))}
    if kind == "empty":
        return {"text": ""}
    if kind == "fifo":
        return {"fifo": True}
    if kind == "aliases":  # "billion laughs": each level a list of the one before, many times over
        if flavour != "yaml":
            return {"text": text}
        return {"generate": "alias_bomb", "levels": draw(st.sampled_from([4, 9, 30])), "width": 9}
    # long-token: one word of 20k to 200k characters somewhere in the text
    word = "a" * draw(st.sampled_from([20_000, 200_000]))
    at = draw(st.integers(0, len(text)))
    return {"text": text[:at] + word + text[at:]}


# --- output paths --------------------------------------------------------------------------------------


@st.composite
def output_path(draw: st.DrawFn, files: dict[str, dict[str, Any]], inputs: list[str], suffix: str) -> str:
    """A path for an output option: fresh, colliding with an input, or somewhere unwritable.

    Adds the links and folders it needs to ``files``.
    """
    kind = draw(
        st.sampled_from(
            ["fresh", "fresh", "nested", "same", "dotted", "absolute", "symlink", "hardlink", "readonly", "under-file"]
            + ["folder", "dangling", "other-suffix"]
        )
    )
    target = draw(st.sampled_from(inputs)) if inputs else None
    if kind == "fresh" or (target is None and kind in ("same", "dotted", "absolute", "symlink", "hardlink")):
        return f"out{suffix}"
    if kind == "nested":
        return f"a/b/out{suffix}"
    if kind == "same":
        return target
    if kind == "dotted":
        return f"./sub/../{target}"
    if kind == "absolute":
        return "{dir}/" + target
    if kind == "symlink":
        files["link" + suffix] = {"symlink": target}
        return "link" + suffix
    if kind == "hardlink":
        if files.get(target, {}).get("fifo") or "sparse" in files.get(target, {}):
            return f"out{suffix}"
        files["hard" + suffix] = {"hardlink": target}
        return "hard" + suffix
    if kind == "readonly":
        files["ro"] = {"dir": True, "mode": "555"}
        return f"ro/out{suffix}"
    if kind == "under-file":
        files["plain.txt"] = {"text": "keep me\n"}
        return f"plain.txt/out{suffix}"
    if kind == "folder":
        files["folder"] = {"dir": True}
        return "folder"
    if kind == "dangling":
        files["dangling" + suffix] = {"symlink": "missing/nowhere" + suffix}
        return "dangling" + suffix
    return "out" + draw(st.sampled_from([".xyz", "", ".PNG", ".json.", ".svg", ".pdf"]))


def _outputs(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """The folder-relative paths a command line names as outputs (what may change)."""
    named = []
    for index, word in enumerate(argv[:-1]):
        if word in options:
            value = argv[index + 1].replace("{dir}/", "")
            named.append(value.removeprefix("./"))
    return named


def _with(draw: st.DrawFn, argv: list[str], option: str, values: st.SearchStrategy[str]) -> None:
    if draw(st.booleans()):
        argv += [option, draw(values)]


# --- one strategy per command ------------------------------------------------------------------------


@st.composite
def plan_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {}
    argv = ["plan"]
    inputs: list[str] = []
    if draw(st.booleans()):
        argv += ["--model", draw(choice_or_junk(["gpt2_small", "bert_base", "gpt3_xl", "fc_mnist"]))]
    else:
        name = draw(st.sampled_from(["config.json", "config.yaml", "config.yml", "config"]))
        flavour = "yaml" if name.endswith((".yaml", ".yml")) else "json"
        files[name] = draw(mutated(CONFIG_YAML if flavour == "yaml" else CONFIG_JSON, flavour))
        argv += ["--model-config", draw(st.sampled_from([name, name, "missing.json", ".", ""]))]
        inputs.append(name)
    _with(draw, argv, "--wafer", choice_or_junk(["wse1", "wse2", "wse3", "WSE-2"]))
    _with(draw, argv, "--mode", choice_or_junk(["weight_streaming", "pipelined"]))
    _with(draw, argv, "--systems", numbers())
    _with(draw, argv, "--batch", numbers())
    _with(draw, argv, "--seq-len", numbers())
    _with(draw, argv, "--json", output_path(files, inputs, ".json"))
    _with(draw, argv, "--png", output_path(files, inputs, ".png"))
    return Case("plan", "random", argv, files, _outputs(argv, ("--json", "--png")), time_limit_s=60)


TINY_KGRAPH = """(*
width=64
height=64
memlimit=24576
*)
input[0] n=[8 8 4] name='in'
conv[1] W=8 H=8 R=3 S=3 C=4 K=8 T=1 U=1 name='c1'
conv[2] W=8 H=8 R=1 S=1 C=8 K=8 T=1 U=1 name='c2'
output[3] n=[8 8 8] name='out'
input[0]:o -> conv[1]:i, shape:[8][8][4]
conv[1]:o -> conv[2]:i, shape:[8][8][8]
conv[2]:o -> output[3]:i, shape:[8][8][8]
"""
FABRICS = ["width=1\nheight=1", "width=0\nheight=5", "width=100000\nheight=100000", "width=2\nheight=3"]


@st.composite
def place_cases(draw: st.DrawFn) -> Case:
    base = draw(st.sampled_from([TINY_KGRAPH, KGRAPH]))
    if draw(st.integers(0, 4)) == 0:
        base = re.sub(r"width=\d+\s+height=\d+", draw(st.sampled_from(FABRICS)), base, count=1)
    files = {"instance.kgraph": draw(mutated(base, "kgraph"))}
    argv = ["place", draw(st.sampled_from(["instance.kgraph", "instance.kgraph", "missing.kgraph", "."]))]
    argv += ["--time-limit", draw(st.one_of(st.sampled_from(["0.5", "1", "2"]), numbers()))]
    if draw(st.integers(0, 3)):
        argv.append("--no-gp-bound")
    _with(draw, argv, "--json", output_path(files, ["instance.kgraph"], ".json"))
    return Case("place", "random", argv, files, _outputs(argv, ("--json",)), time_limit_s=8)


@st.composite
def sweep_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {"keep.txt": {"text": "an input-like file\n"}}
    argv = ["sweep", "--quiet" if draw(st.integers(0, 3)) else "--models"]
    if argv[-1] == "--quiet":
        argv.append("--models")
    argv.append(draw(choice_or_junk(["gpt2_small", "bert_base,gpt2_small", "fc_mnist"])))
    _with(draw, argv, "--wafers", choice_or_junk(["wse2", "wse1,wse3"]))
    _with(draw, argv, "--systems", choice_or_junk(["1", "1,2", "0", "1,-4", "200"]))
    _with(draw, argv, "--batches", choice_or_junk(["64", "7", "64,128"]))
    _with(draw, argv, "--modes", choice_or_junk(["auto", "weight_streaming", "auto,pipelined"]))
    scheduler = ["tcp://127.0.0.1:1", "bogus", "tcp://", "inproc://x", "tcp://[::1", "tls://localhost:99999"]
    _with(draw, argv, "--scheduler", choice_or_junk(scheduler))
    _with(draw, argv, "--scheduler-timeout", st.sampled_from(["0.5", "1", "0", "-1", "nan", "inf", "x"]))
    _with(draw, argv, "--time-limit", st.sampled_from(["1", "0.5", "0", "-2", "nan", "inf", "x"]))
    out = draw(st.sampled_from(["out", "out/deeper", "keep.txt", "out.csv", "ro", "{dir}"]))
    if out == "ro":
        files["ro"] = {"dir": True, "mode": "555"}
    if out == "{dir}":
        out = "."
    argv += ["--out", out]
    outputs = [out] if out != "." else ["sweep.csv", "sweep.md"]
    return Case("sweep", "random", argv, files, outputs, time_limit_s=30)


@st.composite
def calibrate_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {}
    csv = MEASURED_CSV
    if draw(st.booleans()):  # a short table keeps the grouped cross-validation's fits cheap
        csv = "".join(MEASURED_CSV.splitlines(keepends=True)[: draw(st.integers(1, 8))])
    files["runs.csv"] = draw(mutated(csv, "csv"))
    argv = ["calibrate"]
    if draw(st.booleans()):
        argv += ["--evaluate", draw(st.sampled_from(["runs.csv", "runs.csv", "missing.csv", "."]))]
        _with(draw, argv, "--csv", output_path(files, ["runs.csv"], ".csv"))
    else:
        argv += ["--measured", draw(st.sampled_from(["runs.csv", "runs.csv", "missing.csv"]))]
        if draw(st.booleans()):
            argv += ["--write", draw(output_path(files, ["runs.csv"], ".json"))]
    # a full fit and its grouped cross-validation (about 20 fits) take a minute; more on a loaded machine
    return Case("calibrate", "random", argv, files, _outputs(argv, ("--write", "--csv")), time_limit_s=120)


@st.composite
def report_cases(draw: st.DrawFn) -> Case:
    files = {"bench.json": draw(mutated(BENCHMARK_JSON, "json"))}
    out = draw(st.sampled_from(["r", "r", "bench.json", "a/b", "ro"]))
    if out == "ro":
        files["ro"] = {"dir": True, "mode": "555"}
    argv = ["report", "--out", out, "--skip", "conformance,cstorch,performance,placement,mutation"]
    argv += ["--benchmark-json", draw(st.sampled_from(["bench.json", "bench.json", "r/benchmarks.md", "missing"]))]
    _with(draw, argv, "--engine", junk())
    _with(draw, argv, "--ispd-time-limit", numbers())
    return Case("report", "random", argv, files, [out], time_limit_s=30)


BROKEN_MODULES = {
    "raises_value.py": "raise ValueError('broken at import')\n",
    "raises_system_exit.py": "raise SystemExit(3)\n",
    "raises_keyboard.py": "import sys\nsys.exit('bye')\n",
    "syntax_error.py": "def f(:\n",
    "empty_engine.py": "",
    "wrong_declaration.py": "CAPABILITIES = 'all'\nTARGETS = 5\n",
}


@st.composite
def check_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {name: {"text": text} for name, text in BROKEN_MODULES.items()}
    modules = [name.removesuffix(".py") for name in BROKEN_MODULES]
    engine = draw(st.one_of(st.sampled_from(["", " ", "no.such.module", "csconform.nope", "os", *modules]), junk()))
    argv = ["check", "--engine", engine]
    if draw(st.booleans()):
        name = draw(st.sampled_from(["xfail.txt", "triage.yaml"]))
        files[name] = draw(mutated(EXPECTED_TXT if name.endswith(".txt") else TRIAGE_YAML, "text"))
        argv += ["--expected-failures", draw(st.sampled_from([name, name, "missing.txt", "."]))]
    _with(draw, argv, "--area", choice_or_junk(["metrics", "nope"]))
    _with(draw, argv, "--json", output_path(files, list(files), ".json"))
    case = Case("check", "random", argv, files, _outputs(argv, ("--json",)), time_limit_s=60)
    case.env = {"PYTHONPATH": "{dir}"}
    return case


@st.composite
def interface_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {name: {"text": text} for name, text in BROKEN_MODULES.items()}
    modules = [name.removesuffix(".py") for name in BROKEN_MODULES]
    argv = ["interface"]
    if draw(st.integers(0, 4)):
        argv += ["--engine", draw(st.one_of(st.sampled_from(["", "csconform.engine", "json", *modules]), junk()))]
    if draw(st.booleans()):
        argv.append("--markdown")
    case = Case("interface", "random", argv, files, [], time_limit_s=30)
    case.env = {"PYTHONPATH": "{dir}"}
    return case


@st.composite
def spec_cases(draw: st.DrawFn) -> Case:
    files: dict[str, dict[str, Any]] = {}
    argv = ["spec"]
    if draw(st.booleans()):
        for path in sorted((ROOT / "specs").rglob("*")):
            if path.is_file():
                files[f"specs/{path.relative_to(ROOT / 'specs').as_posix()}"] = {
                    "package": path.relative_to(ROOT).as_posix()
                }
        files[f"specs/{SPEC_FILE}"] = draw(mutated(SPEC_TEXT, "yaml"))
        argv += ["--specs-dir", draw(st.sampled_from(["specs", "specs", "missing", f"specs/{SPEC_FILE}"]))]
    sub = draw(st.sampled_from(["list", "show", "check", "bogus"]))
    argv.append(sub)
    if sub == "list":
        _with(draw, argv, "--area", choice_or_junk(["metrics", "grad_scaler"]))
        _with(draw, argv, "--status", choice_or_junk(["checked", "pending"]))
        _with(draw, argv, "--level", choice_or_junk(["documented", "reference"]))
        _with(draw, argv, "--format", choice_or_junk(["github", "simple", "html"]))
    elif sub == "show":
        argv.append(draw(choice_or_junk(["METRICS-001", "GRADSCALER-004"])))
    return Case("spec", "random", argv, files, [], time_limit_s=30)


@st.composite
def validate_cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(["params.yaml", "config.json", "folder"]))
    files: dict[str, dict[str, Any]] = {}
    if name == "folder":
        files["folder/a.yaml"] = draw(mutated(PARAMS_YAML, "yaml"))
        files["folder/b.json"] = draw(mutated(CONFIG_JSON, "json"))
        inputs = ["folder/a.yaml", "folder/b.json"]
    else:
        files[name] = draw(
            mutated(
                PARAMS_YAML if name.endswith(".yaml") else CONFIG_JSON, "yaml" if name.endswith(".yaml") else "json"
            )
        )
        inputs = [name]
    argv = ["validate", draw(st.sampled_from([name, name, name, "missing.yaml", "."]))]
    inputs = inputs if argv[1] in (name, ".") else []  # only a file the command reads must survive its outputs
    _with(draw, argv, "--release", choice_or_junk(["2.10", "1.9.1", "2.4"]))
    _with(draw, argv, "--lr-at", choice_or_junk(["0,100,5000", "0", "-1,2", "1e9"]))
    _with(draw, argv, "--plot", output_path(files, inputs, ".png"))
    _with(draw, argv, "--num-csx", numbers())
    _with(draw, argv, "--wafer", choice_or_junk(["wse2", "wse3"]))
    _with(draw, argv, "--model-family", choice_or_junk(["gpt3", "llama", "t5"]))
    if draw(st.booleans()):
        argv.append("--no-plan")
    _findings_options(draw, argv, files, inputs)
    for option, values in (
        ("--batch-size", numbers(["512", "8"])),
        ("--max-steps", numbers(["1000", "20000"])),
        ("--learning-rate", numbers(["3e-4", "0.1"])),
        ("--warmup-steps", numbers(["0", "500"])),
        ("--loss-scaling", choice_or_junk(["dynamic", "1024"])),
        ("--max-gradient-norm", numbers(["1.0"])),
        ("--checkpoint-steps", numbers(["100"])),
        ("--schedule", choice_or_junk(["cosine", "linear", "constant"])),
        ("--optimizer", choice_or_junk(["AdamW", "SGD"])),
        ("--fp16-type", choice_or_junk(["bfloat16", "cbfloat16", "float16"])),
    ):
        if draw(st.integers(0, 4)) == 0:
            argv += [option, draw(values)]
    return Case("validate", "random", argv, files, _findings_outputs(argv, inputs, "--plot"), time_limit_s=60)


def _findings_options(draw: st.DrawFn, argv: list[str], files: dict[str, dict[str, Any]], inputs: list[str]) -> None:
    """The output and settings options validate and lint share (csconform/findings/output.py)."""
    _with(draw, argv, "--format", choice_or_junk(["text", "json", "sarif", "github"]))
    _with(draw, argv, "--output", output_path(files, inputs, ".txt"))
    _with(draw, argv, "--json", st.one_of(st.just("-"), output_path(files, inputs, ".json")))
    if draw(st.integers(0, 3)) == 0:
        argv.append("--fix")
        if draw(st.booleans()):
            argv.append("--in-place")
    setting = draw(st.sampled_from(["none", "none", "config", "isolated"]))
    if setting == "config":
        files["pyproject.toml"] = draw(mutated(PYPROJECT_TOML, "text"))
        argv += ["--config", draw(st.sampled_from(["pyproject.toml", "pyproject.toml", "missing.toml", "."]))]
    elif setting == "isolated":
        argv.append("--isolated")


def _findings_outputs(argv: list[str], inputs: list[str], *options: str) -> list[str]:
    """What a validate or lint command line may write: its named outputs, and with ``--in-place`` its inputs."""
    outputs = [o for o in _outputs(argv, ("--json", "--output", *options)) if o != "-"]
    return outputs + (inputs if "--in-place" in argv else [])


@st.composite
def lint_cases(draw: st.DrawFn) -> Case:
    """Python files (one, or a folder), mutated; the static checks only (``--run`` starts a training run)."""
    name = draw(st.sampled_from(["train.py", "folder"]))
    files: dict[str, dict[str, Any]] = {}
    if name == "folder":
        files["folder/a.py"] = draw(mutated(TRAINING_SCRIPT, "text"))
        files["folder/b.py"] = draw(mutated(TRAINING_SCRIPT, "text"))
        inputs = ["folder/a.py", "folder/b.py"]
    else:
        files[name] = draw(mutated(TRAINING_SCRIPT, "text"))
        inputs = [name]
    argv = ["lint", *draw(st.sampled_from([[name], [name], [name, name], ["missing.py"], ["."], []]))]
    inputs = inputs if {name, "."} & set(argv) else []  # only a file the command reads must survive its outputs
    _with(draw, argv, "--release", choice_or_junk(["2.10", "1.9.1", "1.7.1"]))
    _findings_options(draw, argv, files, inputs)
    return Case("lint", "random", argv, files, _findings_outputs(argv, inputs), time_limit_s=60)


ENGINE_DELEGATE = (
    "import csconform.engine as _engine\n"
    "from csconform.engine import CAPABILITIES, TARGETS, current_target, reset, set_target, use_target\n\n\n"
    "def __getattr__(name):\n    return getattr(_engine, name)\n"
)
HOSTILE_IMPLEMENTATIONS = {
    **BROKEN_MODULES,
    "ends_on_import.py": "import os\nos._exit(3)\n",
    "delegates.py": ENGINE_DELEGATE,
    "lazy.py": ENGINE_DELEGATE.replace(
        "getattr(_engine, name)", "importlib.import_module(f'csconform.engine.{name}')"
    ).replace("import csconform.engine as _engine", "import importlib"),
    "hangs_in_calls.py": ENGINE_DELEGATE
    + "\n\nimport time\n_engine.optim.lr_scheduler.ConstantLR.__call__ = lambda self, step: time.sleep(3600)\n",
}


@st.composite
def diff_cases(draw: st.DrawFn) -> Case:
    """Two implementations, a broken or hostile one among them, a few examples of one or two areas."""
    files: dict[str, dict[str, Any]] = {name: {"text": text} for name, text in HOSTILE_IMPLEMENTATIONS.items()}
    modules = [name.removesuffix(".py") for name in HOSTILE_IMPLEMENTATIONS]
    against = draw(st.one_of(st.sampled_from(["csconform.engine", "no.such.module", *modules, *modules]), junk()))
    argv = ["diff", "--against", against, "--seeds", "0", "--call-timeout", "2", "--program-timeout", "10"]
    argv += ["--examples", draw(st.sampled_from(["1", "2", "2", "0", "-1", "x", "1e9"]))]
    argv += ["--areas", draw(choice_or_junk(["data", "lr_schedule", "lr_schedule,data"]))]
    if draw(st.booleans()):
        argv += ["--engine", draw(st.sampled_from(["csconform.engine", "delegates", "empty_engine"]))]
    if draw(st.integers(0, 3)) == 0:
        files["triage.yaml"] = draw(mutated(TRIAGE_YAML, "text"))
        argv += ["--triage", draw(st.sampled_from(["triage.yaml", "triage.yaml", "missing.yaml", "."]))]
    out = draw(st.sampled_from(["out", "out", "a/b", "delegates.py", "ro"]))
    if out == "ro":
        files["ro"] = {"dir": True, "mode": "555"}
    argv += ["--out", out, "--quiet"]
    _with(draw, argv, "--jobs", numbers(["1", "2"]))
    # in a process of its own: diff runs Hypothesis itself, which refuses to run inside this campaign's @given
    case = Case("diff", "random", argv, files, [out], time_limit_s=90, subprocess=True)
    case.env = {"PYTHONPATH": "{dir}"}
    return case


COMMANDS = {
    "plan": plan_cases,
    "place": place_cases,
    "sweep": sweep_cases,
    "calibrate": calibrate_cases,
    "report": report_cases,
    "check": check_cases,
    "interface": interface_cases,
    "spec": spec_cases,
    "validate": validate_cases,
    "lint": lint_cases,
    "diff": diff_cases,
}
