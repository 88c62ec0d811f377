"""Bad input on the command line: exit 3, ``path[:line]: message``, nothing written, no traceback.

Every case runs ``python -m tfdist`` in a subprocess, the way a user does.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def tfdist(*args, cwd, stdin=None):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tfdist", *args], cwd=cwd, input=stdin, capture_output=True,
                          env=env, timeout=120)


CASES = {
    # name: (file bytes or None for missing, expected first stderr line)
    "missing": (None, "nope.py: ERROR error: no such file"),
    "empty": (b"", "nope.py: ERROR error: empty file: nothing to convert"),
    "blank": (b"\n\n   \n", "nope.py: ERROR error: empty file: nothing to convert"),
    "undecodable": (b"import tensorflow as tf\nx = '\xff\xfe'\n",
                    "nope.py:2: ERROR error: cannot decode: (unicode error) 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    "binary": (b"import tensorflow\x00\x01", "nope.py: ERROR error: binary file (contains NUL bytes)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", ["stdout", "output", "in-place"])
def test_bad_file_exit_3_nothing_written(tmp_path, case, mode):
    data, first = CASES[case]
    if data is not None:
        (tmp_path / "nope.py").write_bytes(data)
    args = {"stdout": [], "output": ["-o", "out.py"], "in-place": ["--in-place"]}[mode]
    r = tfdist("convert", "nope.py", *args, cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 3, err
    assert err.splitlines()[0] == first
    assert "Traceback" not in err
    assert r.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if data is None else ["nope.py"])
    if data is not None:
        assert (tmp_path / "nope.py").read_bytes() == data


SYNTAX = {
    "py2_print": (b"import tensorflow as tf\nprint \"x\"\n", 2, "(this looks like Python 2 code; tfdist reads Python 3)"),
    "py2_exec": (b"import tensorflow as tf\n\nexec \"x = 1\"\n", 3, "(this looks like Python 2 code"),
    "unclosed": (b"import tensorflow as tf\nx = (1,\n", None, "syntax error"),
    "bad_def": (b"import tensorflow as tf\n\ndef f(:\n    pass\n", None, "syntax error"),
}


@pytest.mark.parametrize("case", sorted(SYNTAX))
def test_syntax_error_exit_3_with_line(tmp_path, case):
    data, line, needle = SYNTAX[case]
    (tmp_path / "bad.py").write_bytes(data)
    r = tfdist("convert", "bad.py", "-o", "out.py", cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 3, err
    first = err.splitlines()[0]
    prefix = f"bad.py:{line}: ERROR error: syntax error" if line else "bad.py:"
    assert first.startswith(prefix), first
    assert "syntax error" in first and needle in first
    assert "Traceback" not in err
    assert not (tmp_path / "out.py").exists()
    assert (tmp_path / "bad.py").read_bytes() == data


def test_directory_without_mode_is_exit_3(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_bytes(b"import tensorflow as tf\n")
    r = tfdist("convert", "proj", cwd=tmp_path)
    assert r.returncode == 3
    assert r.stderr.decode() == ("tfdist: a directory: say what to do with the converted files: -o OUTDIR "
                                 "(a converted copy), --in-place, --diff or --check\n")
    assert r.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]


@pytest.mark.parametrize("args,message", [
    (["a.py", "-o", "x.py", "--diff"], "tfdist: choose one of -o, --in-place, --diff, --check (got diff, output)\n"),
    (["-", "--in-place"], "tfdist: --in-place needs files, not stdin\n"),
    (["-", "a.py", "--check"], "tfdist: '-' (stdin) cannot be combined with other paths\n"),
    (["missing_dir", "a.py", "--check"], "tfdist: missing_dir: no such file or directory\n"),
    (["a.py", "-o", "a.py"], "tfdist: -o a.py is the input file itself; use --in-place\n"),
])
def test_usage_errors_exit_3(tmp_path, args, message):
    (tmp_path / "a.py").write_bytes(b"import tensorflow as tf\n")
    r = tfdist("convert", *args, cwd=tmp_path, stdin=b"")
    assert r.returncode == 3
    assert r.stderr.decode() == message
    assert (tmp_path / "a.py").read_bytes() == b"import tensorflow as tf\n"


def test_stdin_syntax_error(tmp_path):
    r = tfdist("convert", "-", cwd=tmp_path, stdin=b"import tensorflow as tf\nprint 'x'\n")
    assert r.returncode == 3
    assert r.stderr.decode().startswith("<stdin>:2: ERROR error: syntax error")
    assert r.stdout == b""


def test_deep_nesting_is_a_clear_error_not_a_crash(tmp_path):
    # LibCST's native parser overflows the C stack on this (a segfault); tfdist must refuse first.
    data = b"import tensorflow as tf\nx = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n"
    (tmp_path / "deep.py").write_bytes(data)
    r = tfdist("convert", "deep.py", "-o", "out.py", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    assert r.stderr.decode().splitlines()[0] == \
        "deep.py:2: ERROR error: too deeply nested to parse: too many nested parentheses"
    assert not (tmp_path / "out.py").exists()
