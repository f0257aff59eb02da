"""A user's own training code (specs/user_code.yaml): `csconform lint` on small sources.

Each check writes a few lines breaking one rule beside a near miss that must stay silent, lints them
(judged for a release in and out of the rule's range where it has one), and checks the finding: the
rule, its level, the line and the column (1-based characters) of the place it names. csconform's
linter is the harness's own tool, not the implementation under test; like `validate`'s checks, these
are gated on the `performance` capability so that another implementation reports them unsupported
rather than passed.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from csconform.cli import main as cli_main
from csconform.findings.config import ProjectConfig
from csconform.findings.finding import FileReport, Finding
from csconform.spec import default_specs_dir, load_catalogue, load_spec
from csconform.usercode.lint import lint_paths

pytestmark = pytest.mark.capability("performance")

SPEC = load_spec()
CATALOGUE = load_catalogue(default_specs_dir())
CSTORCH = "import cerebras.pytorch as cstorch\nimport torch\n"
TF = "import tensorflow as tf\n"
SCALED = (
    CSTORCH
    + """
model = cstorch.compile(torch.nn.Linear(2, 2), backend="CSX")
optimizer = cstorch.optim.SGD([], lr=0.1)
scaler = cstorch.amp.GradScaler(loss_scale="dynamic")
"""
)


def lint(tmp_path: Path, source: str, release: str | None = None, name: str = "train.py") -> FileReport:
    """The report on one file holding ``source`` (dedented), judged for ``release`` (default: the newest)."""
    header = next((h for h in (SCALED, CSTORCH, TF) if source.startswith(h)), "")
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + textwrap.dedent(source[len(header) :]), encoding="utf-8")
    chosen = CATALOGUE.newest if release is None else CATALOGUE.get(release)
    (report,) = lint_paths([str(path)], SPEC, chosen, ProjectConfig())
    assert report.error is None, report.error
    return report


def place(report: FileReport, text: str, occurrence: int = 1) -> tuple[int, int]:
    """The (line, 1-based column) of the ``occurrence``-th ``text`` in the file."""
    hits = [
        (number, line.index(text) + 1)
        for number, line in enumerate(Path(report.path).read_text(encoding="utf-8").splitlines(), start=1)
        if text in line
    ]
    return hits[occurrence - 1]


def found(report: FileReport, rule: str) -> list[Finding]:
    return [f for f in report.findings if f.rule == rule]


def at(report: FileReport, rule: str) -> list[tuple[int | None, int | None]]:
    return [(f.line, f.column) for f in found(report, rule)]


# --- the static graph -----------------------------------------------------------------------------


@pytest.mark.spec("CODE-001")
def test_a_branch_on_a_tensor_in_the_step_or_a_helper_it_calls(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        model = cstorch.compile(torch.nn.Linear(2, 2), backend="CSX")

        def shrink(loss):
            while loss > 1.0:
                loss = loss / 2
            return loss

        @cstorch.trace
        def step(batch, epoch):
            loss = model(batch).sum()
            if loss.item() > 3:
                loss = loss * 0.5
            if epoch > 3 and batch.shape[0] == 2 and batch is not None:
                loss = loss + 0
            return shrink(loss)
        """,
    )
    assert at(report, "CODE-001") == [place(report, "loss > 1.0"), place(report, "loss.item() > 3")]
    (finding,) = [f for f in found(report, "CODE-001") if "shrink" in f.message]
    assert finding.level == "documented" and finding.severity == "violation"
    assert "which the traced step step calls" in finding.message


