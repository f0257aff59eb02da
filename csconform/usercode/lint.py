"""A static lint run: read every file, see the run as one project, check each function, report per file.

:func:`lint_paths` never raises for a bad file: one that cannot be read or parsed is a report with
``error`` set (exit status 2). Every other file is checked function by function (and its top-level
code), each check adding findings for its rules through the spec-aware collector, which leaves out
the rules whose releases exclude the release judged; inline ``csconform: ignore`` comments and the
project's settings then silence what the user has judged.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence

from csconform.errors import UnreadableDocumentError
from csconform.findings.collect import Findings
from csconform.findings.config import ProjectConfig
from csconform.findings.finding import FileReport, Finding
from csconform.findings.suppress import suppress
from csconform.spec.model import Spec
from csconform.spec.releases import Release
from csconform.usercode.analysis import Analysis, Params, Traced
from csconform.usercode.checks import data, estimator, grad_scaler, graph, learning_rate, metrics, precision
from csconform.usercode.files import python_files
from csconform.usercode.project import Function, Module, Project, load_module
from csconform.usercode.scope import Scope
from csconform.usercode.source import read_source

Check = Callable[[Scope], None]

EVERYWHERE: tuple[Check, ...] = (
    graph.check_compiles,
    graph.check_train_and_eval,
    learning_rate.check_param_group_writes,
    learning_rate.check_torch_schedulers,
    learning_rate.check_scalar_learning_rates,
    precision.check_double_precision,
    metrics.check_metric_results,
    data.check_dataloaders,
    data.check_executor_loaders,
    grad_scaler.check_grad_scaler_order,
)
"""The checks of every function and every module's top level."""

FOR_THE_ESTIMATOR: tuple[Check, ...] = (
    estimator.check_hooks,
    estimator.check_eval_metric_ops,
    estimator.check_input_function_parameters,
    estimator.check_input_function_results,
    estimator.check_dataset_elements,
    estimator.check_dataset_calls,
    estimator.check_seeds_and_run_config,
)
"""The checks of TensorFlow code (CerebrasEstimator, tf.data, RunConfig)."""

IN_THE_STEP: tuple[Check, ...] = (
    graph.check_control_flow,
    graph.check_value_reads,
    precision.check_half_casts,
)
"""The checks of the functions that run inside the traced step."""


TOO_DEEP = "nested too deeply for the checker (its walks ran out of Python's recursion limit)"


def lint_modules(modules: Sequence[Module], spec: Spec, release: Release) -> dict[str, Findings | str]:
    """The findings of each file of one run, by path (or why the file could not be checked)."""
    project = Project(list(modules))
    analysis = Analysis(project)
    traced = analysis.traced()
    found = {module.path: Findings(spec, release, module.path) for module in project.modules}
    scopes = [scope for module in project.modules for scope in _scopes(module, analysis, found[module.path], traced)]
    compiled_calls: dict[int, list[tuple[Scope, ast.Call, object]]] = defaultdict(list)
    for scope in scopes:
        try:
            _check(scope)
        except RecursionError:
            analysis.too_deep.add(scope.module)
            continue
        if scope.traced is not None and analysis.is_trace_step(scope.traced.root):
            for call, compiled in graph.compiled_model_calls(scope):
                compiled_calls[id(scope.traced.root)].append((scope, call, compiled))
    _check_one_compiled_model(compiled_calls)
    return {path: TOO_DEEP if any(m.path == path for m in analysis.too_deep) else f for path, f in found.items()}


def _check(scope: Scope) -> None:
    for check in EVERYWHERE:
        check(scope)
    if estimator.is_estimator_code(scope.module):
        for check in FOR_THE_ESTIMATOR:
            check(scope)
    if scope.traced is not None:
        for check in IN_THE_STEP:
            check(scope)


def _scopes(
    module: Module, analysis: Analysis, found: Findings, traced: Mapping[Function, tuple[Traced, Params]]
) -> Iterator[Scope]:
    yield Scope(module, None, analysis, found)
    for function in module.functions:
        where = traced.get(function)
        yield Scope(module, function, analysis, found, where[0] if where else None)


def _check_one_compiled_model(calls_by_step: dict[int, list[tuple[Scope, ast.Call, object]]]) -> None:
    """CODE-005: a traced step that calls a second compiled model."""
    for calls in calls_by_step.values():
        first = calls[0][2]
        for scope, call, compiled in calls:
            if compiled is not first:
                scope.refuse(
                    "CODE-005",
                    call,
                    f"{scope.text(call.func)} is a second compiled model {scope.where()}: a step may use a "
                    "single compiled model",
                )
                break


def lint_paths(arguments: list[str], spec: Spec, release: Release, settings: ProjectConfig) -> list[FileReport]:
    """One report per Python file named or found under the folders named, in that order."""
    files = python_files(arguments, settings)
    reports: dict[str, FileReport] = {}
    modules: list[Module] = []
    for file in files:
        report = reports[str(file)] = FileReport(str(file))
        try:
            modules.append(load_module(read_source(file), file))
        except UnreadableDocumentError as exc:
            report.error = str(exc)
    for path, found in lint_modules(modules, spec, release).items():
        checked = reports[path]
        if isinstance(found, str):
            checked.error = f"{path}: {found}"
        else:
            checked.violations, checked.warnings = _unique(found.violations), _unique(found.warnings)
    for module in modules:
        suppress(reports[module.path], module.source.text, settings.ignores(module.path).__contains__)
    return list(reports.values())


def _unique(findings: list[Finding]) -> list[Finding]:
    """The findings in order of place, each once (two walks may find the same place)."""
    return sorted(dict.fromkeys(findings), key=lambda f: (f.line or 0, f.column or 0, f.rule))
