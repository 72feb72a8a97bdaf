"""The 20 core benchmark expressions in x, y, z: text that ``tang.parse`` reads.

Shared by the benchmarks so every speed figure is measured on the same work. They mix the
whole function set (sin cos exp log sqrt pow tanh atan2 where) at sizes from a line of
physics to a small network layer.
"""

from __future__ import annotations

EXPRESSIONS: dict[str, str] = {
    "product_sin": "sin(x*y) + z",
    "gaussian": "exp(-(x^2 + y^2 + z^2) / 2)",
    "rosenbrock": "(1 - x)^2 + 100*(y - x^2)^2 + (1 - y)^2 + 100*(z - y^2)^2",
    "norm": "sqrt(x^2 + y^2 + z^2)",
    "log_sum_exp": "log(exp(x) + exp(y) + exp(z))",
    "softplus": "log(1 + exp(x*y - z))",
    "tanh_layer": "tanh(0.5*x - 1.2*y + 0.3*z + 0.1) * 0.7 + tanh(-0.4*x + 0.9*y - 0.2*z) * 1.3",
    "polar": "atan2(y, x) * sqrt(x^2 + y^2)",
    "spherical": "atan2(sqrt(x^2 + y^2), z) + atan2(y, x)",
    "power": "pow(x^2 + 1, y / 3) * z",
    "rational": "(x^3 - 2*x*y + z) / (1 + x^2 + y^4)",
    "oscillator": "exp(-0.1*z) * cos(3*z + x) * y",
    "hinge": "where(x*y > 1, 0, 1 - x*y) + 0.1*z^2",
    "relu_mix": "max(x, 0) * y + min(y, 0) * z + abs(z - x)",
    "coulomb": "1 / sqrt((x - 1)^2 + y^2 + z^2 + 0.01) - 1 / sqrt((x + 1)^2 + y^2 + z^2 + 0.01)",
    "logistic": "1 / (1 + exp(-(2*x - y + 0.5*z)))",
    "lennard_jones": "4 * ((1 / (x^2 + y^2 + z^2))^6 - (1 / (x^2 + y^2 + z^2))^3)",
    "wave": "sin(x) * cos(y) * tanh(z) + cos(x*y*z)",
    "entropy": "-(x^2 * log(x^2 + 1e-9) + y^2 * log(y^2 + 1e-9)) + sqrt(z^2 + 1)",
    "pendulum": "0.5 * z^2 + 9.81 * (1 - cos(x)) + where(y < 0, -y, y) * sin(x - y)",
}
