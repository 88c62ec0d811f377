"""``tfdist convert DIR``: mirror (-o), --in-place, --diff, --check, reports, skips, symlinks, exit codes."""
import difflib
import hashlib
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tfdist.api import convert_source
from tfdist.cli import main
from tfdist.project import project_context_for_file

DATA = Path(__file__).parent / "data_project" / "crossmod"
SRC = str(Path(__file__).resolve().parents[2] / "src")
CONVERTED = ["pkg/sub/train_rel.py", "scripts/run.py", "train.py", "train_alias.py"]
SKIPPED = [".hidden/skipped.py", "venv/skipped.py", "env2/skipped.py", "node_modules/skipped.py",
           "__pycache__/x.py", "lib/site-packages/skipped.py"]


def make_tree(tmp_path, bad=True) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(DATA, root)
    for rel in SKIPPED:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("import tensorflow as tf\nprint 'never looked at'\n")
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    if not bad:
        (root / "py2_tf.py").unlink()
    return root


def files(root: Path):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def digest(root: Path):
    return {k: hashlib.sha256(v).hexdigest() for k, v in files(root).items()}


def expected(root: Path, rel: str) -> bytes:
    path = root / rel
    # what the command line's default, --backend auto, makes of the file here
    r = convert_source(path.read_bytes(), str(path), backend="auto", project=project_context_for_file(str(path)))
    assert r.status == "converted", (rel, r.error)
    return r.data


def run(capsysbinary, *args):
    code = main(["convert", *map(str, args)])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_mirror(tmp_path, capsysbinary, jobs):
    root = make_tree(tmp_path)
    before = files(root)
    out = tmp_path / "out"
    code, stdout, err = run(capsysbinary, root, "-o", out, "-j", jobs, "--report", tmp_path / "r.json")
    assert code == 3  # py2_tf.py is bad input; the rest is done all the same
    assert stdout == b""
    assert files(root) == before
    got = files(out)
    kept = {k: v for k, v in before.items() if not any(k.startswith(s.split("/")[0] + "/") for s in SKIPPED)}
    assert sorted(got) == sorted(kept)  # every file mirrored, skipped folders not
    for rel, data in kept.items():
        if rel in CONVERTED:
            assert got[rel] == expected(root, rel), rel
        else:
            assert got[rel] == data, rel  # byte-identical copies, refused files included
    report = json.loads((tmp_path / "r.json").read_text())
    statuses = {Path(f["path"]).relative_to(root).as_posix(): f["status"] for f in report["files"]}
    assert statuses == {
        "broken_plain.py": "unchanged", "nets.py": "unchanged", "py2_plain.py": "unchanged", "py2_tf.py": "error",
        "train.py": "converted", "train_alias.py": "converted", "models/__init__.py": "unchanged",
        "models/heads.py": "unchanged", "pkg/__init__.py": "unchanged", "pkg/base.py": "unchanged",
        "pkg/sub/__init__.py": "unchanged", "pkg/sub/train_rel.py": "converted", "scripts/nets2.py": "unchanged",
        "scripts/run.py": "converted"}
    s = report["summary"]
    assert (s["files"], s["converted"], s["unchanged"], s["already_distributed"], s["needs_attention"], s["copied"],
            s["exit_code"], s["mode"]) == (14, 4, 9, 0, 1, 8, 3, "output")
    assert s["attention"] == [{"status": "error", "reason": "syntax error", "paths": [str(root / "py2_tf.py")]}]
    last = err.splitlines()
    assert f"{root}/py2_tf.py:2: ERROR error: syntax error" in err
    assert last[-2].startswith("tfdist: 14 files: converted 4, unchanged 9, already distributed 0, needs attention 1;")
    assert last[-1] == f"  error (1): syntax error: {root}/py2_tf.py"


