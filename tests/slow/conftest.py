"""Shared fixtures for the slow tier (real TensorFlow / Horovod processes).

* Tests in this directory get a hard per-test time limit: ``@pytest.mark.timeout(S)``
  (or DEFAULT_TIMEOUT_S).  pytest-timeout is used when installed; otherwise a
  SIGALRM fails the test, so a hang is a failure, never a stuck run.
* ``runtime_python``: an interpreter with TensorFlow and Horovod (this one, or
  the environment scripts/setup_runtime.sh builds); tests that need it are
  skipped with a pointer to the setup script when there is none.
* ``missing_stack(reason)``: how a test says a stack it needs is missing
  (Horovod, the tf-distribute stack of TFDIST_TF_DISTRIBUTE_VENV, Slurm and
  munge, a module of the runtime environment): a skip, or, under ``.ci/run``
  (TFDIST_REQUIRE_STACKS=1), a failure with the same reason, so a green CI
  run cannot mean that nothing ran. Skips for other reasons (a busy
  machine, a scenario this machine cannot set up) stay skips, and say why.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typing import NoReturn

import pytest

import tiers

SRC = Path(__file__).resolve().parents[2] / "src"
SCRIPTS = Path(__file__).resolve().parent / "runtime_scripts"
DEFAULT_TIMEOUT_S = 300


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("timeout"):
        config.addinivalue_line("markers", "timeout(seconds): fail the test if it runs longer")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The tests tests/slow/tiers.py moves to the extended tier get its
    marker before ``-m`` selects by markers; every collected id is kept for
    tests/slow/test_tiers.py."""
    collected = config.__dict__.setdefault("tfdist_collected", {})
    for item in items:
        key = item.nodeid.split("tests/slow/", 1)[-1]
        if key in tiers.EXTENDED:
            item.add_marker(pytest.mark.extended)
        collected[key] = item.get_closest_marker("extended") is not None


@pytest.fixture(autouse=True)
def _hard_time_limit(request):
    if request.config.pluginmanager.hasplugin("timeout") or not hasattr(signal, "SIGALRM"):
        yield
        return
    marker = request.node.get_closest_marker("timeout")
    seconds = int(marker.args[0]) if marker and marker.args else DEFAULT_TIMEOUT_S

    def on_alarm(signum, frame):
        pytest.fail(f"test exceeded its {seconds}s time limit (hang?)", pytrace=False)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


#: Set to 1 by .ci/run: a test whose stack is missing fails instead of skipping.
REQUIRE_STACKS_ENV = "TFDIST_REQUIRE_STACKS"


def missing_stack(reason: str) -> NoReturn:
    """A stack this test needs is missing: skip, or fail under TFDIST_REQUIRE_STACKS=1."""
    if os.environ.get(REQUIRE_STACKS_ENV) == "1":
        pytest.fail(f"{reason} [{REQUIRE_STACKS_ENV}=1: a missing stack fails the run]", pytrace=False)
    pytest.skip(reason)


def require_module(name: str):
    """The module, imported; a missing one is a missing stack (pytest.importorskip's counterpart)."""
    if importlib.util.find_spec(name) is None:
        missing_stack(f"could not import {name!r}: the runtime environment lacks it")
    return importlib.import_module(name)


def _has_runtime() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("tensorflow", "horovod"))


@pytest.fixture(scope="session")
def runtime_python() -> str:
    if _has_runtime():
        return sys.executable
    venv = Path(os.environ.get("TFDIST_VENV", Path.home() / ".cache/tfdist/venv-tf2.15.1-hvd0.28.1-py3.11"))
    if (venv / "bin" / "horovodrun").exists():
        return str(venv / "bin" / "python")
    missing_stack("needs TensorFlow + Horovod: run `bash scripts/setup_runtime.sh` and use its python")


def tf_distribute_python() -> str:
    """The TF 2.21 stack's interpreter (TFDIST_TF_DISTRIBUTE_VENV, which scripts/test.sh exports)."""
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    if not venv:
        missing_stack("TFDIST_TF_DISTRIBUTE_VENV is not set: `bash scripts/test.sh` builds and exports it")
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        missing_stack(f"{python} does not exist: run `bash scripts/setup_runtime.sh tf-distribute`")
    return str(python)


def cli_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(extra or {})
    return env


class Completed:
    def __init__(self, proc: subprocess.CompletedProcess, seconds: float):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds

    def __repr__(self):
        return (f"<rc={self.returncode} {self.seconds:.1f}s\n--- stdout ---\n{self.stdout[-3000:]}"
                f"\n--- stderr ---\n{self.stderr[-3000:]}>")


def run_tfdist(python: str, args: list[str], cwd, timeout: float = 240, env: dict | None = None) -> Completed:
    """``python -m tfdist.runtime.commands ARGS`` (what ``tfdist run/verify`` dispatches to)."""
    start = time.monotonic()
    proc = subprocess.run([python, "-m", "tfdist.runtime.commands", *args], cwd=cwd, env=env or cli_env(),
                          capture_output=True, text=True, timeout=timeout)
    return Completed(proc, time.monotonic() - start)


def verify_passes(python: str, engine: str, mode: list[str], script, tmp_path, compare: bool = True) -> dict:
    """``tfdist verify --backend ENGINE MODE [--compare] SCRIPT`` with a JSON report: asserts the run
    exits 0 with PASS (and, comparing, that the converted run learns like the original); the report."""
    report = tmp_path / "verify-report.json"
    res = run_tfdist(python, ["verify", "--backend", engine, *mode, *(["--compare"] if compare else []),
                              "--timeout", "300", "--report", str(report), str(script)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    if compare:
        assert data["compare"]["verdict"] == "PASS", data["compare"]
    return data


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
