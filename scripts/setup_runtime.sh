#!/usr/bin/env bash
# Creates (or reuses) the environment that runs tfdist's full test suite:
# TensorFlow 2.15.1 (CPU), Horovod 0.28.1 built from source with Gloo, the
# test dependencies, and tfdist itself (editable, pointing at this checkout).
#
# Horovod 0.28 does not support Keras 3 / TF >= 2.16, so the versions are
# pinned. The environment lives outside the checkout so a fresh clone reuses
# it; it is trusted only when its stamp file exists and Horovod imports.
#
#   TFDIST_VENV   where the environment lives
#                 (default: ~/.cache/tfdist/venv-tf2.15.1-hvd0.28.1-py3.11)
#   PYTHON        interpreter to build it from (default: python3.11 or python3)
#
# Prints the environment's path on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${TFDIST_VENV:-$HOME/.cache/tfdist/venv-tf2.15.1-hvd0.28.1-py3.11}
stamp="$venv/.tfdist-runtime-ok"
python=${PYTHON:-$(command -v python3.11 || command -v python3)}

log() { echo "[setup_runtime] $*" >&2; }

healthy() {
  [ -f "$stamp" ] && "$venv/bin/python" - <<'PY' >/dev/null 2>&1
import horovod.tensorflow.keras, tensorflow as tf
assert tf.__version__.startswith("2.15.")
PY
}

if healthy; then
  log "reusing $venv"
else
  ver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  case "$ver" in
    3.9|3.10|3.11) ;;
    *) log "TensorFlow 2.15 needs Python 3.9-3.11; $python is $ver (set PYTHON=)"; exit 3 ;;
  esac
  command -v cmake >/dev/null || { log "cmake is needed to build Horovod (apt-get install cmake)"; exit 3; }
  command -v g++ >/dev/null || { log "g++ is needed to build Horovod (apt-get install g++)"; exit 3; }
  log "creating $venv with $python ($ver)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q)
  "${pip[@]}" --upgrade pip 'setuptools<70' wheel packaging
  log "installing tensorflow-cpu 2.15.1"
  "${pip[@]}" -r "$here/requirements/runtime.txt"
  log "building horovod 0.28.1 with Gloo for TensorFlow (several minutes)"
  # Horovod's own dependencies, listed so it can be installed with
  # --no-deps: its [tensorflow] extra would pull the 'tensorflow' package
  # (a newer one) on top of tensorflow-cpu and break it.
  "${pip[@]}" cloudpickle psutil pyyaml packaging cffi
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
  HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
  HOROVOD_BUILD_PARALLEL=${HOROVOD_BUILD_PARALLEL:-2} \
    "${pip[@]}" --no-build-isolation --no-deps --no-cache-dir 'horovod==0.28.1'
  "$venv/bin/python" - <<'PY'
import horovod.tensorflow.keras as hvd
from horovod.common.util import gloo_built
assert gloo_built(), "Horovod was built without Gloo"
print("horovod ok")
PY
  touch "$stamp"
fi

# Test dependencies and tfdist itself are cheap; refresh them every time so
# the editable install points at this checkout.
"$venv/bin/python" -m pip install --disable-pip-version-check -q \
  -r "$here/requirements/test.txt"
"$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps -e "$here"
echo "$venv"
