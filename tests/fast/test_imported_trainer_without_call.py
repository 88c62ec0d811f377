"""A Keras 3 trainer with no call() defined in another module of the project (rules/replica_fit.py,
actions/built_marks.py, facts/model_builds.fitted_class_without_call): marked built before fit()
like a class of the converted file, and its compiled loss too when its train_step never calls it;
a script calling no Keras itself takes the Keras of the module whose model it fits
(facts/keras_models.flavor); an unseeded keras.random draw in that class, which tfdist cannot edit
there, is warned with its module and line. The previous conversion did none of these (a held-out
diffusion repository: "Unable to automatically build the model" at fit)."""
from __future__ import annotations

import shutil
from pathlib import Path

from tfdist.api import convert_file

PROJECT = Path(__file__).resolve().parents[1] / "slow" / "imported_no_call"
MARK = 'model.built = True\nif getattr(model, "_compile_loss", None) is not None:\n    model._compile_loss.built = True\n'


def _project(tmp_path: Path, module_edit=None, script_edit=None) -> Path:
    for name in ("train.py", "denoiser.py"):
        shutil.copy(PROJECT / name, tmp_path / name)
    for name, edit in (("denoiser.py", module_edit), ("train.py", script_edit)):
        if edit is not None:
            path = tmp_path / name
            old, new = edit
            assert old in path.read_text()
            path.write_text(path.read_text().replace(old, new))
    return tmp_path / "train.py"


def test_a_factory_made_model_is_marked_built_with_its_loss_and_keeps_keras_3(tmp_path):
    result = convert_file(str(_project(tmp_path)), backend="tf-distribute")
    assert result.status == "converted", result.error
    assert MARK + "model.fit(" in result.code
    assert "TF_USE_LEGACY_KERAS" not in result.code and "if int(keras.__version__" in result.code
    assert not any(w.rule == "replica-scope" for w in result.warnings), result.warnings


def test_a_class_imported_by_name_is_marked_built(tmp_path):
    script = _project(tmp_path, script_edit=(
        "import denoiser\n", "import keras\nfrom denoiser import Denoiser\n"))
    text = script.read_text().replace(
        "model = denoiser.create_model(32, 1e-3)",
        "model = Denoiser(32)\nmodel.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.MeanAbsoluteError())")
    script.write_text(text)
    result = convert_file(str(script), backend="tf-distribute")
    assert MARK + "model.fit(" in result.code, result.code


def test_a_step_calling_the_compiled_loss_keeps_it_unbuilt(tmp_path):
    script = _project(tmp_path, module_edit=("loss = self.loss(noise, predicted)",
                                             "loss = self.compute_loss(y=noise, y_pred=predicted)"))
    result = convert_file(str(script), backend="tf-distribute")
    assert "model.built = True\nmodel.fit(" in result.code and "_compile_loss" not in result.code, result.code


def test_an_unseeded_draw_in_the_imported_class_is_warned_with_its_place(tmp_path):
    script = _project(tmp_path, module_edit=("clean + 0.3 * noise", "clean + 0.3 * keras.random.normal(ops_shape)"))
    (tmp_path / "denoiser.py").write_text((tmp_path / "denoiser.py").read_text().replace(
        "        clean, noise = data\n", "        clean, noise = data\n        ops_shape = tf.shape(clean)\n"))
    result = convert_file(str(script), backend="tf-distribute")
    line = next(i for i, text in enumerate((tmp_path / "denoiser.py").read_text().splitlines(), 1)
                if "keras.random.normal" in text)
    said = [w.message for w in result.warnings if w.rule == "replica-scope"]
    assert len(said) == 1 and said[0].startswith(
        f"Denoiser (module denoiser) draws keras.random.normal() without a seed (its line {line})"), said
