#!/usr/bin/env bash
# Creates (or reuses) one of tfdist's two runtime stacks and prints its path
# on the last line of stdout.
#
#   bash scripts/setup_runtime.sh                 the Horovod stack (default)
#   bash scripts/setup_runtime.sh horovod         the same
#   bash scripts/setup_runtime.sh tf-distribute   the tf.distribute stack
#
# Horovod stack (runs tfdist's full test suite): TensorFlow 2.15.1 (CPU),
# Horovod 0.28.1 built from source with Gloo, the test dependencies, and
# tfdist itself (editable, pointing at this checkout).
#
# Horovod 0.28 does not support Keras 3 / TF >= 2.16, so the versions are
# pinned. The environment lives outside the checkout so a fresh clone reuses
# it; it is trusted only when its stamp file exists and Horovod imports.
#
#   TFDIST_VENV   where the environment lives
#                 (default: ~/.cache/tfdist/venv-tf2.15.1-hvd0.28.1-py3.11)
#   PYTHON        interpreter to build it from (default: python3.11 or python3)
#
# tf.distribute stack (the tf-distribute engine; the slow tests start it as
# subprocesses): tensorflow-cpu 2.21.0 with Keras 3, tf-keras 2.21.0 (for
# multi-worker Model.fit, TF_USE_LEGACY_KERAS=1), TensorBoard, NumPy 2 -
# requirements/runtime-tf-distribute.txt - plus requirements/test-tf-distribute.txt
# and tfdist itself (editable, --no-deps).  Nothing is compiled: a few minutes
# the first time, seconds when reused.  Trusted only when its stamp file
# exists and TensorFlow 2.21, tf-keras and MultiWorkerMirroredStrategy import.
#
#   TFDIST_TF_DISTRIBUTE_VENV   where it lives
#                 (default: ~/.cache/tfdist/venv-tf2.21.0-py<X.Y of PYTHON>)
#   PYTHON        interpreter to build it from (default: python3.11 or python3;
#                 TensorFlow 2.21 supports Python 3.10-3.13)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stack=${1:-horovod}
case "$stack" in
  horovod|tf-distribute) ;;
  *) echo "usage: bash scripts/setup_runtime.sh [horovod|tf-distribute]" >&2; exit 2 ;;
esac

if [ "$stack" = tf-distribute ]; then
  python=${PYTHON:-$(command -v python3.11 || command -v python3)}
  log() { echo "[setup_runtime tf-distribute] $*" >&2; }
  ver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=${TFDIST_TF_DISTRIBUTE_VENV:-$HOME/.cache/tfdist/venv-tf2.21.0-py$ver}
  stamp="$venv/.tfdist-runtime-ok"
  healthy() {
    [ -f "$stamp" ] && "$venv/bin/python" - <<'PY' >/dev/null 2>&1
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf, tf_keras, keras, tensorboard
assert tf.__version__.startswith("2.21."), tf.__version__
assert tf_keras.__version__.startswith("2.21."), tf_keras.__version__
assert keras.__version__.startswith("3."), keras.__version__
assert tf.distribute.MultiWorkerMirroredStrategy
PY
  }
  if healthy; then
    log "reusing $venv"
  else
    case "$ver" in
      3.10|3.11|3.12|3.13) ;;
      *) log "TensorFlow 2.21 needs Python 3.10-3.13; $python is $ver (set PYTHON=)"; exit 3 ;;
    esac
    log "creating $venv with $python ($ver)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
    pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q)
    "${pip[@]}" --upgrade pip setuptools wheel
    log "installing tensorflow-cpu 2.21.0, tf-keras 2.21.0, tensorboard"
    reqs="$here/requirements/runtime-tf-distribute.txt"
    # Lines marked "# --no-deps" (tf-keras: its dependency on the 'tensorflow'
    # package would be installed over tensorflow-cpu) go in a second pass.
    "${pip[@]}" -r <(grep -v -E '^[^#].*# --no-deps' "$reqs")
    "${pip[@]}" --no-deps -r <(grep -E '^[^#].*# --no-deps' "$reqs" | sed 's/#.*//')
    touch "$stamp"
    if ! healthy; then
      rm -f "$stamp"
      log "the new environment does not import TensorFlow 2.21 / tf-keras / TensorBoard"
      exit 3
    fi
  fi
  "$venv/bin/python" -m pip install --disable-pip-version-check -q \
    -r "$here/requirements/test-tf-distribute.txt"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps -e "$here"
  echo "$venv"
  exit 0
fi

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