@pytest.mark.spec("CODE-001")
def test_a_modules_forward_is_traced_but_a_transform_of_the_input_pipeline_is_not(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(2, 2)

            def forward(self, x):
                y = self.proj(x)
                return y if y.sum() > 0 else -y

        class Jitter(torch.nn.Module):
            def forward(self, x):
                return x if torch.rand(1) > 0.5 else x + 1

        def make_loader(dataset):
            jitter = Jitter()
            return torch.utils.data.DataLoader(dataset, batch_size=4, drop_last=True, collate_fn=jitter)
        """,
    )
    assert at(report, "CODE-001") == [place(report, "y.sum() > 0")]


@pytest.mark.spec("CODE-002")
def test_a_value_read_in_the_step_but_not_in_a_step_closure(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        import logging
        model = cstorch.compile(torch.nn.Linear(2, 2), backend="CSX")

        @cstorch.trace
        def step(batch):
            loss = model(batch).sum()
            print(loss)
            logging.info(f"loss={loss}")
            rate = float(loss)
            values = loss.tolist()
            report(loss)
            return loss

        @cstorch.step_closure
        def report(loss):
            print(f"loss={loss.item()}")
        """,
    )
    assert at(report, "CODE-002") == [
        place(report, "print(loss)"),
        (place(report, "{loss}")[0], place(report, "{loss}")[1] + 1),
        place(report, "float(loss)"),
        place(report, "loss.tolist()"),
    ]
    assert {f.level for f in found(report, "CODE-002")} == {"public"}


@pytest.mark.spec("CODE-003")
def test_a_compile_in_a_loop_or_in_the_step(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        model = torch.nn.Linear(2, 2)
        once = cstorch.compile(model, backend="CSX")
        for width in (2, 4):
            compiled = cstorch.compile(torch.nn.Linear(width, 2), backend="CSX")

        @cstorch.trace
        def step(batch):
            return cstorch.compile(model)(batch)
        """,
    )
    assert at(report, "CODE-003") == [
        place(report, "cstorch.compile(torch.nn.Linear(width"),
        place(report, "cstorch.compile(model)("),
    ]


@pytest.mark.spec("CODE-004")
def test_train_and_eval_before_1_8_0_but_not_a_comparison(tmp_path: Path) -> None:
    source = """
        def run(runner, params, train, evaluate):
            params["mode"] = "train_and_eval"
            if params["mode"] == "train_and_eval":
                runner.train_and_eval(train, evaluate)
        """
    report = lint(tmp_path, source, release="1.7.1")
    assert at(report, "CODE-004") == [place(report, '"train_and_eval"'), place(report, "runner.train_and_eval")]
    assert found(lint(tmp_path, source, release="1.8.0"), "CODE-004") == []


@pytest.mark.spec("CODE-005")
def test_a_second_compiled_model_in_one_step(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        encoder = cstorch.compile(torch.nn.Linear(2, 2), backend="CSX")
        head = cstorch.compile(torch.nn.Linear(2, 2), backend="CSX")

        def features(batch):
            return encoder(batch)

        @cstorch.trace
        def step(batch):
            return head(features(batch))
        """,
    )
    assert at(report, "CODE-005") != [] and len(found(report, "CODE-005")) == 1


# --- learning rates -------------------------------------------------------------------------------


@pytest.mark.spec("CODE-010")
def test_a_rate_written_into_the_param_groups_every_step(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        def adjust(optimizer, epoch):
            lr = 0.1 * 0.5 ** epoch
            for group in optimizer.param_groups:
                group["lr"] = lr

        def configure(optimizer):
            for group in optimizer.param_groups:
                group["lr"] = 0.1

        def train(optimizer, loader):
            configure(optimizer)
            for epoch in range(10):
                adjust(optimizer, epoch)
                print(optimizer.param_groups[0]["lr"])
        """,
    )
    assert at(report, "CODE-010") == [place(report, 'group["lr"] = lr')]


@pytest.mark.spec("CODE-011")
def test_a_torch_scheduler_names_the_cstorch_one(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        from torch.optim import lr_scheduler
        optimizer = torch.optim.SGD([], lr=0.1)
        cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
        plateau = lr_scheduler.ReduceLROnPlateau(optimizer)
        good = cstorch.optim.lr_scheduler.CosineAnnealingLR(optimizer, initial_learning_rate=0.1, T_max=100)

        class Mine(torch.optim.lr_scheduler.LambdaLR):
            pass
        """,
    )
    cosine, plateau = found(report, "CODE-011")
    assert (cosine.line, cosine.column) == place(report, "lr_scheduler.CosineAnnealingLR(optimizer, T")
    assert cosine.fix is not None and "cstorch.optim.lr_scheduler.CosineAnnealingLR" in cosine.fix
    assert plateau.fix == SPEC.get("CODE-011").fix  # no scheduler of that name in cstorch


