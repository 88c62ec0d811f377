"""``tfdist verify --strategy parameter-server -np W --ps P``: a script
converted for tf.distribute's ParameterServerStrategy, checked the way
asynchronous training can be checked.

The original runs once as one process; the conversion runs as a cluster on
this machine, as ``tfdist run --strategy parameter-server`` starts it (a
chief, W workers, P parameter servers, each under the probe with its
TF_CONFIG; the probe ranks them chief 0, workers 1..W, parameter servers
after). The workers and parameter servers serve in
``tf.distribute.Server.join()`` until the launcher stops them when the chief
ends -- that is no failure; the probe writes their record as they start
serving. Checked:

* every process exited 0: the chief (which runs the script), and no worker or
  parameter server exited before the chief ended;
* the chief built a ParameterServerStrategy, and every other task served;
* the optimizer steps: the chief's ``fit`` schedules ``steps_per_epoch``
  steps an epoch onto whichever worker is free, and the optimizer's
  ``iterations`` (on the parameter servers) counts every step any worker
  applied: the chief's count is the cluster's, and it must be the original's
  (within verify's step tolerance);
* the learning rate the first fit trains with is the original's (x 1: each
  worker applies its own batch's gradients as written), when tfdist converted;
* only the chief wrote checkpoint / summary / model files;
* with --compare, the chief's final loss within the band of the original's
  (runtime/compare.py).

Not checked, with the reason in the report: bitwise-identical replicas (the
workers hold no variables: one copy lives on the parameter servers) and the
samples per rank (each worker builds its dataset inside its own process, in
functions the chief schedules there: the probe sees none of its batches).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..options import PARAMETER_SERVER, Options
from . import compare as C
from . import launcher, ps_launcher
from . import verify as V
from .verify_checks import exit_checks, rate_check, expected_steps, loss_checks
from .verify_observe import probe_env
from .verify_records import TF_DISTRIBUTE, Observation, RankRecord, read_records
from .verify_report import VerifyReport, as_text
from .verify_results import Check, brief, rel_path, short_list

#: The checks of a parameter-server run that do not apply, and why.
SKIPPED = (
    ("variables-identical", "bitwise-identical replicas: the workers hold no variables (one copy of each lives on "
                            "the parameter servers, split by the variable partitioner); nothing to compare"),
    ("samples", "samples per rank: each worker builds its dataset in its own process, inside functions the chief "
                "schedules there (fit(): sharded by its input context; a loop's dataset: a copy of its own; "
                "shuffled by each worker): the probe sees none of its batches"),
)
STRATEGY_CLASS = ps_launcher.STRATEGY_CLASS


def run_cluster(script: Path, workers: int, parameter_servers: int, cwd: Path, timeout: float | None,
                args: Sequence[str], *, as_file: Path | None, probe_dir: Path, log_path: Path | None,
                sink: Callable[[str], None] | None, env: dict | None, python: str | None,
                record_losses: bool, label: str) -> tuple[Observation, list[str], launcher.LaunchResult]:
    """The conversion as a cluster under the probe: (its Observation with
    one record per task, chief first; the tasks' labels in rank order; the
    launcher's result, with each task's exit status -- None: stopped by the
    launcher when the chief ended)."""
    cwd.mkdir(parents=True, exist_ok=True)
    probe_dir.mkdir(parents=True, exist_ok=True)
    for old in probe_dir.glob("rank-*.json"):
        old.unlink()
    run_env = probe_env(dict(os.environ if env is None else env), (), probe_dir, None, record_losses, None, 1)
    run_env = launcher.single_process_env(run_env)
    tasks = ps_launcher.cluster_tasks(workers, parameter_servers)
    command = [python or sys.executable, "-m", "tfdist.runtime.probe"]
    if as_file is not None:
        command += ["--as-file", str(as_file)]
    command += [str(script), *args]
    result = launcher.execute_workers(tasks, command, timeout=timeout, env=run_env, cwd=cwd, sink=sink,
                                      log_path=log_path, until=0)
    ranks = read_records(probe_dir, len(tasks))
    observation = Observation(label=label, np=len(tasks), cwd=str(cwd), ranks=ranks, returncode=result.returncode,
                              timed_out=result.timed_out, duration_s=result.duration_s, command=result.command,
                              tail=result.tail, log_path=str(log_path) if log_path else None, backend=TF_DISTRIBUTE)
    return observation, [t.label for t in tasks], result


def _task_exit_check(ranks: list[RankRecord], labels: list[str], result: launcher.LaunchResult) -> Check:
    """The chief exited 0; every other task served until the launcher stopped
    it when the chief ended (or exited 0)."""
    codes = list(result.worker_returncodes) + [None] * (len(labels) - len(result.worker_returncodes))
    measured = {"tasks": {label: ("stopped after the chief" if code is None and i else code)
                          for i, (label, code) in enumerate(zip(labels, codes))},
                "launcher": result.returncode}
    bad = []
    chief = ranks[0]
    if chief.missing:
        bad.append(f"the chief left no probe record (exit {codes[0]})")
    elif chief.exit_code != 0:
        bad.append(f"the chief exited {chief.exit_code}" + (f" ({brief(chief.exception)})" if chief.exception else ""))
    for i, (label, record, code) in enumerate(zip(labels, ranks, codes)):
        if not i:
            continue
        if code not in (None, 0):
            bad.append(f"{label} exited {code} before the chief ended")
        elif record.missing:
            bad.append(f"{label} left no probe record (it never started serving)")
        elif record.raw.get("exit_how") != "serving" and record.exit_code != 0:
            bad.append(f"{label} exited {record.exit_code}")
    if not bad and result.returncode != 0 and not result.timed_out:
        bad.append(f"the cluster's run ended with status {result.returncode}")
    if bad:
        return Check("exit-codes", False, measured, 0, "; ".join(bad))
    workers = sum(1 for label in labels if label.startswith("worker:"))
    return Check("exit-codes", True, measured, 0,
                 f"the chief exited 0; the {workers} worker(s) and {len(labels) - 1 - workers} parameter server(s) "
                 "served until the launcher stopped them when the chief ended (not a failure)")


def _cluster_check(ranks: list[RankRecord], labels: list[str]) -> Check:
    """The chief built a ParameterServerStrategy; the other tasks served."""
    chief = ranks[0]
    classes = sorted({s.get("class", "?") for s in chief.strategies}) if not chief.missing else []
    serving = [label for label, r in zip(labels[1:], ranks[1:]) if not r.missing and r.raw.get("exit_how") == "serving"]
    measured = {"chief_strategies": classes, "serving": serving}
    if not any(STRATEGY_CLASS in c for c in classes):
        return Check("parameter-server-cluster", False, measured, STRATEGY_CLASS,
                     f"the chief built no {STRATEGY_CLASS} (" + (", ".join(classes) or "no tf.distribute strategy")
                     + "): does the script build one when TF_CONFIG is set?")
    if len(serving) != len(labels) - 1:
        idle = [label for label in labels[1:] if label not in serving]
        return Check("parameter-server-cluster", False, measured, STRATEGY_CLASS,
                     f"{', '.join(idle)} did not serve the cluster (no tf.distribute.Server.join())")
    return Check("parameter-server-cluster", True, measured, STRATEGY_CLASS,
                 f"the chief built a {'/'.join(classes)}; {', '.join(serving)} served it")


def _steps_check(ref: RankRecord, chief: RankRecord) -> Check:
    """The cluster's optimizer steps (the chief's count: every step a worker
    applies moves the one ``iterations`` variable) against the original's."""
    measured = {"original": ref.optimizer_steps, "cluster": chief.optimizer_steps}
    if not ref.optimizer_steps:
        return Check("steps-scheduled", False, measured, None,
                     "the original script took no optimizer steps that tfdist could observe")
    expected, tol = expected_steps(ref.optimizer_steps, 1)
    wanted = {"cluster": expected, "tolerance": tol}
    if abs(chief.optimizer_steps - expected) > tol:
        return Check("steps-scheduled", False, measured, wanted,
                     f"the workers together took {chief.optimizer_steps} optimizer steps (counted on the chief), "
                     f"not the original's {ref.optimizer_steps} (+/- {tol:g}): does fit() get the original's "
                     "steps_per_epoch?")
    return Check("steps-scheduled", True, measured, wanted,
                 f"the workers together took the original's {ref.optimizer_steps} optimizer steps "
                 f"({chief.optimizer_steps}, scheduled by the chief)")


