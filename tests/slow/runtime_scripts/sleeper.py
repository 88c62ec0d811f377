"""Writes <dir>/pid-<rank> and then sleeps far longer than any test allows."""
import os
import sys
import time

rank = os.environ.get("HOROVOD_RANK", "0")
with open(os.path.join(sys.argv[1], f"pid-{rank}"), "w") as fh:
    fh.write(str(os.getpid()))
print(f"rank {rank} sleeping", flush=True)
time.sleep(600)
