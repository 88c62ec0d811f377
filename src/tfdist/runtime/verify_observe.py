"""Run a script under the probe -- single-process, under horovodrun, or as N
TF_CONFIG workers -- and collect what each process recorded."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from . import launcher
from .probe import (ADDED_PATH_ENV, LOCAL_DEVICES_ENV, LOSSES_ENV, MAX_STEPS_ENV, ORIG_PYTHONPATH_ENV, PROBE_DIR_ENV,
                    SEED_ENV)
from .verify_records import BACKENDS, HOROVOD, TF_DISTRIBUTE, Observation, read_records

DEFAULT_TIMEOUT = 600.0

#: the seed a comparison gives both runs (+ the rank): any fixed value does.
COMPARE_SEED = 1234


def run_and_observe(script: str | os.PathLike, np: int, cwd: str | os.PathLike, timeout: float | None = DEFAULT_TIMEOUT,
                    args: Sequence[str] = (), *, single: bool | None = None, as_file: str | os.PathLike | None = None,
                    steps_cap: int | None = None, probe_dir: str | os.PathLike | None = None,
                    log_path: str | os.PathLike | None = None, sink: Callable[[str], None] | None = None,
                    env: dict | None = None, horovodrun: str | None = None, label: str | None = None,
                    pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                    python: str | None = None, record_losses: bool = False, local_devices: int = 1,
                    seed: int | None = None) -> Observation:
    """Run ``script`` under the probe and collect one RankRecord per rank.

    ``single`` (default: np == 1) runs plain ``python`` (one process, rank 0 of
    1, Horovod launcher variables and TF_CONFIG removed from the environment);
    otherwise ``horovodrun -np N -H localhost:N --gloo python -m
    tfdist.runtime.probe`` (``backend="horovod"``) or N such processes on
    localhost, each with its TF_CONFIG (``backend="tf-distribute"``).
    ``python``: the interpreter (default: the one horovodrun belongs to for
    Horovod, sys.executable for tf-distribute).
    ``cwd`` is created if needed and used as every process's working
    directory.  ``steps_cap`` sets TFDIST_PROBE_MAX_STEPS for each process.
    ``env`` replaces os.environ as the base environment; ``pythonpath``
    entries go first on the script's PYTHONPATH (and stay visible to it, unlike
    tfdist's own entry): e.g. a directory whose sitecustomize.py installs
    stand-in modules (tests/slow/support/mnist_standin).
    ``record_losses`` makes the probe record the training loss (verify --compare),
    and seeds the script's generators with ``seed`` (default COMPARE_SEED) +
    its rank, so the original and rank 0 start from the same weights (the
    probe's SEED_ENV says why).
    ``local_devices`` > 1 presents each process's CPU as that many logical
    devices (the probe's TFDIST_PROBE_LOCAL_DEVICES).
    Raises launcher.RuntimeMissing when horovodrun is needed and not found.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (available: {', '.join(BACKENDS)})")
    script = os.path.abspath(os.fspath(script))
    cwd = Path(cwd).resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    single = (np == 1) if single is None else single
    if single and np != 1:
        raise ValueError("single-process runs have np == 1")
    own_probe_dir = probe_dir is None
    probe_path = Path(probe_dir) if probe_dir is not None else Path(tempfile.mkdtemp(prefix="tfdist-probe-"))
    probe_path.mkdir(parents=True, exist_ok=True)
    for old in probe_path.glob("rank-*.json"):
        old.unlink()

    run_env = probe_env(dict(os.environ if env is None else env), pythonpath, probe_path, steps_cap,
                         record_losses, seed, local_devices)
    probe_cmd = ["-m", "tfdist.runtime.probe"]
    if as_file is not None:
        probe_cmd += ["--as-file", os.path.abspath(os.fspath(as_file))]
    probe_cmd += [script, *args]
    command, run_env, workers = _launch_command(backend, single, np, probe_cmd, run_env, python, horovodrun)
    try:
        if workers is not None:
            result = launcher.execute_workers(workers, command, timeout=timeout, env=run_env, cwd=cwd, sink=sink,
                                              log_path=log_path)
        else:
            result = launcher.execute(command, timeout=timeout, env=run_env, cwd=cwd, sink=sink,
                                      log_path=log_path)
        ranks = read_records(probe_path, np)
    finally:
        if own_probe_dir:
            shutil.rmtree(probe_path, ignore_errors=True)
    what = "workers" if backend == TF_DISTRIBUTE else "ranks"
    return Observation(label=label or ("single process" if single else f"{np} {what}"), np=np, cwd=str(cwd),
                       ranks=ranks, returncode=result.returncode, timed_out=result.timed_out,
                       duration_s=result.duration_s, command=result.command, tail=result.tail,
                       log_path=os.fspath(log_path) if log_path else None, backend=backend)


def probe_env(base_env: dict, pythonpath: Sequence[str | os.PathLike], probe_path: Path, steps_cap: int | None,
               record_losses: bool, seed: int | None, local_devices: int) -> dict:
    """The environment of a run under the probe: ``pythonpath`` first on the
    script's PYTHONPATH, tfdist importable, and the probe's settings set or
    removed."""
    if pythonpath:
        entries = [os.path.abspath(os.fspath(p)) for p in pythonpath]
        if base_env.get("PYTHONPATH"):
            entries.append(base_env["PYTHONPATH"])
        base_env["PYTHONPATH"] = os.pathsep.join(entries)
    src = launcher.tfdist_pythonpath()
    run_env = launcher.with_pythonpath(base_env, [src])
    run_env[ADDED_PATH_ENV] = src
    run_env[ORIG_PYTHONPATH_ENV] = base_env.get("PYTHONPATH", "")
    run_env[PROBE_DIR_ENV] = str(probe_path)
    run_env.setdefault("PYTHONUNBUFFERED", "1")
    if steps_cap:
        run_env[MAX_STEPS_ENV] = str(int(steps_cap))
    else:
        run_env.pop(MAX_STEPS_ENV, None)
    if record_losses:
        run_env[LOSSES_ENV] = "1"
        run_env[SEED_ENV] = str(COMPARE_SEED if seed is None else int(seed))
    else:
        run_env.pop(LOSSES_ENV, None)
        run_env.pop(SEED_ENV, None)
    if local_devices > 1:
        run_env[LOCAL_DEVICES_ENV] = str(int(local_devices))
    else:
        run_env.pop(LOCAL_DEVICES_ENV, None)
    return run_env


def _launch_command(backend: str, single: bool, np: int, probe_cmd: list[str], run_env: dict, python: str | None,
                    horovodrun: str | None) -> tuple[list[str], dict, list | None]:
    """(command, environment, tf.distribute workers or None) that start the
    probe: one plain process, horovodrun's N ranks, or N TF_CONFIG workers.
    Raises launcher.RuntimeMissing when horovodrun is needed and not found."""
    workers = None
    if backend == TF_DISTRIBUTE:
        python = python or sys.executable
        run_env = launcher.single_process_env(run_env)     # no stray TF_CONFIG / Horovod variables
        if single:
            command = [python, *probe_cmd]
        else:
            workers = launcher.tf_distribute_workers(np)
            command = [python, *probe_cmd]
    elif single:
        hvdrun = horovodrun or launcher.find_horovodrun()
        python = python or (launcher.python_for(hvdrun) if hvdrun else sys.executable)
        command = [python, *probe_cmd]
        run_env = launcher.single_process_env(run_env)
    else:
        hvdrun = horovodrun or launcher.find_horovodrun()
        if hvdrun is None:
            raise launcher.RuntimeMissing()
        command = launcher.horovodrun_command(np, [python or launcher.python_for(hvdrun), *probe_cmd],
                                              horovodrun=hvdrun)
    return command, run_env, workers
