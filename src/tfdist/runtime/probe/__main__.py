"""``python -m tfdist.runtime.probe``: run a script under the probe."""
# Run the package imported under its real name (runpy imported it before
# this module), so that state is shared with anything that imports
# tfdist.runtime.probe.
from tfdist.runtime.probe import main as _main

raise SystemExit(_main())
