"""Writes <dir>/pid-<rank> (rank from TF_CONFIG) and then sleeps far longer
than any test allows."""
import json
import os
import sys
import time

rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
with open(os.path.join(sys.argv[1], f"pid-{rank}"), "w") as fh:
    fh.write(str(os.getpid()))
print(f"worker {rank} sleeping", flush=True)
time.sleep(600)
