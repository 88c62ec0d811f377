"""Prints one line per rank on stdout and stderr (no TensorFlow: fast)."""
import os
import sys

rank, size = os.environ.get("HOROVOD_RANK", "?"), os.environ.get("HOROVOD_SIZE", "?")
print(f"hello from rank {rank} of {size}; args={sys.argv[1:]}", flush=True)
print(f"rank {rank} says hi on stderr", file=sys.stderr, flush=True)
