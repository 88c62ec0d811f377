"""Adding a keyword argument to a call only where the user did not set it.

Small CST helpers shared by the rules: finding and editing call arguments,
list elements, parenthesisation. Formatting of the user's code is kept: new
arguments and elements copy the separators already used in the call/list."""
from __future__ import annotations

from typing import Optional
import libcst as cst


def keyword_free(ctx, call: cst.Call, keyword: str, code: str, rule: str, edit: Optional[str] = None) -> bool:
    """True when ``keyword=`` can be added to call: no ``**mapping`` argument
    of it may already pass that keyword (both would fail with "got multiple
    values for keyword argument"). Otherwise warn with the edit to make by
    hand (``edit``, else: set it in the mapping) and return False."""
    for arg in call.args:
        if arg.star != "**":
            continue
        keys = ctx.a.mapping_keys(arg.value)
        if keys is not None and keyword not in keys:
            continue
        held = "holds" if keys is not None else "may hold"
        mapping = ctx.a.code(arg.value)
        ctx.warn(arg, rule, f"**{mapping} {held} {keyword}= here, so {keyword}={code} cannot be added beside it (a "
                            f"keyword given twice fails): " + (edit.format(mapping=mapping) if edit else
                            f"set {mapping}[{keyword!r}] to {code}, keeping what it holds, by hand"))
        return False
    return True