def test_jobs_do_not_change_outputs(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    assert run(capsysbinary, root, "-o", tmp_path / "a", "-j", "1")[0] == 0
    assert run(capsysbinary, root, "-o", tmp_path / "b", "-j", "2")[0] == 0
    assert files(tmp_path / "a") == files(tmp_path / "b")


def test_check(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    before = digest(tmp_path)
    code, out, err = run(capsysbinary, "--check", root)
    assert (code, out) == (1, b"")
    assert digest(tmp_path) == before
    assert [ln for ln in err.splitlines() if "would convert:" in ln] == \
        [f"  would convert: {root}/{rel}" for rel in ["train.py", "train_alias.py", "pkg/sub/train_rel.py", "scripts/run.py"]]
    # The converted tree passes the check.
    run(capsysbinary, root, "-o", tmp_path / "out")
    code, _, err = run(capsysbinary, "--check", tmp_path / "out")
    assert code == 0, err
    assert "tfdist: 13 files: would convert 0, unchanged 9, already distributed 4, needs attention 0" in err


def test_diff(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    before = digest(tmp_path)
    code, out, _ = run(capsysbinary, "--diff", root)
    assert code == 1
    want = ""
    for rel in ["train.py", "train_alias.py", "pkg/sub/train_rel.py", "scripts/run.py"]:
        p = str(root / rel)
        want += "".join(difflib.unified_diff((root / rel).read_text().splitlines(True),
                                             expected(root, rel).decode().splitlines(True), "a/" + p.lstrip("/"), "b/" + p.lstrip("/")))
    assert out.decode() == want
    assert digest(tmp_path) == before


def test_in_place(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    before = files(root)
    want = {rel: expected(root, rel) for rel in CONVERTED}
    code, out, _ = run(capsysbinary, "--in-place", root)
    assert (code, out) == (0, b"")
    after = files(root)
    for rel, data in before.items():
        assert after[rel] == want.get(rel, data), rel
    assert sorted(k for k in after if k not in before) == sorted(rel + ".orig" for rel in CONVERTED)
    for rel in CONVERTED:
        assert after[rel + ".orig"] == before[rel]
    # Running again changes nothing and writes no second backup.
    assert run(capsysbinary, "--in-place", root)[0] == 0
    assert files(root) == after


def test_unsupported_file_gives_2_and_the_rest_is_converted(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    (root / "est.py").write_text("import tensorflow as tf\n\nest = tf.estimator.Estimator(model_fn=None)\nest.train(input_fn=None)\n")
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out")
    assert code == 2
    assert (tmp_path / "out" / "train.py").read_bytes() == expected(root, "train.py")
    assert (tmp_path / "out" / "est.py").read_bytes() == (root / "est.py").read_bytes()
    assert "needs attention 1" in err and "  unsupported (1): tf.estimator training is not supported" in err


def test_several_paths(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.py").write_text("print('no tf')\n")
    code, _, _ = run(capsysbinary, root / "scripts", other, root / "train.py", "-o", tmp_path / "out")
    assert code == 0
    assert files(tmp_path / "out") == {
        "scripts/nets2.py": (root / "scripts/nets2.py").read_bytes(),
        "scripts/run.py": expected(root, "scripts/run.py"),
        "other/x.py": b"print('no tf')\n",
        "train.py": expected(root, "train.py"),
    }


def test_output_inside_the_tree_is_skipped(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    assert run(capsysbinary, root, "-o", root / "converted")[0] == 0
    assert run(capsysbinary, root, "-o", root / "converted")[0] == 0  # a second run never descends into it
    assert not (root / "converted" / "converted").exists()
    assert (root / "converted" / "train.py").read_bytes() == expected(root, "train.py")


def test_symlinks(tmp_path, capsysbinary):
    root = make_tree(tmp_path, bad=False)
    os.symlink(root / "train.py", root / "link_train.py")
    os.symlink(root, root / "loop")  # a link to a folder: never entered
    os.symlink(root / "missing.py", root / "dangling.py")
    code, _, err = run(capsysbinary, root, "-o", tmp_path / "out")
    assert code == 3
    out = tmp_path / "out"
    assert not (out / "link_train.py").is_symlink()
    assert (out / "link_train.py").read_bytes() == expected(root, "train.py")
    assert not (out / "loop").exists() and not (out / "dangling.py").exists()
    assert f"{root}/dangling.py: ERROR error: broken symbolic link (its target does not exist)" in err
    # In place: a link is never replaced; its target is converted when it is in the tree.
    outside = tmp_path / "outside.py"
    outside.write_bytes((root / "train.py").read_bytes())
    os.symlink(outside, root / "link_outside.py")
    code, _, err = run(capsysbinary, "--in-place", "--no-backup", root)
    assert code == 3
    assert (root / "link_train.py").is_symlink() and (root / "link_outside.py").is_symlink()
    assert (root / "train.py").read_bytes() == expected_from(tmp_path, "train.py")
    assert f"{root}/link_train.py: unchanged: a symbolic link to {root}/train.py, which is converted itself" in err
    assert (f"{root}/link_outside.py: ERROR error: a symbolic link to a file outside the tree: not replaced in place"
            in err)
    assert outside.read_bytes() == DATA.joinpath("train.py").read_bytes()


def expected_from(tmp_path, rel):
    return (tmp_path / "out" / rel).read_bytes()


def test_progress_only_on_a_terminal(tmp_path):
    root = make_tree(tmp_path, bad=False)
    env = dict(os.environ, PYTHONPATH=SRC)
    cmd = [sys.executable, "-m", "tfdist", "convert", str(root), "--check"]
    plain = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    assert plain.returncode == 1
    assert b"\r" not in plain.stderr and b"\x1b[" not in plain.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=120)
    os.close(master)
    tty = b"".join(chunks)
    assert p.returncode == 1
    assert b"\r\x1b[K[1/13] " in tty and b"\r\x1b[K[13/13] " in tty
