"""Validation of the manifests ``tfdist job kubernetes`` writes, with the
official SDKs' typed models (there is no Kubernetes cluster here):

* Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): the pydantic models
  of ``kubeflow-trainer-api`` (what the ``kubeflow`` SDK submits with);
* Training Operator v1 (``kubeflow.org/v1``): ``kubeflow-training``'s models,
  deserialised by its own ApiClient (client-side validation on);
* every core object inside them (pod templates, Job templates) with
  ``kubernetes-validate``'s Kubernetes schemas, strict (unknown fields fail).

Each document is also read back: the model's serialisation must equal the
manifest, so a misspelt or misplaced field (which the models would drop
silently) fails too."""
from __future__ import annotations

import json

import kubernetes_validate
from kubeflow.training.api_client import ApiClient
from kubeflow_trainer_api import models as trainer_models

V2_MODELS = {"TrainJob": trainer_models.TrainerV1alpha1TrainJob,
             "TrainingRuntime": trainer_models.TrainerV1alpha1TrainingRuntime}
V1_MODELS = {"TFJob": "KubeflowOrgV1TFJob", "MPIJob": "KubeflowOrgV1MPIJob"}
K8S_VERSION = kubernetes_validate.latest_version()


class _Response:
    def __init__(self, doc: dict):
        self.data = json.dumps(doc)


def sdk_round_trip(doc: dict) -> dict:
    """The document as the SDK's typed model reads and writes it back."""
    kind = doc["kind"]
    if doc["apiVersion"] == "trainer.kubeflow.org/v1alpha1":
        return V2_MODELS[kind].from_dict(doc).to_dict()
    if doc["apiVersion"] == "kubeflow.org/v1":
        client = ApiClient()
        return client.sanitize_for_serialization(client.deserialize(_Response(doc), V1_MODELS[kind]))
    raise AssertionError(f"unexpected apiVersion {doc['apiVersion']}")


def _pod(spec: dict, name: str = "check") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def core_objects(doc: dict) -> list[dict]:
    """The core Kubernetes objects inside a Kubeflow document, as standalone
    objects kubernetes-validate knows (Pods, batch/v1 Jobs)."""
    out = []
    kind, spec = doc["kind"], doc["spec"]
    if kind == "TrainingRuntime":
        for rj in spec["template"]["spec"]["replicatedJobs"]:
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": rj["name"], **rj["template"].get("metadata", {})},
                   "spec": rj["template"]["spec"]}
            out.append(job)
    elif kind == "TrainJob":
        trainer = spec["trainer"]
        container = {"name": "node", "image": trainer["image"], "command": trainer["command"]}
        if "resourcesPerNode" in trainer:
            container["resources"] = trainer["resourcesPerNode"]
        out.append(_pod({"containers": [container]}))
    else:
        replicas = spec.get("tfReplicaSpecs") or spec.get("mpiReplicaSpecs")
        for role in replicas.values():
            out.append(_pod({"restartPolicy": role.get("restartPolicy", "Never"), **role["template"]["spec"]}))
    return out


def validate(doc: dict) -> None:
    """Raise (AssertionError or the SDK's / kubernetes-validate's error) unless
    ``doc`` is a valid object of its kind."""
    back = sdk_round_trip(doc)
    assert back == doc, f"{doc['kind']}: the SDK model reads it differently:\n{json.dumps(back, indent=1)}"
    for obj in core_objects(doc):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