@pytest.mark.spec("CODE-012")
def test_an_optimizer_that_turns_the_rate_into_a_number(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        import torch

        class Sgd(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    lr = group["lr"]
                    scale = float(lr)
                    for p in group["params"]:
                        p.add_(p.grad * -group["lr"])
        """,
    )
    (finding,) = found(report, "CODE-012")
    assert (finding.line, finding.column) == place(report, "float(lr)")
    assert SPEC.get("CODE-012").scope.mode == "weight_streaming"


# --- precision ------------------------------------------------------------------------------------


@pytest.mark.spec("CODE-020")
def test_double_precision_in_the_step_or_for_the_model(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.table = torch.arange(4, dtype=torch.float64).float()

            def forward(self, x):
                if x.dtype == torch.float64:
                    x = x.float()
                return x.double()

        model = Net().to(torch.float64)
        """,
    )
    assert at(report, "CODE-020") == [place(report, "x.double()"), place(report, "Net().to(")]


@pytest.mark.spec("CODE-021")
def test_a_manual_half_cast_in_the_step_is_a_warning(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return x.to(torch.float16), x.type(torch.bfloat16), x.to(torch.float32)
        """,
    )
    assert at(report, "CODE-021") == [place(report, "x.to(torch.float16)"), place(report, "x.type(")]
    assert {f.severity for f in found(report, "CODE-021")} == {"warning"} and report.exit_code == 0


# --- metrics and data -----------------------------------------------------------------------------


@pytest.mark.spec("CODE-030")
def test_a_metric_returning_several_values(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        import cerebras.pytorch as cstorch

        class Pair(cstorch.metrics.Metric):
            def compute(self):
                return self.a, self.b

        class One(cstorch.metrics.Metric):
            def compute(self):
                return self.a / self.b
        """,
    )
    assert at(report, "CODE-030") == [place(report, "return self.a, self.b")]


@pytest.mark.spec("CODE-040")
def test_a_dataloader_without_drop_last_is_fixed_mechanically(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(range(10), batch_size=4)
        kept = DataLoader(range(10), batch_size=4, drop_last=False)
        good = DataLoader(range(10), batch_size=4, drop_last=True)
        """,
    )
    first, second = found(report, "CODE-040")
    assert (first.line, first.column) == place(report, "DataLoader(range(10), batch_size=4)")
    assert (second.line, second.column) == place(report, "False")
    assert [e.text for e in first.edits] == [", drop_last=True"] and [e.text for e in second.edits] == ["True"]


@pytest.mark.spec("CODE-041")
def test_an_executor_over_a_torch_dataloader(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        CSTORCH
        + """
        loader = torch.utils.data.DataLoader(range(8), batch_size=4, drop_last=True)
        bad = cstorch.utils.data.DataExecutor(loader, num_steps=2)
        good = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(lambda: loader), num_steps=2)
        """,
    )
    assert at(report, "CODE-041") == [place(report, "loader, num_steps")]


# --- the GradScaler -------------------------------------------------------------------------------


@pytest.mark.spec("CODE-050")
def test_a_step_without_its_update(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        SCALED
        + """
@cstorch.trace
def step(batch):
    loss = model(batch).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    return loss
""",
    )
    assert at(report, "CODE-050") == [place(report, "scaler.step(optimizer)")]


@pytest.mark.spec("CODE-051")
def test_clipping_before_unscale(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        SCALED
        + """
def clip():
    torch.nn.utils.clip_grad_norm_([], 1.0)

@cstorch.trace
def step(batch):
    loss = model(batch).sum()
    scaler.scale(loss).backward()
    clip()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_value_([], 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss
""",
    )
    assert at(report, "CODE-051") == [place(report, "torch.nn.utils.clip_grad_norm_")]


@pytest.mark.spec("CODE-052")
def test_grad_scaler_calls_out_of_order(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        SCALED
        + """
@cstorch.trace
def step(batch):
    loss = model(batch).sum()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.unscale_(optimizer)
    scaler.update()
    return loss
""",
    )
    assert at(report, "CODE-052") == [place(report, "scaler.unscale_(optimizer)")]


# --- the CerebrasEstimator ------------------------------------------------------------------------


@pytest.mark.spec("CODE-060")
def test_user_hooks(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def model_fn(features, labels, mode, params):
            hooks = None
            quiet = tf.estimator.EstimatorSpec(mode, loss=1.0, training_hooks=hooks)
            return tf.estimator.EstimatorSpec(mode, loss=1.0, training_hooks=[tf.estimator.StepCounterHook()])
        """,
    )
    assert at(report, "CODE-060") == [place(report, "[tf.estimator.StepCounterHook()]")]


@pytest.mark.spec("CODE-061")
def test_eval_metric_ops_in_a_training_spec_with_the_documented_message(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def model_fn(features, labels, mode, params):
            metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, features)}
            train_op = tf.no_op()
            return tf.estimator.EstimatorSpec(mode, loss=1.0, train_op=train_op, eval_metric_ops=metrics)
        """,
    )
    (finding,) = found(report, "CODE-061")
    assert (finding.line, finding.column) == place(report, "eval_metric_ops=metrics")
    assert finding.message == "[Unsupported TensorFlow] Detected unsupported eval_metric_ops in CS system training run."


@pytest.mark.spec("CODE-062")
def test_an_input_function_takes_the_one_params(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def input_fn(params, mode):
            return tf.data.Dataset.range(4).repeat().batch(2, drop_remainder=True)

        def eval_input_fn(params, mode=None):
            return tf.data.Dataset.range(4).repeat().batch(2, drop_remainder=True)
        """,
    )
    assert at(report, "CODE-062") == [place(report, "def input_fn")]


