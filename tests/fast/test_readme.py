"""The README is a manual that cannot go stale.

* Its first command must work for a new user: its tfdist part is run here
  exactly as written (from a copy of the checkout's examples), so a change of
  an exit status or an option cannot leave the README wrong.
* Every ```diff block follows a line naming the `tfdist convert ... --diff`
  command that printed it, and is byte for byte what that command prints now.
* It stays a manual: at most 300 lines, no line outside code blocks (tables
  included) over 200 characters.

Regenerate the diff blocks after a conversion changed on purpose:

    PYTHONPATH=src python tests/fast/test_readme.py --write
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 300
MAX_PROSE_WIDTH = 200
#: a diff block: the command in backticks on its own line, then the block.
DIFF_BLOCK = re.compile(r"^`(tfdist convert [^`\n]*--diff[^`\n]*)`:?\n\n?```diff\n(.*?)^```$", re.S | re.M)


def _first_commands():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _tfdist(argv, cwd):
    """Run this checkout's tfdist as the README's reader would run `tfdist`."""
    return subprocess.run([sys.executable, "-m", "tfdist", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, timeout=120)


def _diff_blocks(text):
    return [(m.group(1), m.group(2), m.span(2)) for m in DIFF_BLOCK.finditer(text)]


def _converter_diff(command):
    argv = shlex.split(command)
    r = _tfdist(argv[1:], ROOT)
    # exit 1 with a unified diff: the file would change (a crash exits 1 too, with no diff)
    assert r.returncode == 1 and r.stdout.startswith("--- "), f"{command}: exit {r.returncode}\n{r.stderr}"
    return r.stdout


def test_readme_starts_with_the_install_and_the_test_command():
    install, test = _first_commands()[:2]
    assert "pip install" in install and ".venv/bin/tfdist convert examples/" in install
    assert "--backend " in install, "the first command names its engine, whatever the default is"
    assert test == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_first_command_converts_the_example(tmp_path):
    install = _first_commands()[0]
    tfdist = install.split("&&")[-1].strip()
    argv = shlex.split(tfdist)
    assert argv[0] == ".venv/bin/tfdist"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    r = _tfdist(argv[1:], tmp_path)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / argv[argv.index("-o") + 1]).read_text(encoding="utf-8")
    engine = argv[argv.index("--backend") + 1]
    assert {"horovod": "hvd.DistributedOptimizer(", "tf-distribute": "with strategy.scope():"}[engine] in out
    assert "converted 1" in r.stderr
    script = argv[argv.index("convert") + 1]
    assert re.search(rf"^{re.escape(script)}:\d+:\d+: INFO ", r.stderr, re.M), "every change printed with its line"


def test_readme_shows_one_diff_per_engine_as_the_converter_prints_it_now():
    text = README.read_text(encoding="utf-8")
    blocks = _diff_blocks(text)
    assert len(blocks) == text.count("```diff"), "every ```diff block follows the line naming its command"
    engines = sorted(shlex.split(command)[shlex.split(command).index("--backend") + 1] for command, _, _ in blocks)
    assert engines == ["horovod", "tf-distribute"]
    for command, shown, _ in blocks:
        assert shown == _converter_diff(command), (
            f"README's diff of `{command}` is stale: run PYTHONPATH=src python tests/fast/test_readme.py --write")


def test_readme_is_a_manual_of_at_most_300_lines_and_narrow_prose():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    in_code, wide = False, []
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and len(line) > MAX_PROSE_WIDTH:
            wide.append(f"line {number}: {len(line)} characters")
    assert not wide, wide


def write():
    """Replace every diff block of the README by what its command prints now."""
    text = README.read_text(encoding="utf-8")
    for command, _, (start, end) in reversed(_diff_blocks(text)):
        text = text[:start] + _converter_diff(command) + text[end:]
    README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: PYTHONPATH=src python tests/fast/test_readme.py --write")
    write()
