import math
from hypothesis import HealthCheck, assume, given, settings
from tests.test_grad import *  # noqa
from tests.test_grad import test_gradients_match_sympy_and_duals as base, test_second_derivatives_nested_duals_and_forward_over_reverse as base2

@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(programs(max_steps=9), points)
def test_stress(steps, point):
    base.hypothesis.inner_test(steps, point)

@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(programs(max_steps=7), points)
def test_stress2(steps, point):
    base2.hypothesis.inner_test(steps, point)
