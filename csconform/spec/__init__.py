"""The executable spec: rules loaded from ``specs/*.yaml``, validated, and queryable."""

from csconform.spec.loader import (
    SpecReport,
    check_spec,
    default_specs_dir,
    load_spec,
    spec_digest,
    uncovered_sections,
)
from csconform.spec.model import LEVELS, Area, ErrorSpec, Rule, Scope, Source, Spec
from csconform.spec.releases import Catalogue, Release, holds_for, load_catalogue
from csconform.spec.sources import Registry, load_registry

__all__ = [
    "LEVELS",
    "Area",
    "Catalogue",
    "ErrorSpec",
    "Registry",
    "Release",
    "Rule",
    "Scope",
    "Source",
    "Spec",
    "SpecReport",
    "check_spec",
    "default_specs_dir",
    "holds_for",
    "load_catalogue",
    "load_registry",
    "load_spec",
    "spec_digest",
    "uncovered_sections",
]
