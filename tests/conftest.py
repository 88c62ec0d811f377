import os
import sys

# Fast tests run from a checkout without installing (the README's test
# command installs tfdist anyway; this keeps `pytest tests/fast` working).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
