"""The package as declared in pyproject.toml: the Python floor the code needs, commands that resolve, every
data file shipped, and the README saying the same floor."""

from __future__ import annotations

import fnmatch
import importlib
import subprocess
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_python_floor_is_the_one_the_code_needs():
    assert PROJECT["project"]["requires-python"] == ">=3.11"  # enum.StrEnum
    assert "Python 3.11+" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_command_names_a_function_that_exists():
    scripts = PROJECT["project"]["scripts"]
    assert set(scripts) == {"bert-explorer", "bertdemo-pretrain", "bertdemo-eval-cloze"}
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_the_dependencies_are_the_runtime_requirements():
    assert PROJECT["tool"]["setuptools"]["dynamic"]["dependencies"] == {"file": ["requirements.txt"]}


def test_every_data_file_of_the_package_is_shipped():
    tracked = subprocess.run(["git", "ls-files", "bertdemo"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    patterns = PROJECT["tool"]["setuptools"]["package-data"]["*"]
    left_out = [path for path in tracked if not path.endswith(".py")
                and not any(fnmatch.fnmatch(Path(path).name, p) for p in patterns)]
    assert left_out == []


def _requirements(name: str) -> list[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def _constraints() -> dict[str, str]:
    pins = dict(line.split("==") for line in _requirements("constraints.txt"))
    return {canonicalize_name(name): version for name, version in pins.items()}


def test_the_runtime_requirements_carry_no_test_tools():
    names = {canonicalize_name(Requirement(line).name) for line in _requirements("requirements.txt")}
    test_tools = {"pytest", "pytest-xdist", "playwright", "ruff", "markdown-it-py"}
    assert not names & test_tools
    dev = _requirements("requirements-dev.txt")
    assert dev[0] == "-r requirements.txt"
    assert {canonicalize_name(Requirement(line).name) for line in dev[1:]} == test_tools


def test_the_constraints_pin_every_requirement_within_its_range():
    pins = _constraints()
    for line in _requirements("requirements.txt") + _requirements("requirements-dev.txt")[1:]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, name
        assert requirement.specifier.contains(pins[name]), (line, pins[name])
    assert {"gradio", "transformers", "torch", "playwright"} <= set(pins)


def test_ci_installs_cpu_torch_then_the_dev_requirements_with_the_constraints():
    lines = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if line.startswith("python -m pip install")]
    assert lines[1:] == ["python -m pip install -q torch==2.13.0 -c constraints.txt",
                         "python -m pip install -q -r requirements-dev.txt -c constraints.txt"]
    assert _constraints()["torch"] == "2.13.0"


def test_ci_lints_with_the_pinned_ruff_before_the_tests():
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert lines.index("ruff check") < lines.index("python -m pytest -q")  # a finding fails CI (set -e)
    assert "ruff==0.17.6" in _requirements("requirements-dev.txt") and _constraints()["ruff"] == "0.17.6"
