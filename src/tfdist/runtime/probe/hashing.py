"""Hashing (public: tests and tfdist.runtime.verify use the same definition)."""
from __future__ import annotations

import hashlib


def digest_arrays(values) -> tuple[str, float, list[str]]:
    """sha256 over arrays in order: for each, ``<dtype.str><shape>;`` then the
    C-order bytes.  Returns (hex digest, float64 sum, per-array 16-hex digests).
    Names are deliberately not hashed (Keras may number layers differently)."""
    total = hashlib.sha256()
    fsum = 0.0
    items = []
    for value in values:
        import numpy as np

        arr = np.ascontiguousarray(np.asarray(value))
        head = f"{arr.dtype.str}{tuple(arr.shape)};".encode()
        raw = arr.tobytes()
        total.update(head)
        total.update(raw)
        items.append(hashlib.sha256(head + raw).hexdigest()[:16])
        if arr.dtype.kind in "fiub":
            try:
                fsum += float(np.sum(arr, dtype=np.float64))
            except Exception:  # noqa: BLE001 - exotic dtypes
                pass
    return total.hexdigest(), fsum, items


def _row_bytes_object(row) -> bytes:
    parts = []
    for item in row.reshape(-1):
        if isinstance(item, bytes):
            parts.append(item)
        elif isinstance(item, str):
            parts.append(item.encode("utf-8"))
        else:
            parts.append(repr(item).encode("utf-8"))
    return b"\x00".join(parts)


def row_hashes(value) -> list[str] | None:
    """16-hex blake2b digests of each row (leading dimension) of ``value``,
    or None when it has no leading dimension.  Rows are hashed with their
    dtype and row shape: ``<dtype.str><row shape>;`` then the C-order bytes
    (strings: UTF-8 joined by NUL)."""
    import numpy as np

    arr = np.asarray(value)
    if arr.ndim == 0:
        return None
    head = f"{arr.dtype.str}{tuple(arr.shape[1:])};".encode()
    n = arr.shape[0]
    out = []
    if arr.dtype == object:
        for i in range(n):
            out.append(hashlib.blake2b(head + _row_bytes_object(np.asarray(arr[i], dtype=object)),
                                       digest_size=8).hexdigest())
        return out
    arr = np.ascontiguousarray(arr)
    for i in range(n):
        out.append(hashlib.blake2b(head + arr[i].tobytes(), digest_size=8).hexdigest())
    return out


def combine_row_hashes(columns: list[list[str]]) -> list[str]:
    """One hash per row for several aligned arrays (a multi-input sample)."""
    if len(columns) == 1:
        return columns[0]
    return [hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest() for parts in zip(*columns)]
