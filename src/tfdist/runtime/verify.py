"""Run a script single-process and its distributed version on N processes
under the probe, then check that the ranks trained correctly.

Two engines: ``backend="horovod"`` (the ranks run under horovodrun) and
``backend="tf-distribute"`` (N TF_CONFIG workers started by
launcher.execute_workers; the rank is the worker's task index, worker 0 the
chief).

Reusable from tests::

    from tfdist.runtime.verify import verify_script, run_and_observe
    report = verify_script("examples/mnist.py", np=2)
    assert report.passed, report.format_text()

This module converts, runs and assembles the reports (verify_script,
sweep_script); the parts are in
  verify_records  RankRecord / FileWrite / Observation (the probe's records)
  verify_samples  SampleStream: the samples a process trained on
  verify_observe  run_and_observe: one probed run
  verify_checks   the checks, as typed Check results
  verify_report   their rendering: text lines, --json, the report table
and every name they had here is still importable from here.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..api import convert_file
from ..assembly import pipeline
from ..engine_choice import Choice, choose_engine, written_for
from ..options import LR_POLICIES, Options, OptionsError
from ..project import project_context_for_file
from ..project.notebook import convert_notebook, notebook_script
from . import compare as C
from . import launcher
from .verify_checks import (CHECK_NAMES, STEP_TOLERANCE_ABS, STEP_TOLERANCE_REL, Check, CheckResults,  # noqa: F401
                            SampleResults, expected_steps, loss_checks, run_checks,
                            sample_checks)
from .verify_observe import COMPARE_SEED, DEFAULT_TIMEOUT, run_and_observe  # noqa: F401
from .verify_records import (BACKENDS, HOROVOD, TF_DISTRIBUTE, FileWrite, Observation, RankRecord,  # noqa: F401
                             read_records)
from .verify_report import (SweepReport, VerifyReport, as_text, check_lines, format_report,  # noqa: F401
                            reason_lines)
from .verify_samples import (SAMPLE_SOURCES, STEP_FOLLOWED_SOURCES, SampleStream, sample_stream,  # noqa: F401
                             samples_summary)

_read_records = read_records
_samples_summary = samples_summary


class VerifyInputError(Exception):
    """Bad input for verify (missing script, conversion impossible): exit 3."""


# --------------------------------------------------------------------------
# The checks as text (the interface tests and callers have used)
# --------------------------------------------------------------------------

def check(reference: Observation, distributed: Observation, np: int, steps_cap: int | None = None,
          samples_out: dict | None = None, backend: str | None = None,
          local_devices: int = 1, rate_factor: float | None = None,
          full_batch: bool = False) -> tuple[list[str], list[str], list[str]]:
    """Return (failure reasons, established checks, warnings) as text: the
    typed run_checks() rendered.  ``samples_out`` (a dict) receives the
    sample summary (see check_samples).  ``backend`` defaults to the
    distributed observation's.  ``local_devices``: devices each process
    replicates over (tf-distribute, verify --local-devices): the steps are
    then 1/(np x local_devices) of the original's, and each process's copies
    of a variable must be identical.  ``rate_factor``: the converted
    learning rate over the original's the conversion should give (None: not
    checked).  ``full_batch``: the conversion divides each step's data, not
    the steps (every rank runs all of the original's)."""
    results = run_checks(reference, distributed, np, steps_cap, backend=backend, local_devices=local_devices,
                         rate_factor=rate_factor, full_batch=full_batch)
    if samples_out is not None and results.samples is not None:
        samples_out.update(results.samples)
    reasons, checks = as_text(results.checks)
    return reasons, checks, results.warnings


def check_samples(ref: RankRecord, ranks: list[RankRecord], np: int) -> dict:
    """sample_checks() as text: {"reasons", "checks", "warnings", "summary",
    "identical"}."""
    result = sample_checks(ref, ranks, np)
    reasons, checks = as_text(result.checks)
    return {"reasons": reasons, "checks": checks, "warnings": result.warnings, "summary": result.summary,
            "identical": result.identical}


# --------------------------------------------------------------------------
# verify_script
# --------------------------------------------------------------------------

#: What --sweep tries by default; a warmup policy is added when the converter has it.
DEFAULT_SWEEP = ("linear", "sqrt", "none")
DEFAULT_SWEEP_WARMUP = "linear:warmup=1"


def expected_rate_factor(options: Options, replicas: int) -> float | None:
    """The learning rate at the first step of a conversion with ``options``
    over the original's, on ``replicas`` replicas; None under a warmup (it
    starts from the rate as written and ramps)."""
    if options.warmup_epochs is not None:
        return None
    if options.lr_scaling == "none":
        return 1.0
    if options.lr_scaling == "sqrt":
        return replicas ** 0.5
    return float(replicas)


def policy_options(spec: str, steps_per_epoch: int | None = None, backend: str = HOROVOD) -> Options:
    """``linear`` / ``sqrt`` / ``none``, optionally ``:warmup=K``, as the
    conversion's Options for ``backend``; a warmup counts its epochs in
    ``steps_per_epoch`` original steps when given (--steps-per-epoch).
    Raises VerifyInputError."""
    scaling, _, rest = spec.partition(":")
    if scaling not in LR_POLICIES:
        raise VerifyInputError(f"unknown learning-rate policy {spec!r}: use linear, sqrt or none, "
                               "optionally with :warmup=K (e.g. linear:warmup=1)")
    warmup = None
    if rest:
        key, _, value = rest.partition("=")
        if key != "warmup" or not value.isdigit() or int(value) < 1:
            raise VerifyInputError(f"bad policy {spec!r}: after ':' only warmup=K (K >= 1 epochs)")
        warmup = int(value)
    try:
        return Options(backend=backend, lr_scaling=scaling, warmup_epochs=warmup,
                       steps_per_epoch=int(steps_per_epoch) if steps_per_epoch and warmup else None)
    except OptionsError as exc:
        raise VerifyInputError(f"policy {spec!r}: {exc}") from exc


def choose_backend(script: str | os.PathLike, converted: bool = False) -> Choice:
    """``--backend auto`` for verify: the engine ``tfdist convert`` would give
    the script (a notebook: its code cells), or, with ``converted``, the
    engine the converted script was written for. Raises VerifyInputError."""
    path = Path(script)
    try:
        data = path.read_bytes()
        code = notebook_script(data).encode("utf-8") if path.suffix == ".ipynb" else data
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VerifyInputError(f"{script}: cannot read it to choose the engine ({exc}); give --backend") from exc
    if not converted:
        return choose_engine(code)
    found = written_for(code.decode("utf-8", "replace"))
    if found is None:
        raise VerifyInputError(f"{script} uses neither Horovod nor tf.distribute: give --backend with --converted")
    return Choice(found, "the converted script " + ("imports horovod" if found == HOROVOD
                                                     else "builds a tf.distribute strategy"))


def convert_to(script: Path, dest_dir: Path, options: Options) -> tuple[Path, str, bool, bool]:
    """Convert ``script`` as ``tfdist convert`` would with ``options`` into ``dest_dir``.
    Returns (converted path, status, full batch: every rank runs all the
    original's steps on its share, tf-keras: the converted workers switch
    tf.keras to tf-keras where it is installed).  Raises VerifyInputError."""
    try:
        pipeline(options)
    except ValueError as exc:    # a backend or option this converter does not have
        raise VerifyInputError(f"{script}: cannot convert with {options.describe()} ({exc}); "
                               "pass --converted to verify a script that is already distributed") from exc
    if script.suffix == ".ipynb":
        result = _convert_notebook(script, options)
    else:
        result = convert_file(script, backend=options)
    status = result.status
    if status in ("unsupported", "error"):
        raise VerifyInputError(f"{script}: cannot convert ({status}): {result.error or 'see tfdist convert'}")
    if status == "unchanged":
        raise VerifyInputError(f"{script}: nothing to convert (no training loop found); "
                               "pass --converted to verify a script that is already distributed")
    if status == "already-distributed":
        return (notebook_as_script(script, dest_dir) if script.suffix == ".ipynb" else script), status, False, None
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / script.name
    data = getattr(result, "data", None)
    if data is None:
        data = (result.code or "").encode("utf-8")
    dest.write_bytes(data)
    if script.suffix == ".ipynb":
        dest = notebook_as_script(dest, dest_dir)
    tf_keras = "everywhere" if getattr(result, "tf_keras_everywhere", False) else (
        "workers" if getattr(result, "tf_keras_on_workers", False) else None)
    return dest, status, bool(getattr(result, "full_batch", False)), tf_keras


def _convert_notebook(notebook: Path, options: Options):
    """A notebook converted as ``tfdist convert`` converts it (the modules
    beside it inform the conversion)."""
    return convert_notebook(str(notebook), notebook.read_bytes(), backend=options,
                            project=project_context_for_file(str(notebook))).result


def notebook_as_script(notebook: Path, dest_dir: Path) -> Path:
    """The script a notebook's code cells make, top to bottom (what a kernel
    runs; line magics and shell escapes, which only IPython runs, commented
    out), written into dest_dir: how verify runs a notebook as processes. It
    runs as the notebook's own file (its folder first on sys.path)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (notebook.stem + ".py")
    try:
        dest.write_text(notebook_script(notebook.read_bytes()), encoding="utf-8")
    except (ValueError, KeyError, TypeError) as exc:   # not notebook JSON
        raise VerifyInputError(f"{notebook}: not a notebook tfdist can read ({exc})") from exc
    return dest


def converter_accepts(options: Options) -> bool:
    try:
        pipeline(options)
        return True
    except ValueError:
        return False


@dataclass
class RunSetup:
    """What every run of one verify call shares."""
    script: Path
    np: int
    args: Sequence[str]
    steps: int | None
    timeout: float | None
    sink: Callable[[str], None] | None
    horovodrun: str | None
    env: dict | None
    pythonpath: Sequence[str | os.PathLike]
    backend: str
    python: str | None
    record_losses: bool
    local_devices: int = 1


def check_inputs(script, np: int, backend: str, python, horovodrun):
    script = Path(script).resolve()
    if not script.is_file():
        raise VerifyInputError(f"no such script: {script}")
    if np < 1:
        raise VerifyInputError("-np must be at least 1")
    if backend not in BACKENDS:
        raise VerifyInputError(f"unknown backend {backend!r} (available: {', '.join(BACKENDS)})")
    if backend == TF_DISTRIBUTE:
        return script, None, python or sys.executable
    hvdrun = horovodrun or launcher.find_horovodrun()
    if hvdrun is None:
        raise launcher.RuntimeMissing()
    return script, hvdrun, python


def _has_tf_keras(python: str | None) -> bool:
    found = subprocess.run([python or sys.executable, "-c", "import importlib.util, sys; "
                            "sys.exit(importlib.util.find_spec('tf_keras') is None)"], capture_output=True)
    return found.returncode == 0


def run_original(setup: RunSetup, original: Path, base: Path, tf_keras: Optional[str] = None) -> Observation:
    """The original as one process; on the Keras its converted processes run
    (tf-keras where they switch to it -- ``tf_keras`` "workers": with
    TF_CONFIG, "everywhere": wherever installed. Keras 3 and tf-keras train
    some scripts differently -- a GAN's ``trainable = False`` after compile
    stops the compiled model's own training under Keras 3 only). A notebook
    runs as the script its cells make, from the notebook's folder."""
    as_file = None
    if original.suffix == ".ipynb":
        original, as_file = notebook_as_script(original, base / "original-notebook"), original
    env = setup.env
    workers = tf_keras == "workers" and setup.np > 1 and setup.local_devices == 1
    if (workers or tf_keras == "everywhere") and _has_tf_keras(setup.python):
        env = dict(os.environ if env is None else env)
        env.setdefault("TF_USE_LEGACY_KERAS", "1")
        if setup.sink is not None:
            setup.sink("original run with tf-keras (TF_USE_LEGACY_KERAS=1), the Keras the converted workers run")
    return run_and_observe(original, 1, base / "original", setup.timeout, setup.args, single=True, as_file=as_file,
                           steps_cap=setup.steps or None, probe_dir=base / "probe-original",
                           log_path=base / "original.log", sink=setup.sink, horovodrun=setup.horovodrun,
                           label="original, 1 process", env=env, pythonpath=setup.pythonpath,
                           backend=setup.backend, python=setup.python, record_losses=setup.record_losses)


def _run_converted(setup: RunSetup, reference: Observation, base: Path, dist_script: Path, status: str, *,
                   policy: str | None = None, rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                   abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE,
                   rate_factor: float | None = None, full_batch: bool = False) -> VerifyReport:
    """Run the conversion (``status`` "given": the script itself) on N
    processes, check it against the original's run, and compare their losses.
    ``rate_factor``: the converted learning rate over the original's that
    the conversion's options give (None: not checked). ``full_batch``: the
    conversion divides each step's data, not the steps."""
    script, np = setup.script, setup.np
    converted = status == "given"
    as_file = script if dist_script != script else None
    what = "workers" if setup.backend == TF_DISTRIBUTE else "ranks"
    if setup.local_devices > 1:     # one process replicating over its devices (MirroredStrategy)
        what = f"process x {setup.local_devices} devices"
    label = f"{policy}, {np} {what}" if policy else f"converted, {np} {what}"
    distributed = run_and_observe(dist_script, np, base / "distributed", setup.timeout, setup.args,
                                  single=setup.local_devices > 1, local_devices=setup.local_devices,
                                  as_file=as_file, steps_cap=math.ceil(setup.steps / np) if setup.steps else None,
                                  probe_dir=base / "probe-distributed", log_path=base / "distributed.log",
                                  sink=setup.sink, horovodrun=setup.horovodrun, label=label, env=setup.env,
                                  pythonpath=setup.pythonpath, backend=setup.backend, python=setup.python,
                                  record_losses=setup.record_losses)
    results = run_checks(reference, distributed, np, setup.steps, backend=setup.backend,
                         local_devices=setup.local_devices, rate_factor=rate_factor, full_batch=full_batch)
    comparison = None
    if setup.record_losses:
        comparison = C.compare(C.curve_of(reference), C.curve_of(distributed, label, policy),
                               rel_tolerance, abs_tolerance)
        results.checks.extend(loss_checks(comparison))
    reasons, checks = as_text(results.checks)
    return VerifyReport(script=str(script), np=np, passed=not reasons, reasons=reasons, checks=checks,
                        warnings=results.warnings, reference=reference, distributed=distributed,
                        converted_path=None if converted else str(dist_script), conversion_status=status,
                        steps_cap=setup.steps, samples=results.samples or None, policy=policy, comparison=comparison,
                        check_results=results.checks)


def verify_script(script: str | os.PathLike, np: int = 2, args: Sequence[str] = (), *, converted: bool = False,
                  steps: int | None = None, timeout: float | None = DEFAULT_TIMEOUT, keep: bool = False,
                  workdir: str | os.PathLike | None = None, sink: Callable[[str], None] | None = None,
                  horovodrun: str | None = None, env: dict | None = None,
                  pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                  python: str | None = None, compare: bool = False, options: Options | None = None,
                  policy: str | None = None, original: str | os.PathLike | None = None,
                  rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                  abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE, local_devices: int = 1) -> VerifyReport:
    """Convert (unless ``converted``), run the original single-process and the
    converted script on ``np`` ranks, and check the result.

    ``local_devices`` > 1 (tf-distribute, ``np`` 1): the conversion runs as
    one process whose CPU is split into that many logical devices, so its
    MirroredStrategy() replicates over them as over as many GPUs.

    ``backend``: "horovod" (horovodrun) or "tf-distribute" (N TF_CONFIG
    workers; both runs use ``python``, default sys.executable, and the
    original runs without TF_CONFIG).  ``options``: the conversion's
    :class:`~tfdist.options.Options` (default: ``backend``'s defaults; its
    backend must be ``backend``), ``policy`` their name in the report.

    ``steps``: cap for a quick check (see ``tfdist verify --help``): the
    original stops Model.fit after ``steps`` optimizer steps, each rank after
    ceil(steps/np); the 1/N check then uses the steps fit had planned.
    ``compare``: also record the training loss of both runs and judge the
    converted run against the original (tfdist.runtime.compare).
    ``original``: with ``converted``, the single-process script to compare
    with (default: ``script`` itself as one process).
    Raises VerifyInputError (bad input) and launcher.RuntimeMissing."""
    script, hvdrun, python = check_inputs(script, np, backend, python, horovodrun)
    options = Options(backend=backend) if options is None else options
    if options.backend != backend:
        raise VerifyInputError(f"the conversion's options are for --backend {options.backend}, the run's for "
                               f"--backend {backend}")
    if local_devices > 1 and (backend != TF_DISTRIBUTE or np != 1):
        raise VerifyInputError("--local-devices N runs the tf-distribute conversion as one process over N devices: "
                               "use it with --backend tf-distribute and -np 1")
    reference_script = script
    if original is not None:
        if not converted:
            raise VerifyInputError("--original goes with --converted (the script given is the conversion)")
        reference_script = Path(original).resolve()
        if not reference_script.is_file():
            raise VerifyInputError(f"no such script: {reference_script}")
    setup = RunSetup(script, np, args, steps, timeout, sink, hvdrun, env, pythonpath, backend, python, compare,
                   local_devices)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="tfdist-verify-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        if converted:
            dist_script, status, full_batch, tf_keras = script, "given", False, None
            if script.suffix == ".ipynb":
                dist_script = notebook_as_script(script, base / "given")
        else:   # a conversion that fails is bad input: said before anything runs
            dist_script, status, full_batch, tf_keras = convert_to(script, base / "converted", options)
        reference = run_original(setup, reference_script, base, tf_keras)
        report = _run_converted(setup, reference, base, dist_script, status, policy=policy,
                                rel_tolerance=rel_tolerance, abs_tolerance=abs_tolerance,
                                rate_factor=None if converted else expected_rate_factor(options, np * local_devices),
                                full_batch=full_batch)
        report.workdir = str(base) if keep else None
        return report
    finally:
        if not keep and not workdir:
            shutil.rmtree(base, ignore_errors=True)


def sweep_script(script: str | os.PathLike, policies: Sequence[str] | None = None, np: int = 2,
                 args: Sequence[str] = (), *, steps: int | None = None, timeout: float | None = DEFAULT_TIMEOUT,
                 keep: bool = False, sink: Callable[[str], None] | None = None, horovodrun: str | None = None,
                 env: dict | None = None, pythonpath: Sequence[str | os.PathLike] = (), backend: str = HOROVOD,
                 python: str | None = None, rel_tolerance: float = C.DEFAULT_REL_TOLERANCE,
                 abs_tolerance: float = C.DEFAULT_ABS_TOLERANCE, steps_per_epoch: int | None = None) -> SweepReport:
    """``verify --compare`` under each learning-rate policy (``linear``,
    ``sqrt``, ``none``, ``linear:warmup=1``...), with one run of the original;
    warmups counted in ``steps_per_epoch`` original steps when given."""
    script, hvdrun, python = check_inputs(script, np, backend, python, horovodrun)
    optional = set()
    if policies is None:
        policies = list(DEFAULT_SWEEP)
        if converter_accepts(policy_options(DEFAULT_SWEEP_WARMUP, steps_per_epoch, backend)):
            policies.append(DEFAULT_SWEEP_WARMUP)
            optional.add(DEFAULT_SWEEP_WARMUP)   # not every pattern has a warmup: skipped where refused
    chosen = [(p, policy_options(p, steps_per_epoch, backend)) for p in policies]
    setup = RunSetup(script, np, args, steps, timeout, sink, hvdrun, env, pythonpath, backend, python, True)
    base = Path(tempfile.mkdtemp(prefix="tfdist-sweep-"))
    try:
        # every conversion first: bad input is said before anything runs
        conversions, skipped = [], []
        for i, (policy, options) in enumerate(list(chosen)):
            try:
                conversions.append(convert_to(script, base / f"policy-{i}" / "converted", options))
            except VerifyInputError as exc:
                if policy not in optional:
                    raise
                skipped.append((policy, str(exc)))
                chosen.remove((policy, options))
        kinds = {c[3] for c in conversions}  # the policies convert alike: one Keras for the reference
        reference = run_original(setup, script, base, "everywhere" if "everywhere" in kinds else (
            "workers" if "workers" in kinds else None))
        reports = []
        for i, ((policy, options), (dist_script, status, full_batch, _)) in enumerate(zip(chosen, conversions)):
            reports.append(_run_converted(setup, reference, base / f"policy-{i}", dist_script, status, policy=policy,
                                          rel_tolerance=rel_tolerance, abs_tolerance=abs_tolerance,
                                          rate_factor=expected_rate_factor(options, np), full_batch=full_batch))
        best = C.best_of([r.comparison for r in reports if r.comparison is not None])
        return SweepReport(str(script), np, reports, best.converted.policy if best else None,
                           str(base) if keep else None, skipped)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