def _writer_check(ranks: list[RankRecord], labels: list[str], cwd: str) -> Check:
    offenders, measured = [], {}
    for label, r in zip(labels[1:], ranks[1:]):
        gated = [] if r.missing else r.gated_files()
        if gated:
            measured[label] = [rel_path(f.path, cwd) for f in gated]
            offenders.append(f"{label} wrote {short_list(measured[label])}")
    if offenders:
        return Check("chief-writes", False, {"other_tasks": measured}, "chief only",
                     "only the chief may write checkpoints/summaries/models; " + "; ".join(offenders))
    n0 = 0 if ranks[0].missing else len(ranks[0].gated_files())
    return Check("chief-writes", True, {"chief": n0, "other_tasks": {}}, "chief only",
                 f"only the chief wrote checkpoint/summary/model files ({n0} path(s))")


def cluster_checks(reference: Observation, cluster: Observation, labels: list[str], result: launcher.LaunchResult,
                   rate_factor: float | None) -> tuple[list[Check], list[str]]:
    """(checks, warnings) of a parameter-server run against the original's."""
    ref = reference.ranks[0] if reference.ranks else RankRecord.missing_rank(0, 1)
    ranks = cluster.ranks[:len(labels)]
    checks = [c for c in exit_checks(reference, ref, cluster, [], 0, True)
              if c.name in ("original-exit", "distributed-finished")]
    checks.append(_task_exit_check(ranks, labels, result))
    checks.append(_cluster_check(ranks, labels))
    chief, warnings = ranks[0], []
    if not chief.missing and not ref.missing:
        checks.append(_steps_check(ref, chief))
        if rate_factor is not None:
            rate = rate_check(ref, [chief], rate_factor)
            if rate is not None:
                checks.append(rate)
    checks.append(_writer_check(ranks, labels, cluster.cwd))
    for label, r in zip(["original", *labels], [ref, *ranks]):
        for error in r.probe_errors[:3]:
            warnings.append(f"probe ({label}): {error}")
    return checks, warnings


