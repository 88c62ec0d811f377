"""Experiment trackers and progress bars: one process reports (rules/trackers.py)."""
from __future__ import annotations

# Callbacks of other libraries that report or save: they are callbacks (a
# Keras kind), and run on rank 0 only like Keras' own (keras.KERAS_RANK0_CALLBACKS). A wandb callback
# that only logs needs no edit: its run does nothing off rank 0
# (TRACKER_QUIET_RUNS); its checkpoint callback writes files.
TRACKER_KERAS_CALLBACKS = {
    "wandb.keras.WandbModelCheckpoint", "wandb.integration.keras.WandbModelCheckpoint",
    "mlflow.keras.MlflowCallback", "mlflow.tensorflow.MlflowCallback",
    "mlflow.keras.callback.MlflowCallback", "mlflow.tensorflow.callback.MlflowCallback",
    "tqdm.keras.TqdmCallback",
}
# Of those, the ones that are a ModelCheckpoint (a file path first): under
# tf.distribute each worker writes its own file, as ModelCheckpoint does.
TRACKER_CHECKPOINT_CALLBACKS = {"wandb.keras.WandbModelCheckpoint", "wandb.integration.keras.WandbModelCheckpoint"}
# A tracker's call starting a run -> (keyword, the value starting a run that
# logs nothing, the keyword's value when absent). Measured on wandb 0.31.0:
# wandb.init(mode="disabled") returns a run whose config is read and set as
# usual and whose log, summary and Keras callbacks do nothing.
TRACKER_QUIET_RUNS = {"wandb.init": ("mode", '"disabled"', "None")}
# Tracker functions that log, or start, end or choose the run logged to, and
# have no quiet mode: rank 0 only.
_MLFLOW_LOGGING = ("log_metric", "log_metrics", "log_param", "log_params", "log_artifact", "log_artifacts",
                   "log_dict", "log_figure", "log_image", "log_text", "log_table", "log_input", "set_tag",
                   "set_tags", "set_experiment", "create_experiment", "start_run", "end_run", "autolog")
TRACKER_RANK0_FUNCTIONS = ({f"mlflow.{f}" for f in _MLFLOW_LOGGING}
                           | {f"mlflow.{flavor}.{f}" for flavor in ("tensorflow", "keras")
                              for f in ("autolog", "log_model", "save_model")})
# Of those, the calls opening a run that a with-statement may hold (the
# training inside it runs on every process: the run is a null context there).
TRACKER_RUN_CONTEXTS = {"mlflow.start_run"}
# Sweep agents: a server hands each agent the settings of its next run.
TRACKER_SWEEP_AGENTS = {"wandb.agent"}
# Progress bars -> the keyword turning one off.
PROGRESS_BARS = {name: "disable" for name in (
    "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.tqdm_notebook",
    "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange", "tqdm.tnrange")}
