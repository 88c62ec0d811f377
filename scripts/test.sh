#!/usr/bin/env bash
# The README's test command: installs everything it needs (TensorFlow 2.15.1,
# Horovod 0.28.1 with Gloo, test dependencies, tfdist itself) through
# scripts/setup_runtime.sh, then runs the fast tests (pure conversion) and
# the slow ones (real multi-process runs under horovodrun).  For the slow
# tier it also builds the tf-distribute stack (TensorFlow 2.21, Keras 3,
# tf-keras: `scripts/setup_runtime.sh tf-distribute`) and exports its path as
# TFDIST_TF_DISTRIBUTE_VENV: pytest keeps running on the Horovod stack and
# the tf-distribute tests start that environment's tfdist as subprocesses.
#   bash scripts/test.sh            fast, then slow (the README's test command)
#   bash scripts/test.sh fast       conversion tests only
#   bash scripts/test.sh slow       multi-process tests only
#   bash scripts/test.sh extended   the multi-process tests kept out of the budget
#                                   (marked extended: see the README's "Tests")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=$(bash scripts/setup_runtime.sh | tail -n 1)
export PATH="$venv/bin:$PATH"
tier=${1:-all}
if [ "$tier" = slow ] || [ "$tier" = all ] || [ "$tier" = extended ]; then
  TFDIST_TF_DISTRIBUTE_VENV=$(bash scripts/setup_runtime.sh tf-distribute | tail -n 1)
  export TFDIST_TF_DISTRIBUTE_VENV
  # Slurm and munge for the one-node clusters tests/slow/test_slurm_jobs.py
  # starts (and stops) itself; without root or apt-get those tests are skipped
  # with the reason (and fail under .ci/run, which sets TFDIST_REQUIRE_STACKS=1:
  # there every test whose stack is missing fails; see tests/slow/conftest.py).
  bash scripts/setup_slurm.sh
fi
# Each tier is its own pytest run, timed: the README's budget (35 minutes on
# 2 cores with a warm cache) is checked against these figures. Two pytest
# workers (pytest-xdist) keep both cores busy: a runtime test spends much of
# its time starting interpreters and waiting on its workers' rendezvous.
run_tier() {
  local name=$1; shift
  local start=$SECONDS status=0
  "$venv/bin/python" -m pytest "$@" -q -p no:cacheprovider -n 2 || status=$?
  times+=("$name: $((SECONDS - start)) s (exit $status)")
  [ "$status" -eq 0 ] || failed=1
}
times=()
failed=0
case "$tier" in
  fast) run_tier fast tests/fast ;;
  slow) run_tier slow tests/slow -m "not extended" --durations=0 ;;
  all)  run_tier fast tests/fast; run_tier slow tests/slow -m "not extended" --durations=0 ;;
  extended) run_tier extended tests/slow -m extended --durations=0 ;;
  *) echo "usage: bash scripts/test.sh [fast|slow|all|extended]" >&2; exit 2 ;;
esac
echo "tfdist test tiers: ${times[*]}"
exit "$failed"