def verify_parameter_servers(setup, reference: Observation, base: Path, dist_script: Path, status: str,
                             parameter_servers: int, rel_tolerance: float, abs_tolerance: float,
                             rate_factor: float | None) -> VerifyReport:
    """Run the conversion as a parameter-server cluster (``setup``: verify's
    RunSetup, ``np`` the workers) and check it against the original's run."""
    workers = setup.np
    as_file = setup.script if dist_script != setup.script else None
    label = f"converted, chief + {workers} workers + {parameter_servers} ps"
    cluster, labels, result = run_cluster(dist_script, workers, parameter_servers, base / "distributed",
                                          setup.timeout, setup.args, as_file=as_file,
                                          probe_dir=base / "probe-distributed", log_path=base / "distributed.log",
                                          sink=setup.sink, env=setup.env, python=setup.python,
                                          record_losses=setup.record_losses, label=label)
    checks, warnings = cluster_checks(reference, cluster, labels, result, rate_factor)
    comparison = None
    if setup.record_losses:
        chief_only = dataclasses.replace(cluster, ranks=cluster.ranks[:1], np=1)
        comparison = C.compare(C.curve_of(reference), C.curve_of(chief_only, label), rel_tolerance, abs_tolerance)
        checks.extend(loss_checks(comparison))
    reasons, lines = as_text(checks)
    return VerifyReport(script=str(setup.script), np=workers, passed=not reasons, reasons=reasons, checks=lines,
                        warnings=warnings, reference=reference, distributed=cluster,
                        converted_path=None if status == "given" else str(dist_script), conversion_status=status,
                        comparison=comparison, check_results=checks,
                        skipped=[f"{name}: {why}" for name, why in SKIPPED], task_labels=labels)


def options(min_shard_bytes: int | None = None) -> Options:
    """The conversion's options: tf-distribute with ParameterServerStrategy."""
    return Options(backend=TF_DISTRIBUTE, strategy=PARAMETER_SERVER, min_shard_bytes=min_shard_bytes)


def verify_script(script, workers: int, parameter_servers: int, args: Sequence[str] = (), *, converted: bool = False,
                  original=None, timeout: float | None = None, keep: bool = False, sink=None, env: dict | None = None,
                  python: str | None = None, compare: bool = False, rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                  abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE) -> VerifyReport:
    """Convert ``script`` for parameter servers (unless ``converted``), run the
    original as one process and the conversion as a cluster of a chief,
    ``workers`` workers and ``parameter_servers`` parameter servers, and
    check it. Raises verify.VerifyInputError (bad input)."""
    script, _, python = V.check_inputs(script, workers, TF_DISTRIBUTE, python, None)
    reference_script = script if original is None else Path(original).resolve()
    if not reference_script.is_file():
        raise V.VerifyInputError(f"no such script: {reference_script}")
    setup = V.RunSetup(script, workers, args, None, timeout, sink, None, env, (), TF_DISTRIBUTE, python, compare)
    base = Path(tempfile.mkdtemp(prefix="tfdist-verify-ps-"))
    try:
        if converted:
            dist_script, status, tf_keras = script, "given", "everywhere"
        else:
            dist_script, status, _, tf_keras = V.convert_to(script, base / "converted", options())
            tf_keras = tf_keras or "everywhere"   # the chief stops under Keras 3: the original runs on tf-keras too
        if not ps_launcher.builds_parameter_servers(str(dist_script)):
            raise V.VerifyInputError(f"{dist_script} builds no {STRATEGY_CLASS}: nothing to run on parameter servers")
        reference = V.run_original(setup, reference_script, base, tf_keras)
        report = verify_parameter_servers(setup, reference, base, dist_script, status, parameter_servers,
                                          rel_tolerance, abs_tolerance, None if converted else 1.0)
        report.workdir = str(base) if keep else None
        return report
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
