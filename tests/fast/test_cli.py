"""``tfdist convert`` on one file: stdout, -o, stdin, --diff, --check, --in-place, --report."""
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfdist.api import convert_file, convert_source
from tfdist.cli import main
from tfdist.options import Options

KERAS = b'''import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)
'''
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "train.py"
    p.write_bytes(KERAS)
    return p


def run(capsysbinary, *args):
    code = main(["convert", *map(str, args)])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def expected():
    """What the command line's default (--backend auto) makes of KERAS here."""
    r = convert_source(KERAS, "train.py", backend="auto")
    assert r.status == "converted"
    return r


def test_stdout_is_the_converted_file(script, capsysbinary):
    code, out, err = run(capsysbinary, script)
    assert code == 0
    assert out == convert_file(script, backend="auto").data == expected().data
    assert err.splitlines()[-1].startswith("tfdist: 1 file: converted 1, unchanged 0, already distributed 0, needs attention 0;")
    assert err.splitlines()[-1].endswith("(pattern: Keras)")
    assert script.read_bytes() == KERAS


def test_output_file(script, capsysbinary, tmp_path):
    code, out, _ = run(capsysbinary, script, "-o", tmp_path / "out.py")
    assert code == 0 and out == b""
    assert (tmp_path / "out.py").read_bytes() == expected().data
    assert script.read_bytes() == KERAS


def test_output_into_a_directory(script, capsysbinary, tmp_path):
    (tmp_path / "dest").mkdir()
    assert run(capsysbinary, script, "-o", tmp_path / "dest")[0] == 0
    assert (tmp_path / "dest" / "train.py").read_bytes() == expected().data


def test_stdin_to_stdout(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tfdist", "convert", "-"], input=KERAS, capture_output=True,
                       cwd=tmp_path, env=dict(os.environ, PYTHONPATH=SRC), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected().data
    assert r.stderr.decode().startswith("<stdin>:")


def test_diff(script, capsysbinary, tmp_path):
    code, out, _ = run(capsysbinary, "--diff", script)
    assert code == 1        # a file would change: CI fails on it, as with --check
    want = "".join(difflib.unified_diff(KERAS.decode().splitlines(True), expected().data.decode().splitlines(True),
                                        "a/" + str(script).lstrip("/"), "b/" + str(script).lstrip("/")))
    assert out.decode() == want
    assert script.read_bytes() == KERAS
    done = tmp_path / "done.py"
    done.write_bytes(expected().data)
    assert run(capsysbinary, "--diff", done)[:2] == (0, b"")   # nothing would change


def test_check(script, capsysbinary, tmp_path):
    code, out, err = run(capsysbinary, "--check", script)
    assert (code, out) == (1, b"")
    assert "would convert 1" in err
    assert script.read_bytes() == KERAS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
    done = tmp_path / "done.py"
    done.write_bytes(expected().data)
    code, out, err = run(capsysbinary, "--check", done)
    assert (code, out) == (0, b"")
    assert "already distributed 1" in err


def test_in_place_keeps_a_backup_and_is_idempotent(script, capsysbinary, tmp_path):
    os.chmod(script, 0o640)
    code, out, _ = run(capsysbinary, "--in-place", script)
    assert (code, out) == (0, b"")
    assert script.read_bytes() == expected().data
    assert (tmp_path / "train.py.orig").read_bytes() == KERAS
    assert os.stat(script).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.py.orig"]
    code, out, err = run(capsysbinary, "--in-place", script)  # already converted: nothing to do
    assert code == 0 and "already distributed 1" in err
    assert script.read_bytes() == expected().data
    assert (tmp_path / "train.py.orig").read_bytes() == KERAS


def test_in_place_no_backup(script, capsysbinary, tmp_path):
    assert run(capsysbinary, "--in-place", "--no-backup", script)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]
    assert script.read_bytes() == expected().data


def test_in_place_refuses_to_overwrite_a_backup(script, capsysbinary, tmp_path):
    (tmp_path / "train.py.orig").write_bytes(b"precious")
    code, _, err = run(capsysbinary, "--in-place", script)
    assert code == 3
    assert f"{script}: ERROR error: backup train.py.orig exists already; remove it or use --no-backup" in err
    assert script.read_bytes() == KERAS
    assert (tmp_path / "train.py.orig").read_bytes() == b"precious"


