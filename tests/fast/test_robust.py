"""Awkward inputs: encodings, line endings, tabs, BOM, huge and deep files, unreadable files,
worker crashes, and an --in-place run killed half-way."""
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfdist.api import convert_source
from tfdist.cli import main
from tfdist.project import worker

SRC = str(Path(__file__).resolve().parents[2] / "src")
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "tree_benchmark.py"

TRAIN = (b'import tensorflow as tf\n'
         b'\n'
         b'def build():\n'
         b'    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n'
         b'    return model\n'
         b'\n'
         b'model = build()\n'
         b'model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")\n'
         b'model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)\n')


def run(capsysbinary, *args):
    code = main(["convert", *map(str, args)])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def convert_cli(tmp_path, capsysbinary, data: bytes, name="t.py"):
    p = tmp_path / name
    p.write_bytes(data)
    code, out, err = run(capsysbinary, p, "-o", tmp_path / ("out_" + name))
    assert code == 0, err
    return (tmp_path / ("out_" + name)).read_bytes()


def test_latin1_cookie_keeps_the_encoding(tmp_path, capsysbinary):
    data = b"# -*- coding: latin-1 -*-\n" + TRAIN.replace(b"model = build()\n", b'NAME = "caf\xe9 cr\xe8me"\nmodel = build()\n')
    out = convert_cli(tmp_path, capsysbinary, data)
    assert out.startswith(b"# -*- coding: latin-1 -*-\n")
    assert b'NAME = "caf\xe9 cr\xe8me"\n' in out and b"\xc3" not in out
    assert b"hvd.init()" in out
    compile(out, "out", "exec")  # Python reads it back through the cookie
    assert out == convert_source(data, "t.py").data


def test_crlf_everywhere(tmp_path, capsysbinary):
    data = TRAIN.replace(b"\n", b"\r\n")
    out = convert_cli(tmp_path, capsysbinary, data)
    assert out.count(b"\n") > data.count(b"\n") + 5  # setup code inserted
    assert re.search(rb"(?<!\r)\n", out) is None  # every line, inserted ones too, ends in CRLF
    assert out.replace(b"\r\n", b"\n") == convert_source(TRAIN, "t.py").data


def test_tabs_for_indentation(tmp_path, capsysbinary):
    data = TRAIN.replace(b"    ", b"\t")
    out = convert_cli(tmp_path, capsysbinary, data)
    assert b"for gpu in gpus:\n\ttf.config.experimental.set_memory_growth(gpu, True)\n" in out
    assert re.search(rb"^ +\S", out, re.M) is None  # no space-indented line anywhere
    assert out.replace(b"\t", b"    ") == convert_source(TRAIN, "t.py").data


def test_utf8_bom_is_kept(tmp_path, capsysbinary):
    data = b"\xef\xbb\xbf" + TRAIN.replace(b"model = build()\n", "TITLE = 'ü'\nmodel = build()\n".encode())
    out = convert_cli(tmp_path, capsysbinary, data)
    assert out.startswith(b"\xef\xbb\xbfimport tensorflow as tf\n") and out.count(b"\xef\xbb\xbf") == 1
    assert "TITLE = 'ü'\n".encode() in out


def test_very_long_line(tmp_path, capsysbinary):
    line = b"WEIGHTS = [" + b", ".join(b"%d.5" % i for i in range(3000)) + b"]; NOTE = '" + b"n" * 1_000_000 + b"'\n"
    assert len(line) > 1_000_000
    out = convert_cli(tmp_path, capsysbinary, TRAIN + line)
    assert out.endswith(line) and b"hvd.DistributedOptimizer" in out


def test_five_megabyte_files(tmp_path, capsysbinary):
    """A 5 MB training script (a generated data literal) converts; a 5 MB module without
    TensorFlow in a tree is copied without being parsed."""
    blob = b'DATA = "' + b"x" * (5 << 20) + b'"\n'
    t = time.monotonic()
    out = convert_cli(tmp_path, capsysbinary, TRAIN + blob, "big.py")
    assert out.endswith(blob) and b"hvd.init()" in out
    root = tmp_path / "tree"
    root.mkdir()
    gen = b"".join(b"def f%d(x):\n    return x + %d\n\n" % (i, i) for i in range(190_000))
    assert len(gen) > 5 << 20
    (root / "generated.py").write_bytes(gen)
    (root / "train.py").write_bytes(TRAIN)
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "generated.py").read_bytes() == gen
    assert time.monotonic() - t < 120


DEEP_PARENS = b"import tensorflow as tf\nx = " + b"(" * 3000 + b"1" + b")" * 3000 + b"\n"
DEEP_UNARY = b"import tensorflow as tf\nx = " + b"-" * 1500 + b"1\n"  # valid Python, beyond LibCST's recursion


