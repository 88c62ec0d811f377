"""No TensorFlow.  Reports how it was started, writes files, then ends as
argv[1] says: "ok", "raise" (ValueError) or "exit3" (sys.exit(3))."""
import json
import os
import sys
import tempfile

with open("started.json", "w") as fh:
    json.dump({"file": __file__, "argv": sys.argv, "path0": sys.path[0], "name": __name__,
               "main_is_me": sys.modules["__main__"].__dict__ is globals()}, fh)
fd, scratch = tempfile.mkstemp(prefix="tfdist-noise-")   # outside the cwd: ignored
os.close(fd)
os.unlink(scratch)
if sys.argv[1] == "raise":
    raise ValueError("boom from the script")
if sys.argv[1] == "exit3":
    sys.exit(3)
