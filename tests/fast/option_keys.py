"""The fixtures' file names spell a conversion's options as one key
(``expected.horovod+lr-sqrt+warmup-1.py``: --backend horovod --lr-scaling
sqrt --warmup-epochs 1); :func:`options_of` reads such a key into the
:class:`~tfdist.options.Options` the converter takes. Only file names use
this spelling: tfdist itself passes Options."""
import dataclasses

from tfdist.options import Options

#: key part -> (Options field, value); ``warmup-K`` and ``steps-S`` carry a number.
FLAGS = {"lr-sqrt": ("lr_scaling", "sqrt"), "lr-none": ("lr_scaling", "none"),
         "fault-tolerant": ("fault_tolerant", True), "parameter-server": ("strategy", "parameter-server")}
NUMBERS = {"warmup-": "warmup_epochs", "steps-": "steps_per_epoch"}


def options_of(key: str) -> Options:
    backend, *parts = key.split("+")
    fields = {}
    for part in parts:
        if part in FLAGS:
            name, value = FLAGS[part]
        else:
            prefix = next(p for p in NUMBERS if part.startswith(p))
            name, value = NUMBERS[prefix], int(part[len(prefix):])
        assert name not in fields, f"{key}: two values for {name}"
        fields[name] = value
    return dataclasses.replace(Options.of(backend), **fields)  # a bare engine name: its Options
