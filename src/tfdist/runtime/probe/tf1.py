"""TF1 sessions and optimizers: train ops, their losses, fed samples and the
graph variables read before a session closes."""
from __future__ import annotations

import os
import weakref

from .losses import record_loss_values
from .patch import install_patch, resolve
from .samples import record_feed
from .state import STATE, ProbeBusy, probe_busy, note_error
from .tables import (KERAS_ITERATIONS_ATTR, TF1_GLOBAL_STEP, TF1_OPTIMIZER_CLASS, TF1_TRAINABLE_COLLECTION,
                     TF_OPERATION_CLASS, TF_SESSION_CLASS, TF_TENSOR_CLASS)
from .variables import graph_fetch, is_float_variable, is_graph_variable


def _tf1_losses_run(graph, fetches) -> list:
    """The losses linked to the train ops this run executes (each once)."""
    gid = id(graph)
    linked = {name: loss for (g, name), loss in STATE.tf1_losses.items() if g == gid}
    if not linked or not _runs_train_op(graph, fetches):
        return []
    if len(linked) == 1:
        return list(linked.values())
    out = []
    for name, loss in linked.items():
        saved = STATE.train_ops
        STATE.train_ops = {(gid, name)}
        try:
            if any(_depends_on_train_op(gid, op) for op in _iter_fetch_ops(graph, fetches)):
                out.append(loss)
        finally:
            STATE.train_ops = saved
    return out


def _with_fetches(args, kwargs, extra):
    """Session.run arguments with ``[fetches, extra]`` as the fetches, or (extra
    None) the user's fetches back."""
    args = list(args)
    if args:
        args[0] = [args[0], extra] if extra is not None else args[0][0]
    else:
        kwargs = dict(kwargs)
        kwargs["fetches"] = [kwargs.get("fetches"), extra] if extra is not None else kwargs["fetches"][0]
    return tuple(args), kwargs


def snapshot_session(sess) -> None:
    """Read the trainable variables (and step counters) of a TF1 session's
    graph just before it closes."""
    if STATE.pid != os.getpid():
        return
    try:
        if getattr(sess, "_closed", False) or getattr(sess, "_session", None) is None:
            return
        graph = sess.graph
        trainable = [v for v in graph.get_collection(TF1_TRAINABLE_COLLECTION) if is_float_variable(v)]
        fetches = {"trainable": [graph_fetch(v) for v in trainable]}
        step_fn = resolve(*TF1_GLOBAL_STEP)
        if step_fn is not None:
            try:
                gstep = step_fn[2](graph)
                if gstep is not None:
                    fetches["global_step"] = graph_fetch(gstep)
            except Exception:  # noqa: BLE001
                pass
        opt_iters = {}
        for opt in list(STATE.keras_optimizers):
            it = getattr(opt, KERAS_ITERATIONS_ATTR, None)
            if it is not None and is_graph_variable(it) and getattr(it, "graph", None) is graph:
                opt_iters[str(id(opt))] = graph_fetch(it)
        if opt_iters:
            fetches["opt_iters"] = opt_iters
        if not fetches["trainable"] and len(fetches) == 1:
            return
        with ProbeBusy():
            values = sess.run(fetches)
        snap = {
            "names": [getattr(v, "name", "?") for v in trainable],
            "values": values["trainable"],
            "trainable_flags": [True] * len(trainable),
            "global_step": int(values["global_step"]) if "global_step" in values else None,
            "opt_iters": {k: int(v) for k, v in values.get("opt_iters", {}).items()},
        }
        key = id(graph)
        with STATE.lock:
            if key not in STATE.graph_snapshots:
                STATE.graph_order.append(key)
            STATE.graph_snapshots[key] = snap
    except Exception as exc:  # noqa: BLE001
        note_error("session_snapshot", exc)


_OP_CLASSES: list = []      # [Operation class, Tensor class], resolved at install


