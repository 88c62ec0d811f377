"""One Options object: built and validated once, hashable (pipelines are
cached per Options), and pickled as it is to the worker processes of a tree."""
import multiprocessing as mp
import pickle

import pytest

from tfdist.assembly import build_pipeline, pipeline
from tfdist.options import Options, OptionsError
from tfdist.project.worker import FileTask

ALL = Options(backend="tf-distribute", lr_scaling="sqrt", warmup_epochs=3, steps_per_epoch=40, fault_tolerant=True)


def _round_trip(options: Options) -> Options:
    """Run in a separate process: what a worker receives."""
    return options


def test_options_pickle_and_compare_equal():
    again = pickle.loads(pickle.dumps(ALL))
    assert again == ALL and hash(again) == hash(ALL)
    with pytest.raises(Exception):  # frozen
        ALL.backend = "horovod"


def test_options_reach_a_worker_process_as_they_are():
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_round_trip, (ALL,)) == ALL
    task = FileTask(path="t.py", kind="py", options=ALL)
    assert pickle.loads(pickle.dumps(task)).options == ALL


def test_pipelines_are_cached_per_options():
    a = Options(backend="horovod", lr_scaling="sqrt")
    assert pipeline(a) is pipeline(Options(backend="horovod", lr_scaling="sqrt"))
    assert pipeline(a) is not pipeline(Options(backend="horovod"))
    assert pipeline("horovod") is pipeline(Options(backend="horovod"))  # a bare name: the engine's defaults


def test_the_backend_is_built_with_the_options_as_keyword_arguments():
    backend = pipeline(ALL).backend
    assert (backend.name, backend.lr_scaling, backend.warmup_epochs, backend.steps_per_epoch, backend.fault_tolerant) \
        == ("tf-distribute", "sqrt", 3, 40, True)
    assert Options(backend="horovod").backend_kwargs() == {}
    assert ALL.backend_kwargs() == {"lr_scaling": "sqrt", "warmup_epochs": 3, "steps_per_epoch": 40,
                                    "fault_tolerant": True}


def test_auto_is_resolved_before_a_pipeline_is_built():
    with pytest.raises(ValueError, match="chosen per file"):
        build_pipeline(Options())


@pytest.mark.parametrize("value", [None, "horovod", Options(backend="horovod")])
def test_of_accepts_a_name_or_options(value):
    assert Options.of(value) == (Options() if value is None else Options(backend="horovod"))


def test_of_refuses_other_types():
    with pytest.raises(TypeError):
        Options.of(3)


def test_with_backend_keeps_the_options():
    chosen = Options(lr_scaling="none").with_backend("horovod")
    assert chosen == Options(backend="horovod", lr_scaling="none") and chosen.chosen and not Options().chosen
    with pytest.raises(OptionsError, match="--fault-tolerant needs --backend tf-distribute"):
        Options(fault_tolerant=True).with_backend("horovod")


def test_describe_spells_the_command_line():
    assert ALL.describe() == ("--backend tf-distribute --lr-scaling sqrt --warmup-epochs 3 --steps-per-epoch 40 "
                              "--fault-tolerant")


@pytest.mark.parametrize("fields,needle", [
    ({"backend": "mpi"}, "unknown backend 'mpi' (available: auto, horovod, tf-distribute)"),
    ({"fault_tolerant": "yes"}, "fault_tolerant is True or False"),
    ({"steps_per_epoch": 5, "warmup_epochs": None}, "--steps-per-epoch alone"),
    ({"warmup_epochs": 2.5}, "--warmup-epochs needs a whole number of epochs >= 1, not 2.5"),
])
def test_validation_messages_name_the_options(fields, needle):
    with pytest.raises(OptionsError) as e:
        Options(**fields)
    assert needle in str(e.value)
