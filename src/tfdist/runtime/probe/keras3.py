"""Keras 3 (TensorFlow >= 2.16): Model.save*, Model.__call__ and the
trainer's fit."""
from __future__ import annotations

from .files import make_file_wrapper
from .keras import install_fit
from .patch import install_patch, patch_inherited
from .state import STATE
from .tables import (KERAS3_CALLBACKS_MODULE, KERAS3_PEEK_METHODS, KERAS3_TRAINER_CLASS, KERAS_MODEL_CLASS,
                     KERAS_SAVE_METHODS)
from .tape import make_model_call_wrapper


def install_keras3_model(module, group):
    """Keras 3: Model.save / save_weights, and Model.__call__ (inherited from
    Layer: wrapped on Model so that plain layer calls are not seen)."""
    for method, spec in KERAS_SAVE_METHODS:
        install_patch(module.__name__, f"{KERAS_MODEL_CLASS}.{method}",
               make_file_wrapper(f"Model.{method}", spec, "model"))
    model_cls = getattr(module, KERAS_MODEL_CLASS, None)
    if isinstance(model_cls, type):
        patch_inherited(model_cls, "__call__", make_model_call_wrapper)


def install_keras3_trainer(module, group):
    """Keras 3: fit is TensorFlowTrainer.fit (Model inherits it); the batch
    it peeks at to build the model is no training sample."""
    install_fit(module, KERAS3_TRAINER_CLASS, KERAS3_CALLBACKS_MODULE)

    def make_peek(orig):
        def peek(*args, **kwargs):
            STATE.peeking += 1
            try:
                return orig(*args, **kwargs)
            finally:
                STATE.peeking -= 1
        return peek

    for method in KERAS3_PEEK_METHODS:
        install_patch(module.__name__, f"{KERAS3_TRAINER_CLASS}.{method}", make_peek)
