"""The package as declared in pyproject.toml: the Python floor the code needs, commands that resolve, every
data file shipped, and the README saying the same floor."""

from __future__ import annotations

import fnmatch
import importlib
import subprocess
import tomllib
from pathlib import Path

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
