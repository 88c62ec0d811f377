"""Both workers join a MultiWorkerMirroredStrategy cluster; worker 1 then
raises, while worker 0 waits in an all-reduce that can never complete: only
the launcher can end it.  Each worker writes its pid to <dir>/pid-<rank> first."""
import json
import os
import sys

rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
with open(os.path.join(sys.argv[1], f"pid-{rank}"), "w") as fh:
    fh.write(str(os.getpid()))

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()
print(f"worker {rank} of {strategy.extended._num_workers} started", flush=True)
if rank == 1:
    raise RuntimeError("worker 1 failed on purpose")
total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), axis=None)
print(f"worker 0 was never stopped ({float(total)})", flush=True)