@pytest.mark.spec("CODE-063")
def test_an_input_function_returns_a_dataset(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def input_fn(params):
            features, labels = tf.zeros([4, 2]), tf.zeros([4])
            if params.get("eager"):
                return features, labels
            return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(2, drop_remainder=True)
        """,
    )
    (finding,) = found(report, "CODE-063")
    assert (finding.line, finding.column) == place(report, "return features, labels")
    assert finding.message.startswith("[Unsupported TensorFlow] Input function must return a")


@pytest.mark.spec("CODE-064")
def test_dataset_elements_are_features_and_labels(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        a, b, c = tf.zeros([4]), tf.zeros([4]), tf.zeros([4])
        triple = tf.data.Dataset.from_tensors((a, b, c))
        pair = tf.data.Dataset.from_tensor_slices(([1.0, 2.0], [0, 1]))
        nested = pair.map(lambda x, y: ((x, x), y))
        """,
    )
    assert at(report, "CODE-064") == [place(report, "(a, b, c)"), place(report, "((x, x), y)")]


@pytest.mark.spec("CODE-065")
def test_repeat_with_a_count_is_fixed_mechanically(tmp_path: Path) -> None:
    report = lint(tmp_path, TF + "ds = tf.data.Dataset.range(8).repeat(3)\nok = ds.repeat()\n")
    (finding,) = found(report, "CODE-065")
    assert (finding.line, finding.column) == (2, 6)
    assert [e.text for e in finding.edits] == ["()"]


@pytest.mark.spec("CODE-066")
def test_train_without_steps(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        est = tf.estimator.Estimator(model_fn=None)
        est.train(input_fn=None)
        est.train(None, None, 100)
        """,
    )
    assert at(report, "CODE-066") == [place(report, "est.train(input_fn=None)")]


@pytest.mark.spec("CODE-067")
def test_batch_without_drop_remainder_with_the_documented_message(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def pipeline(dataset, drop):
            return dataset.batch(8).batch(4, drop_remainder=drop)
        """,
    )
    (finding,) = found(report, "CODE-067")
    assert (finding.line, finding.column) == place(report, "dataset.batch(8)")
    assert "set `drop_remainder=True` when batching your Dataset" in finding.message
    assert [e.text for e in finding.edits] == [", drop_remainder=True"]


