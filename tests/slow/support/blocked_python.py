"""The job's interpreter for the Slurm tests of a job needing only its training environment:
TensorFlow's, but neither tfdist nor LibCST can be imported (as in an environment
without them), then Python's own `-c CODE ARGS` or `SCRIPT ARGS`."""
import runpy, sys


class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tfdist", "libcst"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Absent())
if sys.argv[1] == "-c":
    code, sys.argv = sys.argv[2], ["-c"] + sys.argv[3:]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
