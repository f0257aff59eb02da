"""The config checks judge with the reference engine's own constants, not copies of them."""

from csconform.engine.estimator_config import UNSUPPORTED_PARAMETERS
from csconform.userconfig.checks import ESTIMATOR_RULES


def test_every_runconfig_parameter_the_engine_refuses_has_its_rule():
    assert sorted(ESTIMATOR_RULES) == sorted(UNSUPPORTED_PARAMETERS)
    assert len(set(ESTIMATOR_RULES.values())) == len(ESTIMATOR_RULES)