def test_unsupported_exit_2_nothing_written(tmp_path, capsysbinary):
    src = tmp_path / "est.py"
    data = b"import tensorflow as tf\n\nest = tf.estimator.Estimator(model_fn=None)\nest.train(input_fn=None)\n"
    src.write_bytes(data)
    code, out, err = run(capsysbinary, src, "-o", tmp_path / "out.py")
    assert code == 2 and out == b""
    assert not (tmp_path / "out.py").exists()
    assert "ERROR unsupported" in err


def test_report_json(script, capsysbinary, tmp_path):
    report = tmp_path / "r.json"
    assert run(capsysbinary, script, "-o", tmp_path / "o.py", "--report", report)[0] == 0
    data = json.loads(report.read_text())
    r = expected()
    assert [f["path"] for f in data["files"]] == [str(script)]
    f = data["files"][0]
    assert f["status"] == "converted" and f["pattern"] == "Keras" and f["kind"] == "py"
    assert f["changes"] == [c.as_change() for c in r.changes]
    assert f["written"] == str(tmp_path / "o.py")
    s = data["summary"]
    assert (s["files"], s["converted"], s["unchanged"], s["needs_attention"], s["exit_code"], s["mode"]) == \
        (1, 1, 0, 0, 0, "output")


def test_single_file_uses_sibling_modules(tmp_path, capsysbinary):
    (tmp_path / "nets.py").write_text("from tensorflow import keras\n\nclass Net(keras.Model):\n    pass\n")
    (tmp_path / "train.py").write_text("import tensorflow as tf\nfrom nets import Net\n\nm = Net()\n"
                                       "m.fit(tf.data.Dataset.range(4), epochs=1)\n")
    code, out, err = run(capsysbinary, tmp_path / "train.py")
    assert code == 0, err
    with_siblings = convert_file(tmp_path / "train.py", backend="auto")
    assert with_siblings.status == "converted"
    assert [e.construct for e in with_siblings.evidence] == ["m.fit(...) on a Keras model (Net)"]
    assert out == with_siblings.data
    assert "(pattern: Keras)" in err
    alone = convert_source((tmp_path / "train.py").read_bytes(), "train.py")
    assert alone.no_training  # without the sibling, Net() is not known to be a model


def test_check_passes_files_without_tensorflow(tmp_path, capsysbinary):
    """CI / pre-commit: an empty __init__.py or non-TensorFlow code is fine under --check."""
    (tmp_path / "__init__.py").write_bytes(b"")
    (tmp_path / "old.py").write_bytes(b'print "python 2, not ours"\n')
    for name in ("__init__.py", "old.py"):
        code, out, err = run(capsysbinary, "--check", tmp_path / name)
        assert (code, out) == (0, b""), err
    assert run(capsysbinary, tmp_path / "__init__.py")[0] == 3  # converting it is still bad input