def _iter_fetch_ops(graph, fetches, depth=0):
    if depth > 20 or fetches is None:
        return
    op_cls, tensor_cls = _OP_CLASSES
    if isinstance(fetches, op_cls):
        yield fetches
        return
    if isinstance(fetches, tensor_cls):
        yield fetches.op
        return
    if isinstance(fetches, (list, tuple)):
        for item in fetches:
            yield from _iter_fetch_ops(graph, item, depth + 1)
        return
    if isinstance(fetches, dict):
        for item in fetches.values():
            yield from _iter_fetch_ops(graph, item, depth + 1)
        return
    if isinstance(fetches, (str, bytes)):
        try:
            name = fetches.decode() if isinstance(fetches, bytes) else fetches
            elem = graph.as_graph_element(name)
        except Exception:  # noqa: BLE001
            return
        yield from _iter_fetch_ops(graph, elem, depth + 1)
        return
    op = getattr(fetches, "op", None)   # variables and other tensor-likes
    if isinstance(op, op_cls):
        yield op
        return
    if hasattr(fetches, "__attrs_attrs__"):
        for attr in fetches.__attrs_attrs__:
            yield from _iter_fetch_ops(graph, getattr(fetches, attr.name, None), depth + 1)


def _runs_train_op(graph, fetches) -> bool:
    gid = id(graph)
    cache = STATE.train_dep_cache
    if isinstance(fetches, _OP_CLASSES[0]):       # fast path: sess.run(train_op)
        hit = cache.get((gid, fetches.name))
        if hit is not None:
            return hit
    for op in _iter_fetch_ops(graph, fetches):
        key = (gid, op.name)
        hit = cache.get(key)
        if hit is None:
            hit = _depends_on_train_op(gid, op)
            cache[key] = hit
        if hit:
            return True
    return False


def _depends_on_train_op(gid, root) -> bool:
    train = STATE.train_ops
    seen = set()
    stack = [root]
    cache = STATE.train_dep_cache
    while stack:
        op = stack.pop()
        name = op.name
        if name in seen:
            continue
        seen.add(name)
        key = (gid, name)
        if key in train or cache.get(key) is True:
            return True
        if cache.get(key) is False and op is not root:
            continue
        for dep in op.control_inputs:
            stack.append(dep)
        for tensor in op.inputs:
            stack.append(tensor.op)
    return False


def install_session_hooks():
    """Patch TF1's Session and Optimizer classes (see the patches below)."""
    cls_mod, cls_name = TF_SESSION_CLASS
    op_found, tensor_found = resolve(*TF_OPERATION_CLASS), resolve(*TF_TENSOR_CLASS)
    if op_found is None or tensor_found is None:
        note_error("session hooks", RuntimeError("Operation/Tensor classes not found"))
        return
    _OP_CLASSES[:] = [op_found[2], tensor_found[2]]

    install_patch(cls_mod, cls_name + ".__init__", _session_init_patch)
    install_patch(cls_mod, cls_name + ".close", _session_close_patch)
    install_patch(cls_mod, cls_name + ".run", _session_run_patch)
    install_patch(cls_mod, cls_name + ".make_callable", _session_make_callable_patch)

    opt_mod, opt_name = TF1_OPTIMIZER_CLASS
    install_patch(opt_mod, opt_name + ".apply_gradients", _apply_gradients_patch)
    install_patch(opt_mod, opt_name + ".compute_gradients", _compute_gradients_patch)


