"""Kubernetes manifests for a converted script: Kubeflow Trainer v2
(``TrainJob`` + the ``TrainingRuntime`` it runs on, ``trainer.kubeflow.org/v1alpha1``)
or, with ``api="v1"``, the legacy Training Operator's ``TFJob`` / ``MPIJob``
(``kubeflow.org/v1``).

Engines:

* tf-distribute, Trainer v2: Trainer v2 ships no TensorFlow runtime, so the
  manifest carries its own ``TrainingRuntime`` (no ML policy plugin: a JobSet
  with one replicated job ``node`` of N pods).  Each pod runs ``python -c
  POD_TASK N PORT SCRIPT``, a few standard-library lines writing its
  ``TF_CONFIG`` from ``JOB_COMPLETION_INDEX`` (its index in the indexed Job)
  and ``JOBSET_NAME`` (from the pod's JobSet label, through the downward API):
  worker i is ``<jobset>-node-0-<i>.<jobset>:PORT``, the DNS name JobSet
  gives each pod (``tfdist run --jobset`` does the same, by hand).  The image
  needs TensorFlow, not tfdist.
* tf-distribute, v1: a ``TFJob`` with N ``Worker`` replicas; the Training
  Operator writes each pod's ``TF_CONFIG`` itself (worker 0 is the chief).
* horovod: MPI (Horovod built with MPI, OpenMPI and sshd in the image).
  Trainer v2: a ``TrainingRuntime`` with the MPI policy as upstream's own
  MPI runtimes have it (the launcher runs ``mpirun --allow-run-as-root`` and
  ranks of its own, ``runLauncherAsNode``; N-1 node pods run sshd; Trainer
  writes the hostfile and the SSH keys, and gives ``resourcesPerNode`` to
  every pod running ranks).  v1: an ``MPIJob`` (launcher + N workers).

Nothing here talks to a cluster: the manifests are written as YAML, and
tfdist's tests validate them with the Kubeflow SDKs' typed models
(``kubeflow`` / ``kubeflow-trainer-api`` for v2, ``kubeflow-training`` for
v1) and the core objects with ``kubernetes-validate``.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from . import launcher

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TRAINER_GROUP = "trainer.kubeflow.org"
V1_API = "kubeflow.org/v1"
#: tf.distribute workers listen on this port in their pods.
TF_PORT = 2222
#: the replicated job holding the training pods (Trainer v2's name for it)
NODE_JOB = "node"
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


class ManifestError(ValueError):
    """Options that cannot make a manifest."""


@dataclass
class KubeSpec:
    script: str                  # the converted script (its name is used inside the image)
    image: str | None
    workers: int
    backend: str = "horovod"
    api: str = "v2"
    name: str | None = None
    namespace: str | None = None
    procs_per_worker: int = 1    # Horovod: MPI slots (processes) per pod
    gpus_per_worker: int = 0
    cpu: str | None = None       # e.g. "4" or "500m"
    memory: str | None = None    # e.g. "8Gi"
    workdir: str = "/workspace"  # where the script is inside the image
    args: list[str] = field(default_factory=list)
    allow_unconverted: bool = False  # tfdist run --allow-unconverted in the pods
    parameter_servers: int = 0   # a ParameterServerStrategy job: a Chief, the Workers and these PS replicas

    @property
    def job_name(self) -> str:
        if self.name:
            return self.name
        stem = re.sub(r"[^a-z0-9-]+", "-", PurePosixPath(self.script).stem.lower()).strip("-") or "train"
        if not stem[0].isalpha():
            stem = "job-" + stem
        return stem[:63 - len(self.longest_pod_suffix)].rstrip("-")

    @property
    def longest_pod_suffix(self) -> str:
        """What the operator adds to the job's name in the host name of its
        longest-named pod: JobSet names a pod's host ``<jobset>-<replicated
        job>-<job index>-<pod index>`` (Kubeflow Trainer v2: the TrainJob's
        name is the JobSet's; jobset pkg/controllers/pod_controller.go, the
        "hostname" it sets); the Training Operator ``<job>-<replica
        type>-<index>`` (v1 TFJob / MPIJob: pkg/common/util, GenGeneralName).
        A host name is a DNS label: at most 63 characters."""
        last = str(max(self.workers, 1) - 1)
        if self.api == "v2":
            suffixes = [f"-{NODE_JOB}-0-{last}"] + (["-launcher-0-0"] if self.backend == "horovod" else [])
        else:
            suffixes = [f"-worker-{last}"] + (["-launcher"] if self.backend == "horovod" else [])
        return max(suffixes, key=len)

    @property
    def script_in_image(self) -> str:
        return str(PurePosixPath(self.workdir) / os.path.basename(self.script))

    def problems(self) -> list[str]:
        out = []
        if self.backend not in ("horovod", "tf-distribute"):
            out.append(f"--backend {self.backend!r}: horovod or tf-distribute")
        if self.api not in ("v1", "v2"):
            out.append(f"--api {self.api!r}: v2 (Kubeflow Trainer, TrainJob) or v1 (Training Operator, TFJob/MPIJob)")
        if self.workers < 1:
            out.append(f"--workers {self.workers}: a job needs at least 1 worker pod")
        if self.procs_per_worker < 1:
            out.append(f"--procs-per-worker {self.procs_per_worker}: at least 1")
        if self.procs_per_worker > 1 and self.backend == "tf-distribute":
            out.append("--procs-per-worker is for --backend horovod (MPI slots); a tf-distribute pod runs one "
                       "worker, which uses all the pod's GPUs")
        if self.gpus_per_worker < 0:
            out.append(f"--gpus-per-worker {self.gpus_per_worker}: 0 (CPU) or more")
        if not self.image or not self.image.strip():
            out.append("--image IMAGE is required: the container image holding TensorFlow"
                       + (", Horovod (MPI)" if self.backend == "horovod" else ", tfdist") + " and the script")
        elif any(c.isspace() for c in self.image):
            out.append(f"--image {self.image!r}: an image reference has no spaces")
        if not _DNS_LABEL.match(self.job_name):
            out.append(f"--name {self.job_name!r}: a Kubernetes name is lower-case letters, digits and '-', "
                       "starting with a letter, at most 63 characters")
        elif len(self.job_name) + len(self.longest_pod_suffix) > 63:
            suffix = self.longest_pod_suffix
            out.append(f"--name {self.job_name!r} ({len(self.job_name)} characters): its pods' host names add "
                       f"{suffix!r} ({len(suffix)}) and a host name is at most 63 characters: give a name of at most "
                       f"{63 - len(suffix)}")
        if self.namespace is not None and not _DNS_LABEL.match(self.namespace):
            out.append(f"--namespace {self.namespace!r}: lower-case letters, digits and '-'")
        for option, value in (("--cpu", self.cpu), ("--memory", self.memory)):
            if value is not None and not re.match(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$", value):
                out.append(f"{option} {value!r}: a Kubernetes quantity (e.g. 4, 500m, 8Gi)")
        if not PurePosixPath(self.workdir).is_absolute():
            out.append(f"--workdir {self.workdir!r}: an absolute path inside the image")
        if self.parameter_servers and self.api != "v1":
            out.append("--ps: Kubeflow Trainer v2 runs a TrainJob as one replicated job of identical nodes (JobSet) "
                       "and ships no runtime with a chief, workers and parameter servers of their own roles; "
                       "write a TFJob with --api v1 (Chief, Worker and PS replicas)")
        if self.parameter_servers < 0:
            out.append(f"--ps {self.parameter_servers}: 0 or more")
        return out

    # ----------------------------------------------------------------------

    def metadata(self, name: str) -> dict:
        meta: dict = {"name": name}
        if self.namespace:
            meta["namespace"] = self.namespace
        return meta

    def resources(self, gpus_scale: int = 1) -> dict | None:
        limits: dict = {}
        if self.cpu:
            limits["cpu"] = self.cpu
        if self.memory:
            limits["memory"] = self.memory
        if self.gpus_per_worker:
            limits["nvidia.com/gpu"] = str(self.gpus_per_worker * gpus_scale)
        return {"limits": limits} if limits else None

    def python_command(self) -> list[str]:
        return ["python", self.script_in_image, *self.args]

    def mpirun_command(self) -> list[str]:
        # --allow-run-as-root: the pods run as root (the SSH keys are mounted at /root/.ssh; Horovod's own
        # images run as root), and OpenMPI's mpirun stops at once as root without it
        return ["mpirun", "--allow-run-as-root", "-np", str(self.workers * self.procs_per_worker), "--bind-to",
                "none", "--map-by", "slot", "-x", "PATH", "-x", "LD_LIBRARY_PATH", *self.python_command()]


def manifests(spec: KubeSpec) -> list[dict]:
    """The Kubernetes objects for ``spec``, in the order to apply them."""
    problems = spec.problems()
    if problems:
        raise ManifestError("; ".join(problems))
    if spec.api == "v1":
        return [tfjob(spec) if spec.backend == "tf-distribute" else mpijob(spec)]
    return trainjob_v2(spec)


def _container(name: str, image: str, **fields) -> dict:
    out = {"name": name, "image": image}
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


def _job_template(container: dict, labels: dict | None = None, restart: str = "Never") -> dict:
    template: dict = {"metadata": {"labels": labels}} if labels else {}
    template["spec"] = {"template": {"spec": {"restartPolicy": restart, "containers": [container]}}}
    return template


def trainjob_v2(spec: KubeSpec) -> list[dict]:
    name = spec.job_name
    runtime_name = f"{name}-{'horovod' if spec.backend == 'horovod' else 'tf-distribute'}"
    trainer_step = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    if spec.backend == "tf-distribute":
        runtime_spec = {
            "mlPolicy": {"numNodes": spec.workers},
            "template": {"spec": {
                "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [NODE_JOB]},
                "replicatedJobs": [{
                    "name": NODE_JOB, "replicas": 1,
                    "template": _job_template(_container(
                        NODE_JOB, spec.image,
                        env=[{"name": "JOBSET_NAME", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}}}],
                        ports=[{"name": "tf-worker", "containerPort": TF_PORT, "protocol": "TCP"}]), trainer_step)}],
            }},
        }
        command = ["python", "-c", POD_TASK, str(spec.workers), str(TF_PORT), spec.script_in_image, *spec.args]
        trainer: dict = {"image": spec.image, "numNodes": spec.workers, "command": command}
    else:
        # As upstream's MPI runtimes (manifests/base/runtimes/deepspeed_distributed.yaml): the launcher is
        # the trainer (it gets the TrainJob's command, mpirun) and runs ranks too (runLauncherAsNode), so
        # resourcesPerNode reaches every pod running ranks -- Trainer gives them to the replicated job
        # labelled trainer and, with runLauncherAsNode, to "node" (pkg/runtime/core/trainingruntime.go);
        # the launcher count is the runtime's numNodes (1), the node count the TrainJob's numNodes - 1
        # (pkg/runtime/framework/plugins/mpi/mpi.go, EnforceMLPolicy). tests/fast/test_jobs.py holds it.
        runtime_spec = {
            "mlPolicy": {"numNodes": 1, "mpi": {
                "numProcPerNode": spec.procs_per_worker, "mpiImplementation": "OpenMPI",
                "sshAuthMountPath": "/root/.ssh", "runLauncherAsNode": True}},
            "template": {"spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
                "replicatedJobs": [
                    {"name": "launcher", "replicas": 1,
                     "template": _job_template(_container(NODE_JOB, spec.image), trainer_step)},
                    {"name": NODE_JOB, "replicas": 1,
                     "template": _job_template(_container(
                         NODE_JOB, spec.image, command=["/usr/sbin/sshd"], args=["-De"],
                         readinessProbe={"tcpSocket": {"port": 22}, "initialDelaySeconds": 5}))},
                ],
            }},
        }
        trainer = {"image": spec.image, "numNodes": spec.workers, "numProcPerNode": spec.procs_per_worker,
                   "command": spec.mpirun_command()}
    resources = spec.resources(spec.procs_per_worker if spec.backend == "horovod" else 1)
    if resources:
        trainer["resourcesPerNode"] = resources
    runtime = {"apiVersion": TRAINER_API, "kind": "TrainingRuntime", "metadata": spec.metadata(runtime_name),
               "spec": runtime_spec}
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/framework":
                                     "horovod" if spec.backend == "horovod" else "tensorflow"}
    job = {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": spec.metadata(name),
           "spec": {"runtimeRef": {"apiGroup": TRAINER_GROUP, "kind": "TrainingRuntime", "name": runtime_name},
                    "trainer": trainer}}
    return [runtime, job]


def tfjob(spec: KubeSpec) -> dict:
    container = _container("tensorflow", spec.image, command=spec.python_command(),
                           ports=[{"name": "tfjob-port", "containerPort": TF_PORT, "protocol": "TCP"}], resources=spec.resources())
    replica = lambda n: {"replicas": n, "restartPolicy": "Never",  # noqa: E731
                         "template": {"spec": {"containers": [container]}}}
    if spec.parameter_servers:
        # the job succeeds when the chief does; the workers and parameter servers, which serve until
        # stopped, are deleted then (cleanPodPolicy Running)
        return {"apiVersion": V1_API, "kind": "TFJob", "metadata": spec.metadata(spec.job_name),
                "spec": {"runPolicy": {"cleanPodPolicy": "Running"},
                         "tfReplicaSpecs": {"Chief": replica(1), "Worker": replica(spec.workers),
                                            "PS": replica(spec.parameter_servers)}}}
    return {"apiVersion": V1_API, "kind": "TFJob", "metadata": spec.metadata(spec.job_name),
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "tfReplicaSpecs": {"Worker": replica(spec.workers)}}}


def mpijob(spec: KubeSpec) -> dict:
    launcher = _container("mpi-launcher", spec.image, command=spec.mpirun_command())
    worker = _container("mpi-worker", spec.image, resources=spec.resources(spec.procs_per_worker))
    return {"apiVersion": V1_API, "kind": "MPIJob", "metadata": spec.metadata(spec.job_name),
            "spec": {"slotsPerWorker": spec.procs_per_worker, "runPolicy": {"cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "restartPolicy": "Never",
                                      "template": {"spec": {"containers": [launcher]}}},
                         "Worker": {"replicas": spec.workers, "restartPolicy": "Never",
                                    "template": {"spec": {"containers": [worker]}}}}}}


def requirements(spec: KubeSpec) -> list[str]:
    """What the cluster and the image must have (the manifest's header)."""
    lines = []
    if spec.api == "v2":
        lines.append("Cluster: Kubeflow Trainer v2 (the trainer.kubeflow.org CRDs and controller, with JobSet);")
        lines.append("the TrainingRuntime below is applied with the TrainJob (namespaced, named after it).")
    else:
        lines.append("Cluster: Kubeflow Training Operator v1 (kubeflow.org/v1 "
                     + ("TFJob" if spec.backend == "tf-distribute" else "MPIJob") + " CRD; release 1.9).")
    if spec.backend == "tf-distribute":
        lines.append(f"Image: TensorFlow{' and tf-keras' if spec.parameter_servers else ''}, with the script at "
                     f"{spec.script_in_image} (tfdist is not needed).")
        if spec.api == "v2":
            lines.append(f"Each pod runs one MultiWorkerMirroredStrategy worker: the few lines of Python in its "
                         f"command write its TF_CONFIG (port {TF_PORT}).")
        elif spec.parameter_servers:
            lines.append(f"Parameter servers: a Chief (it runs the training), {spec.workers} Worker(s) and "
                         f"{spec.parameter_servers} PS replica(s); the Training Operator writes each pod's TF_CONFIG, "
                         "the job succeeds with the chief and the serving pods are deleted then.")
        else:
            lines.append("The Training Operator writes each worker's TF_CONFIG (worker 0 is the chief).")
    else:
        lines.append("Image: TensorFlow, Horovod built with MPI (HOROVOD_WITH_MPI=1), OpenMPI and an sshd,")
        lines.append(f"with the script at {spec.script_in_image}; the launcher runs mpirun over "
                     f"{spec.workers} pod(s) x {spec.procs_per_worker} process(es).")
    if spec.gpus_per_worker:
        lines.append("GPUs: the NVIDIA device plugin (nvidia.com/gpu).")
    lines.append("Apply: kubectl apply -f FILE. Written by tfdist job kubernetes; not run by tfdist.")
    return lines


# --------------------------------------------------------------------------
# YAML (a small emitter: block style, strings JSON-quoted when needed)
# --------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*$")
_SPECIAL = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _SPECIAL:
        return text
    return json.dumps(text)


def _emit(value, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{_scalar(key)}:")
                _emit(item, indent + (1 if isinstance(item, dict) else 0), out)
            else:
                out.append(f"{pad}{_scalar(key)}: {_scalar(item) if not isinstance(item, (dict, list)) else ('{}' if isinstance(item, dict) else '[]')}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub: list[str] = []
                _emit(item, indent + 1, sub)
                first = sub[0][len(pad) + 2:]
                out.append(f"{pad}- {first}")
                out.extend(sub[1:])
            elif isinstance(item, list) and item:
                sub = []
                _emit(item, indent + 1, sub)
                out.append(f"{pad}-")
                out.extend(sub)
            else:
                out.append(f"{pad}- {_scalar(item)}")
    else:
        out.append(pad + _scalar(value))


def to_yaml(documents: list[dict], header: list[str] = ()) -> str:
    out = [f"# {line}" for line in header]
    for doc in documents:
        out.append("---")
        _emit(doc, 0, out)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Inside a pod: tfdist run --jobset
# --------------------------------------------------------------------------

#: What each pod of a Trainer v2 tf-distribute TrainJob runs before the script: its TF_CONFIG from
#: JOBSET_NAME and JOB_COMPLETION_INDEX, as :func:`jobset_workers` builds it (a fast test holds the two
#: equal), in standard-library Python the manifest carries (``python -c POD_TASK N PORT SCRIPT ARGS``):
#: the image needs TensorFlow, not tfdist.
POD_TASK = f'''\
import json, os, runpy, sys
name, index = os.environ["JOBSET_NAME"], int(os.environ["JOB_COMPLETION_INDEX"])
workers, port = int(sys.argv[1]), int(sys.argv[2])
cluster = [f"{{name}}-{NODE_JOB}-0-{{i}}.{{name}}:{{port}}" for i in range(workers)]
os.environ["TF_CONFIG"] = json.dumps({{"cluster": {{"worker": cluster}}, "task": {{"type": "worker", "index": index}}}})
sys.argv = sys.argv[3:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def jobset_workers(np: int, env, port: int | None = None, job: str = NODE_JOB):
    """The ``np`` tf.distribute workers of a JobSet's replicated job ``node``
    (one pod each, Trainer v2's layout): worker i is
    ``<JOBSET_NAME>-node-0-<i>.<JOBSET_NAME>:PORT``; this pod is worker
    ``JOB_COMPLETION_INDEX``."""
    name = env.get("JOBSET_NAME")
    index = env.get("JOB_COMPLETION_INDEX")
    if not name or index is None or not index.isdigit():
        raise launcher.HostsError("--jobset needs JOBSET_NAME and JOB_COMPLETION_INDEX (set in the pods of the "
                                  "TrainJob `tfdist job kubernetes` writes): not inside such a pod")
    if int(index) >= np:
        raise launcher.HostsError(f"JOB_COMPLETION_INDEX={index} but -np {np}")
    port = port or TF_PORT
    cluster = [f"{name}-{job}-0-{i}.{name}:{port}" for i in range(np)]
    return [launcher.Worker(rank=i, host=cluster[i].rsplit(":", 1)[0], port=port,
                            tf_config=launcher.tf_config(cluster, i), local=i == int(index)) for i in range(np)]