@pytest.mark.spec("CODE-068")
def test_a_constant_seed(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        def input_fn(params):
            ds = tf.data.Dataset.range(8).shuffle(8, seed=42).shuffle(8, seed=params["seed"])
            return ds.repeat().batch(2, drop_remainder=True)
        """,
    )
    assert at(report, "CODE-068") == [place(report, "42")]


@pytest.mark.spec("CODE-069")
def test_an_unsupported_run_config_parameter_is_removed_mechanically(tmp_path: Path) -> None:
    report = lint(tmp_path, TF + "config = tf.estimator.RunConfig(model_dir='m', device_fn=None, protocol='grpc')\n")
    (finding,) = found(report, "CODE-069")
    assert (finding.line, finding.column) == place(report, "protocol=")
    assert "protocol" in finding.message and finding.edits


@pytest.mark.spec("CODE-070")
def test_checkpoints_too_often_are_a_warning(tmp_path: Path) -> None:
    report = lint(
        tmp_path,
        TF
        + """
        often = tf.estimator.RunConfig(save_checkpoint_steps=50)
        enough = tf.estimator.RunConfig(save_checkpoint_steps=100)
        """,
    )
    (finding,) = found(report, "CODE-070")
    assert (finding.severity, finding.level) == ("warning", "reference")
    assert (finding.line, finding.column) == place(report, "save_checkpoint_steps=50")


# --- the command ----------------------------------------------------------------------------------


@pytest.mark.spec("CODE-090")
def test_the_command_exits_0_1_2_and_names_every_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.py"
    good.write_text("import torch\nx = torch.zeros(2)\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("from torch.utils.data import DataLoader\nloader = DataLoader([], batch_size=2)\n", encoding="utf-8")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n", encoding="utf-8")
    assert cli_main(["lint", str(good), "--isolated"]) == 0
    assert cli_main(["lint", str(bad), "--isolated"]) == 1
    capsys.readouterr()
    assert cli_main(["lint", str(good), str(broken), "--isolated"]) == 2
    out = capsys.readouterr().out
    (unreadable,) = [line for line in out.splitlines() if line.startswith(f"{broken}:")]
    assert "line 1" in unreadable  # the wording: tests/unit/findings and tests/unit/usercode
    assert cli_main(["lint", str(tmp_path / "missing_folder"), "--isolated"]) == 2
    assert "missing_folder" in capsys.readouterr().out
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.py")
        assert cli_main(["lint", str(tmp_path / "pipe.py"), "--isolated"]) == 2
        assert "not a regular file" in capsys.readouterr().out


@pytest.mark.spec("CODE-090")
def test_a_folder_is_walked_for_python_files_without_tool_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("x = 1\n", encoding="utf-8")
    for skipped in (".git", "__pycache__", "env"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "other.py").write_text("def f(:\n", encoding="utf-8")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    assert cli_main(["lint", str(tmp_path), "--isolated", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [Path(f["file"]).name for f in document["files"]] == ["train.py"]
    assert document["command"] == "lint" and document["release"] == CATALOGUE.newest.name


@pytest.mark.spec("CODE-091")
def test_fixes_are_a_diff_until_asked_and_leave_nothing_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data.py"
    source = "from torch.utils.data import DataLoader\nloader = DataLoader(\n    [], batch_size=2,\n)\n"
    path.write_text(source, encoding="utf-8")
    assert cli_main(["lint", str(path), "--isolated", "--fix"]) == 1
    captured = capsys.readouterr()
    assert "+    [], batch_size=2, drop_last=True," in captured.out and path.read_text(encoding="utf-8") == source
    assert cli_main(["lint", str(path), "--isolated", "--fix", "--in-place"]) == 1
    assert "drop_last=True" in path.read_text(encoding="utf-8")
    assert cli_main(["lint", str(path), "--isolated"]) == 0