def _session_init_patch(orig):
    """Session.__init__ that registers the session (its variables are read before it closes)."""
    def __init__(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        try:
            if STATE.pid == os.getpid():
                with STATE.lock:
                    STATE.sessions.append(weakref.ref(self))
        except Exception as exc:  # noqa: BLE001
            note_error("session_init", exc)
    return __init__


def _session_close_patch(orig):
    """Session.close that first reads the graph variables of the session."""
    def close(self, *args, **kwargs):
        if not probe_busy():
            snapshot_session(self)
        return orig(self, *args, **kwargs)
    return close


def _session_run_patch(orig):
    """Session.run that records the losses of the train ops it runs (verify
    --compare) and counts those runs and their feeds."""
    def run(self, *args, **kwargs):
        losses = None
        if STATE.record_losses and STATE.tf1_losses and not probe_busy():
            try:
                fetches = args[0] if args else kwargs.get("fetches")
                losses = _tf1_losses_run(self.graph, fetches)
            except Exception as exc:  # noqa: BLE001
                note_error("session_run_loss", exc)
        if losses:
            args, kwargs = _with_fetches(args, kwargs, losses)
            both = orig(self, *args, **kwargs)
            result = both[0]
            try:
                record_loss_values(both[1])
            except Exception as exc:  # noqa: BLE001
                note_error("session_run_loss_value", exc)
            args, kwargs = _with_fetches(args, kwargs, None)
        else:
            result = orig(self, *args, **kwargs)
        if STATE.train_ops and not probe_busy():
            try:
                fetches = args[0] if args else kwargs.get("fetches")
                if _runs_train_op(self.graph, fetches):
                    step = STATE.tf1_train_runs
                    STATE.tf1_train_runs += 1
                    feed = args[1] if len(args) > 1 else kwargs.get("feed_dict")
                    if feed:
                        try:
                            record_feed(feed, step)
                        except Exception as exc:  # noqa: BLE001
                            note_error("session_run_samples", exc)
            except Exception as exc:  # noqa: BLE001
                note_error("session_run", exc)
        return result
    return run


def _session_make_callable_patch(orig):
    """Session.make_callable whose callable counts the train-op runs it makes."""
    def make_callable(self, *args, **kwargs):
        fn = orig(self, *args, **kwargs)
        try:
            fetches = args[0] if args else kwargs.get("fetches")
            if STATE.train_ops and _runs_train_op(self.graph, fetches):
                inner = fn

                def counted(*a, **k):
                    out = inner(*a, **k)
                    STATE.tf1_train_runs += 1
                    return out
                return counted
        except Exception as exc:  # noqa: BLE001
            note_error("make_callable", exc)
        return fn
    return make_callable


def _apply_gradients_patch(orig):
    """Optimizer.apply_gradients that records its train op (and the loss whose gradients it applies)."""
    def apply_gradients(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        try:
            graph = getattr(result, "graph", None)
            name = getattr(result, "name", None)
            if graph is not None and name is not None and not _is_func_graph(graph):
                with STATE.lock:
                    STATE.train_ops.add((id(graph), name))
                    STATE.train_dep_cache.clear()
                    loss = STATE.tf1_pending_loss.pop(id(graph), None)
                    if loss is not None:
                        STATE.tf1_losses[(id(graph), name)] = loss
            else:
                from tensorflow.python.eager import context  # noqa: PLC0415
                if context.executing_eagerly():
                    STATE.tf1_eager_applies += 1
        except Exception as exc:  # noqa: BLE001
            note_error("tf1_apply_gradients", exc)
        return result
    return apply_gradients


def _compute_gradients_patch(orig):
    """Optimizer.compute_gradients that remembers the loss, for the train op applying its gradients."""
    def compute_gradients(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        if STATE.record_losses:
            try:
                loss = args[0] if args else kwargs.get("loss")
                graph = getattr(loss, "graph", None)
                if graph is not None and not _is_func_graph(graph) and hasattr(loss, "op"):
                    STATE.tf1_pending_loss[id(graph)] = loss
            except Exception as exc:  # noqa: BLE001
                note_error("tf1_compute_gradients", exc)
        return result
    return compute_gradients


def _is_func_graph(graph) -> bool:
    return type(graph).__name__ == "FuncGraph" or getattr(graph, "building_function", False)
