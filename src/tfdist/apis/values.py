"""Plain Python values: settings read from a command line or a tracker,
containers and their mutators, scalar arithmetic."""
from __future__ import annotations

#: Calls returning plain data (strings, numbers): no field of their result
#: is an object of the script (``args.optimizer`` is a name, not an optimizer).
PLAIN_DATA_CALLS = {"argparse.ArgumentParser.parse_args", "argparse.ArgumentParser.parse_known_args"}
#: Objects holding a run's settings, plain data like the above: a tracker's
#: config (``wandb.config.optimizer`` is a name a sweep may set).
PLAIN_DATA_OBJECTS = {"wandb.config"}
#: Calls whose result holds such settings in an attribute -> that attribute
#: (``run = wandb.init(); config = run.config``).
PLAIN_DATA_RESULT_ATTRIBUTES = {"wandb.init": "config"}
# dict(k=v, ...): a mapping whose keys are its keywords (``**dict(...)`` in a call).
DICT_CONSTRUCTORS = {"builtins.dict"}
#: Builtins that read a container without changing its elements.
READ_ONLY_BUILTINS = {"builtins.len", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.enumerate",
                      "builtins.zip", "builtins.print", "builtins.iter", "builtins.reversed"}
# Methods changing a list, dict or set in place: a list built by appends
# (rows = []; for ...: rows.append(r)) is final after its last change.
CONTAINER_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                      "setdefault", "add", "discard"}
# Scalar arithmetic: a value computed by these from constants and step
# counters only (a learning-rate decay fed to a placeholder) is a
# hyper-parameter schedule, the same on every rank at the same step.
SCALAR_MATH_PREFIXES = ("math.",)
SCALAR_MATH_BUILTINS = {"builtins.min", "builtins.max", "builtins.float", "builtins.int", "builtins.abs",
                        "builtins.round", "builtins.pow"}
# Built-ins whose result is a Python number or string, never an array: a
# list of such given to fit() holds samples, not one array per input.
PYTHON_SCALAR_BUILTINS = SCALAR_MATH_BUILTINS | {"builtins.str", "builtins.bool", "builtins.len"}