def test_pre_commit_hook(tmp_path):
    hook = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text()
    assert "- id: tfdist-check\n" in hook
    entry = [ln.split(":", 1)[1].strip() for ln in hook.splitlines() if ln.strip().startswith("entry:")]
    assert entry == ["tfdist convert --check --quiet"]
    (tmp_path / "train.py").write_bytes(KERAS)
    (tmp_path / "__init__.py").write_bytes(b"")
    args = entry[0].split()[1:]
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run([sys.executable, "-m", "tfdist", *args, "train.py", "__init__.py"], cwd=tmp_path,
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode().splitlines() == [
        f"tfdist: 2 files: would convert 1, unchanged 1, already distributed 0, needs attention 0; "
        f"{len(expected().changes)} changes, 0 warnings to review",
        "  would convert: train.py"]
    (tmp_path / "train.py").write_bytes(expected().data)
    r = subprocess.run([sys.executable, "-m", "tfdist", *args, "train.py", "__init__.py"], cwd=tmp_path,
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "train.py").read_bytes() == expected().data


def test_report_write_failure_is_bad_input(script, capsysbinary, tmp_path):
    code, _, err = run(capsysbinary, script, "-o", tmp_path / "o.py", "--report", script / "r.json")
    assert code == 3
    assert err.splitlines()[-1].startswith(f"tfdist: cannot write the report {script}/r.json")


# ------------------------------------------------------------ --backend tf-distribute
def test_tf_distribute_backend_in_every_mode(script, capsysbinary, tmp_path):
    """The second engine through the same paths: file, --diff, --check, the
    JSON report (which names the engine), a tree, and analyze."""
    code, out, _ = run(capsysbinary, script, "--backend", "tf-distribute")
    assert code == 0
    assert b"with strategy.scope():" in out and b"hvd" not in out
    code, out, _ = run(capsysbinary, script, "--backend", "tf-distribute", "--diff")
    assert code == 1 and out.startswith(b"---") and script.read_bytes() == KERAS
    code, _, _ = run(capsysbinary, script, "--backend", "tf-distribute", "--check")
    assert code == 1 and script.read_bytes() == KERAS
    report = tmp_path / "r.json"
    code, _, _ = run(capsysbinary, script, "--backend", "tf-distribute", "-o", tmp_path / "o.py", "--report", report)
    assert code == 0 and json.loads(report.read_text())["backend"] == "tf-distribute"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "train.py").write_bytes(KERAS)
    (tree / "tf1.py").write_bytes(b"import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n"
                                  b"w = tf.Variable(1.0)\nloss = tf.reduce_mean(w * x)\n"
                                  b"train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
                                  b"with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                                  b"    for i in range(10):\n        sess.run(train_op, feed_dict={x: 1.0})\n")
    code, _, err = run(capsysbinary, tree, "--backend", "tf-distribute", "-o", tmp_path / "tree_out")
    assert code == 2  # one file refused
    assert b"strategy.scope()" in (tmp_path / "tree_out" / "train.py").read_bytes()
    assert "--backend horovod" in err


def test_analyze_says_whether_the_engine_converts(capsys, tmp_path):
    tf1 = tmp_path / "tf1.py"
    tf1.write_text("import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\nw = tf.Variable(1.0)\n"
                   "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(w * x))\n"
                   "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
                   "    for i in range(10):\n        sess.run(train_op, feed_dict={x: 1.0})\n")
    assert main(["analyze", str(tf1), "--backend", "tf-distribute", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"]["backend"] == "tf-distribute" and data["engine"]["status"] == "unsupported"
    assert "--backend horovod" in data["engine"]["error"]
    assert main(["analyze", str(tf1)]) == 0
    assert "engine    horovod: converted" in capsys.readouterr().out


# ------------------------------------------------------------ reports for CI (issue 10, item 4)
def test_format_github_annotates_the_lines(script, capsysbinary):
    code, out, err = run(capsysbinary, script, "--check", "--format", "github")
    assert code == 1
    lines = out.decode().splitlines()
    assert lines and all(line.startswith(("::notice file=", "::warning file=", "::error file=")) for line in lines)
    assert any(f"file={script}," in line and ",line=" in line and "title=tfdist " in line for line in lines)


def test_format_sarif_is_a_sarif_log_with_every_finding(script, capsysbinary, tmp_path):
    bad = tmp_path / "tf1.py"
    bad.write_bytes(b"import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\nw = tf.Variable(1.0)\n"
                    b"op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(w * x))\n"
                    b"with tf.Session() as s:\n    s.run(tf.global_variables_initializer())\n"
                    b"    for i in range(3):\n        s.run(op, feed_dict={x: 1.0})\n")
    code, out, _ = run(capsysbinary, script, bad, "--check", "--backend", "tf-distribute", "--format", "sarif")
    assert code == 2
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert {r["level"] for r in results} == {"note", "error"}
    refusal = [r for r in results if r["level"] == "error"][0]
    assert refusal["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert "--backend horovod" in refusal["message"]["text"]
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)


def test_format_json_is_the_report_and_stdout_formats_refuse_stdout_modes(script, capsysbinary, tmp_path):
    code, out, _ = run(capsysbinary, script, "-o", tmp_path / "o.py", "--format", "json")
    assert code == 0 and json.loads(out)["files"][0]["status"] == "converted"
    for mode in ([], ["--diff"]):
        code, out, err = run(capsysbinary, script, *mode, "--format", "github")
        assert code == 3 and out == b"" and "--format github writes the findings on stdout" in err


def test_skip_file_and_generated_markers_leave_the_file_alone(tmp_path, capsysbinary):
    for head, why in ((b"# tfdist: skip-file\n", "# tfdist: skip-file"),
                      (b"# @generated by a tool\n", "a generated file"),
                      (b"# Code generated by gen.py. DO NOT EDIT.\n", "a generated file")):
        p = tmp_path / "m.py"
        p.write_bytes(head + KERAS)
        code, out, err = run(capsysbinary, p, "--check")
        assert code == 0, err
        assert "INFO skip-file: " + why in err
        assert convert_file(p).data == head + KERAS
    late = tmp_path / "late.py"  # a generated marker counts only in the first lines
    late.write_bytes(KERAS + b"\n" * 12 + b"# @generated\n")
    assert convert_file(late).status == "converted"


# ---------------------------------------------------------------- --warmup-epochs
def test_warmup_epochs_adds_the_warmup_callback(script, capsysbinary):
    code, out, err = run(capsysbinary, script, "--warmup-epochs", "2", "--backend", "horovod")
    assert code == 0, err
    assert b"hvd.callbacks.LearningRateWarmupCallback(" in out and b"warmup_epochs=2" in out
    assert "--warmup-epochs 2" in err
    assert out == convert_source(KERAS, "train.py", backend=Options(backend="horovod", warmup_epochs=2)).data


def test_warmup_epochs_with_sqrt_scaling_uses_the_key_with_both_options(script, capsysbinary):
    code, out, err = run(capsysbinary, script, "--warmup-epochs", "1", "--lr-scaling", "sqrt", "--backend", "tf-distribute")
    assert code == 0, err
    assert out == convert_source(KERAS, "train.py", backend=Options(backend="tf-distribute", lr_scaling="sqrt", warmup_epochs=1)).data
    assert b"LearningRateWarmup(1, strategy.num_replicas_in_sync ** 0.5)" in out


@pytest.mark.parametrize("epochs", ["0", "-1"])
def test_warmup_epochs_below_one_is_bad_input(script, capsysbinary, epochs):
    code, out, err = run(capsysbinary, script, "--warmup-epochs", epochs)
    assert code == 3 and out == b""
    assert "--warmup-epochs needs a whole number of epochs >= 1" in err


def test_warmup_without_scaling_is_bad_input(script, capsysbinary):
    code, out, err = run(capsysbinary, script, "--warmup-epochs", "1", "--lr-scaling", "none")
    assert code == 3 and out == b""
    assert "--lr-scaling none" in err and "nothing to warm up to" in err


@pytest.mark.parametrize("extra", [["--steps-per-epoch", "10"], ["--warmup-epochs", "1", "--steps-per-epoch", "0"]])
def test_steps_per_epoch_needs_a_warmup_and_a_positive_count(script, capsysbinary, extra):
    code, out, err = run(capsysbinary, script, *extra)
    assert code == 3 and out == b""
    assert "--steps-per-epoch S (S >= 1) is the epoch length of --warmup-epochs K" in err


def test_steps_per_epoch_gives_a_tf1_loop_its_warmup(tmp_path, capsysbinary):
    src = (Path(__file__).parent / "fixtures" / "session" / "exponential_decay" / "input.py").read_bytes()
    p = tmp_path / "train.py"
    p.write_bytes(src)
    code, out, err = run(capsysbinary, p, "--warmup-epochs", "1")
    assert code == 2 and out == b"" and "--steps-per-epoch S" in err
    code, out, err = run(capsysbinary, p, "--warmup-epochs", "1", "--steps-per-epoch", "60")
    assert code == 0, err
    assert out == convert_source(src, "train.py", backend=Options(backend="horovod", warmup_epochs=1, steps_per_epoch=60)).data
    assert "--steps-per-epoch 60" in err


# ---------------------------------------------------------------- verify's command line
@pytest.mark.parametrize("argv,np,compare,plot,script_args", [
    # the issue's own command: options after SCRIPT are tfdist's, not the script's
    (["train.py", "-np", "2", "--compare", "--plot", "curves.png"], 2, True, "curves.png", []),
    (["-np", "3", "train.py", "--epochs", "1"], 3, False, None, ["--epochs", "1"]),
    (["train.py", "--epochs", "1", "-np", "4", "--", "--compare", "-np", "9"], 4, False, None,
     ["--epochs", "1", "--compare", "-np", "9"]),
    # an option's value that is also the script's name is not the script
    (["--converted", "--original", "train.py", "train.py", "--compare"], 2, True, None, []),
    (["--plot=c.png", "train.py", "x"], 2, False, "c.png", ["x"]),
])
def test_verify_options_may_follow_the_script(argv, np, compare, plot, script_args):
    from tfdist.runtime.commands import parse_verify_args
    args = parse_verify_args(argv)
    assert (args.script, args.np, args.compare, args.plot, args.args) == ("train.py", np, compare, plot, script_args)


def test_verify_rejects_unknown_options_before_the_script(capsys):
    from tfdist.runtime.commands import parse_verify_args
    with pytest.raises(SystemExit) as exc:
        parse_verify_args(["--bogus", "train.py"])
    assert exc.value.code == 3 and "unrecognized arguments: --bogus" in capsys.readouterr().err
