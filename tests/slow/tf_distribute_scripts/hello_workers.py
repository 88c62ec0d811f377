"""Prints its TF_CONFIG task and cluster on stdout and a line on stderr (no
TensorFlow: fast)."""
import json
import os
import sys

config = json.loads(os.environ["TF_CONFIG"])
rank = config["task"]["index"]
print(f"hello from worker {rank} of {len(config['cluster']['worker'])}; "
      f"type={config['task']['type']} cluster={','.join(config['cluster']['worker'])} args={sys.argv[1:]}",
      flush=True)
print(f"worker {rank} says hi on stderr", file=sys.stderr, flush=True)
