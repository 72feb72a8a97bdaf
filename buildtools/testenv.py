"""`python build.py test`: install what the tests need (pip extras, Debian packages, the
model file), build, run pytest over tests/ and e2e/."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .common import DIST, ROOT, BuildError, log, run_tool
from .fetch import fetch_model
from .site import build

APT_PACKAGES = (
    "chromium",
    "mesa-vulkan-drivers",
    "libvulkan1",
    "glslang-tools",
    "pocl-opencl-icd",
    "ocl-icd-libopencl1",
    "valgrind",  # tang.crypto's constant-time check (memcheck, memcheck.h)
)


def dev_requirements() -> list[str]:
    """The ``dev`` extra of pyproject.toml: one list of what the tests need, read, not copied."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["optional-dependencies"]["dev"])


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version ("70.1.0rc1" -> (70, 1, 0)), enough for ">=" checks."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
    return tuple(numbers)


def _missing_distributions() -> list[str]:
    """Requirements of the dev extra that are absent, or older than their ``>=`` bound."""
    from importlib import metadata

    missing = []
    for requirement in dev_requirements():
        name, _, minimum = (s.strip() for s in requirement.partition(">="))
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(requirement)
            continue
        if minimum and _release(installed) < _release(minimum):
            missing.append(f"{requirement} (have {installed})")
    return missing


def _missing_apt_packages() -> list[str]:
    if shutil.which("dpkg-query") is None:
        return [] if Path("/usr/bin/chromium").exists() else ["chromium"]
    missing = []
    for name in APT_PACKAGES:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True
        )
        if "install ok installed" not in proc.stdout:
            missing.append(name)
    return missing


def ensure_test_requirements() -> None:
    missing = _missing_distributions()
    if missing:
        log(f"installing Python test requirements ({', '.join(missing)}): pip install -e .[dev]")
        run_tool(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-e",
                f"{ROOT}[dev]",
            ],
            what="install the test requirements (pip install -e .[dev])",
            how="install pip for this Python (python -m ensurepip, or apt-get install python3-pip)",
        )
    missing = _missing_apt_packages()
    if not missing:
        return
    names = " ".join(missing)
    if shutil.which("apt-get") is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise BuildError(
            f"missing system packages: {names}; install them as root with "
            f"`apt-get install -y {names}` (Debian/Ubuntu), then run again"
        )
    log(f"installing system packages: {names}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
    ):
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=1800
        )
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            raise BuildError(
                f"`{' '.join(argv)}` failed (is the Debian mirror reachable?): "
                f"{lines[-1] if lines else proc.returncode}"
            )


def test(pytest_args: list[str]) -> int:
    started = time.perf_counter()
    ensure_test_requirements()
    build(DIST)
    fetch_model()  # tests/conftest.py's smollm2_gguf: the GGUF reader and LLM tests need it
    targets = [d for d in ("tests", "e2e") if (ROOT / d).is_dir()]
    if any(Path(ROOT, a.split("::")[0]).exists() for a in pytest_args if not a.startswith("-")):
        targets = []  # the caller named what to run
    argv = [sys.executable, "-m", "pytest", *targets, *pytest_args]
    log(" ".join(argv[2:]))
    code = subprocess.run(argv, cwd=ROOT).returncode
    if code == 5:
        log("pytest collected no tests: counting that as a failure")
        code = 1
    log(f"{'passed' if code == 0 else 'FAILED'} in {time.perf_counter() - started:.0f} s")
    return code