def test_deep_nesting_in_a_tree_is_a_per_file_error(tmp_path, capsysbinary):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a_deep.py").write_bytes(DEEP_PARENS)
    (root / "b_unary.py").write_bytes(DEEP_UNARY)
    (root / "c_train.py").write_bytes(TRAIN)
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out", "-j", "2")
    assert code == 3
    assert f"{root}/a_deep.py:2: ERROR error: too deeply nested to parse: too many nested parentheses" in err
    assert re.search(re.escape(f"{root}/b_unary.py") + r"(:\d+)?: ERROR error: too deeply nested", err), err
    assert (tmp_path / "out" / "c_train.py").read_bytes() == convert_source(TRAIN, "c_train.py").data


def test_deep_nesting_api_never_raises():
    r = convert_source(DEEP_UNARY, "u.py")
    assert r.status == "error" and "too deeply nested" in r.error


def test_unreadable_file_real(tmp_path, capsysbinary):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading (simulated in the next test)")
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_bytes(TRAIN)
    (root / "b.py").write_bytes(TRAIN)
    os.chmod(root / "a.py", 0)
    try:
        code, _, err = run(capsysbinary, root, "-o", tmp_path / "out")
    finally:
        os.chmod(root / "a.py", 0o644)
    assert code == 3 and f"{root}/a.py: ERROR error: cannot read: Permission denied" in err
    assert (tmp_path / "out" / "b.py").read_bytes() == convert_source(TRAIN, "b.py").data


def test_unreadable_file_simulated(tmp_path, capsysbinary, monkeypatch):
    """EACCES on open, as a non-root user gets it for a chmod 000 file."""
    import builtins

    from tfdist.project import runner

    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.py").write_bytes(TRAIN)
    (root / "b.py").write_bytes(TRAIN)
    real_open = builtins.open

    def fake_open(path, *a, **k):
        if os.fspath(path).endswith("a.py"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(worker, "open", fake_open, raising=False)
    monkeypatch.setattr(runner, "open", fake_open, raising=False)
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out", "-j", "1")
    assert code == 3
    assert f"{root}/a.py: ERROR error: cannot read: Permission denied" in err
    assert (tmp_path / "out" / "b.py").read_bytes() == convert_source(TRAIN, "b.py").data
    assert not (tmp_path / "out" / "a.py").exists()


def test_a_crashing_worker_fails_only_its_file(tmp_path, capsysbinary, monkeypatch):
    """A native crash (SIGSEGV) in a worker: that file is an error, the others are converted."""
    real = worker.convert_path

    def crashy(path, *a, **k):
        if path.endswith("crash.py"):
            import faulthandler

            faulthandler.disable()  # pytest's handler would print the dying worker's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, *a, **k)

    monkeypatch.setattr(worker, "convert_path", crashy)  # workers are forked: they inherit it
    root = tmp_path / "tree"
    root.mkdir()
    for name in ["a.py", "b.py", "crash.py", "d.py", "e.py", "f.py"]:
        (root / name).write_bytes(TRAIN)
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out", "-j", "2")
    assert code == 3
    assert f"{root}/crash.py: ERROR error: the parser crashed on this file (too deeply nested?); nothing written" in err
    want = convert_source(TRAIN, "x.py").data
    for name in ["a.py", "b.py", "d.py", "e.py", "f.py"]:
        assert (tmp_path / "out" / name).read_bytes() == want
    assert not (tmp_path / "out" / "crash.py").exists()


def _bench():
    spec = importlib.util.spec_from_file_location("tree_benchmark", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_killed_in_place_run_leaves_each_file_original_or_converted(tmp_path, capsysbinary):
    root = tmp_path / "tree"
    root.mkdir()
    _bench().make_tree(str(root), n_train=16, seed=1)
    originals = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    code, _, _ = run(capsysbinary, root, "-o", tmp_path / "conv", "-q")
    assert code == 0
    converted = {p: (tmp_path / "conv" / p.relative_to(root)).read_bytes() for p in originals}
    changing = [p for p in originals if converted[p] != originals[p]]
    assert len(changing) == 16
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "tfdist", "convert", str(root), "--in-place", "-q", "-j", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill once some (not all) files are replaced
        # (the backup is written before the replacement, so count replaced contents, not backups)
        done = sum(1 for p in changing if p.read_bytes() != originals[p])
        if done >= 3 or proc.poll() is not None:
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its workers, mid-write or not
    proc.wait()
    n_conv = n_orig = 0
    for p, data in originals.items():
        now = p.read_bytes()
        assert now in (data, converted[p]), p
        if now != data:
            n_conv += 1
            assert Path(str(p) + ".orig").read_bytes() == data
        elif p in changing:
            n_orig += 1
    assert n_conv >= 3 and n_orig >= 1, (n_conv, n_orig)
    leftovers = [p.name for p in root.rglob(".tfdist-*.tmp")]
    assert all(re.fullmatch(r"\.tfdist-\w+\.tmp", n) for n in leftovers)
    # A second run finishes the job; stale temporary files are not taken for sources.
    code = subprocess.run([sys.executable, "-m", "tfdist", "convert", str(root), "--in-place", "--no-backup", "-q"],
                          env=env, capture_output=True, timeout=300).returncode
    assert code == 0
    for p in originals:
        assert p.read_bytes() == converted[p], p
