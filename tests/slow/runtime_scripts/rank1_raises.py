"""Rank 1 raises; rank 0 sleeps outside any collective, so only the launcher
can end it.  Each rank writes its pid to <dir>/pid-<rank> first."""
import os
import sys
import time

import horovod.tensorflow as hvd

hvd.init()
with open(os.path.join(sys.argv[1], f"pid-{hvd.rank()}"), "w") as fh:
    fh.write(str(os.getpid()))
print(f"rank {hvd.rank()} of {hvd.size()} started", flush=True)
if hvd.rank() == 1:
    time.sleep(1)
    raise RuntimeError("rank 1 failed on purpose")
time.sleep(600)
print("rank 0 was never stopped", flush=True)
