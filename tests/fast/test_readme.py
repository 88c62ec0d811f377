"""The README's first command must work for a new user: its tfdist part is
run here exactly as written (from a copy of the checkout's examples), so a
change of an exit status or an option cannot leave the README wrong."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _first_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_readme_starts_with_the_install_and_the_test_command():
    install, test = _first_commands()[:2]
    assert "pip install" in install and ".venv/bin/tfdist convert examples/" in install
    assert test == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_first_command_converts_the_example(tmp_path):
    install = _first_commands()[0]
    tfdist = install.split("&&")[-1].strip()
    argv = shlex.split(tfdist)
    assert argv[0] == ".venv/bin/tfdist"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    r = subprocess.run([sys.executable, "-m", "tfdist", *argv[1:]], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr
    out = tmp_path / argv[argv.index("-o") + 1]
    assert b"hvd.DistributedOptimizer" in out.read_bytes()
    assert "converted 1" in r.stderr and "INFO lr-scaling" in r.stderr
