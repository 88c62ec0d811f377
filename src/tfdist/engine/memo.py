"""Facts computed once per module: the ``@fact`` cache.

A fact (``tfdist.facts``) is a read-only question about one module, asked
as ``question(a, *args)`` with ``a`` the module's :class:`Analysis`. Several
rules and actions ask the same questions -- which calls build an optimizer,
where the tape loops are, which session runs train ops -- and the answer
depends only on the module and the arguments: the analysis is of the
original module, which no edit changes (edits are planned on its nodes and
applied at the end). ``@fact`` keeps each answer on the Analysis, so a
question is answered once per module and argument tuple, whoever asks.

Arguments are keys as they are: nodes hash by identity (LibCST), strings,
numbers, tuples and frozensets by value. A call with an unhashable argument
(a list, a set a caller keeps filling) is answered afresh, as before. The
cached answer is handed out as a shallow copy when it is a list, set or dict,
so a caller that extends what it got cannot change what the next caller
gets. Generators cannot be cached (their answer is used up once read):
decorating one is an error at import time.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, Tuple, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute of an Analysis (or any object a fact is asked about) that
#: holds its answers: {(question, args, kwargs): answer}.
STORE = "fact_answers"

_COPIED = (list, set, dict)


def fact(fn: F) -> F:
    """Cache ``fn(a, *args, **kwargs)`` on ``a`` (see the module docstring)."""
    if inspect.isgeneratorfunction(fn):
        raise TypeError(f"@fact cannot cache the generator {fn.__module__}.{fn.__qualname__}")

    @functools.wraps(fn)
    def answer(a, *args, **kwargs):
        store: Dict[Tuple, Any] = a.__dict__.get(STORE)
        if store is None:
            store = a.__dict__[STORE] = {}
        key = (fn, args, tuple(sorted(kwargs.items()))) if kwargs else (fn, args)
        try:
            value = store[key]
        except KeyError:
            value = store[key] = fn(a, *args, **kwargs)
        except TypeError:  # an unhashable argument: asked afresh
            return fn(a, *args, **kwargs)
        return value.copy() if isinstance(value, _COPIED) else value

    answer.is_fact = True  # type: ignore[attr-defined]
    return answer  # type: ignore[return-value]


def answers(a) -> int:
    """How many answers ``a`` holds (for tests and benchmarks)."""
    return len(a.__dict__.get(STORE) or ())
