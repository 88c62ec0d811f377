"""A distributed script whose second task fails at start-up (before any
TensorFlow import); the first task would otherwise wait for it."""
import json
import os
import sys
import time

rank = int(os.environ.get("HOROVOD_RANK")
           or json.loads(os.environ.get("TF_CONFIG", '{"task": {"index": 0}}'))["task"]["index"])
if rank == 1:
    raise ValueError("task 1 cannot read its shard: data/shard-1.tfrecord is missing")
time.sleep(120)
print("task", rank, "done", file=sys.stderr)
