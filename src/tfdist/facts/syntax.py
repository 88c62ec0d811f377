"""Small questions about one node that every fact asks: a call's arguments, its method name, its
receiver.

Small CST helpers shared by the rules: finding and editing call arguments,
list elements, parenthesisation. Formatting of the user's code is kept: new
arguments and elements copy the separators already used in the call/list."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine.scopes import walk
from ..engine import analysis as A


Keywords = Union[str, Tuple[str, ...]]


def positional(call: cst.Call) -> List[cst.Arg]:
    out = []
    for a in call.args:
        if a.keyword is not None or a.star:
            break
        out.append(a)
    return out


def find_arg(call: cst.Call, keyword: Keywords = (), position: Optional[int] = None) -> Optional[cst.Arg]:
    keys = (keyword,) if isinstance(keyword, str) else keyword
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keys:
            return a
    if position is not None:
        pos = positional(call)
        if position < len(pos):
            return pos[position]
    return None


def fit_position(call: cst.Call, key: str) -> Optional[int]:
    """Where fit() -- or fit_generator(), whose parameters stand elsewhere --
    takes fit()'s parameter ``key`` positionally (None: it has no such one)."""
    table = apis.KERAS_FIT_GENERATOR_POSITIONS if method_name(call) == "fit_generator" else apis.KERAS_FIT_POSITIONS
    return table.get(key)


def fit_arg(call: cst.Call, key: str) -> Optional[cst.Arg]:
    """The argument of fit()/fit_generator() that is fit()'s ``key``
    (``generator=`` of fit_generator() for x)."""
    return find_arg(call, apis.KERAS_FIT_KEYWORDS.get(key, key), fit_position(call, key))


@fact
def find_passed(a, call: cst.Call, keyword: str, position: Optional[int] = None):
    """find_arg, or else the element of a ``**mapping`` of call whose keys
    tfdist can read (``compile(**train_config)``, ``train_config =
    dict(optimizer=opt, ...)``) that passes keyword: its ``.value`` is the
    argument either way, and editing it edits what the call gets."""
    arg = find_arg(call, keyword, position)
    if arg is not None:
        return arg
    for star in call.args:
        if star.star == "**":
            element = a.mapping_value(star.value, keyword)
            if element is not None:
                return element
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def _bare_break(ws):
    """A line break as a separator, without the comment or blank lines it carried."""
    return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])


def append_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """Add an argument at the end, in the call's own layout: on a line of its
    own, indented like the others, when the call has one argument per line or
    its ")" on a line of its own (and the last argument starts a line), else on
    the line of the last argument. Comments stay on their lines, and
    what stood before the closing parenthesis (a line break, a trailing comma)
    stays there."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    before_last = args[-2].comma.whitespace_after if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma) \
        else call.whitespace_before_args
    closing = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else last.whitespace_after_arg
    one_per_line = all(isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace) for a in args[:-1])
    # own lines: one argument per line, or ")" on a line of its own; a call wrapped where a line
    # filled up ("a, b,\n c)") gets its new arguments on its last line
    broken = isinstance(before_last, cst.ParenthesizedWhitespace) and (
        one_per_line or isinstance(closing, cst.ParenthesizedWhitespace))
    sep = _bare_break(before_last) if broken else cst.SimpleWhitespace(" ")
    if isinstance(last.comma, cst.Comma):  # a trailing comma: it stays last, with what follows it
        if isinstance(closing, cst.ParenthesizedWhitespace) and broken:
            kept = closing.with_changes(indent=sep.indent, last_line=sep.last_line)  # the comment stays
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=kept))
            args.append(arg.with_changes(comma=last.comma.with_changes(whitespace_after=_bare_break(closing))))
        else:
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=sep))
            args.append(arg.with_changes(comma=last.comma))
        return call.with_changes(args=args)
    if isinstance(closing, cst.ParenthesizedWhitespace):
        if closing.first_line.comment is not None or closing.empty_lines:
            # "x=1  # note" then ")": the note stays after x=1, the new argument starts the next line
            sep = closing.with_changes(indent=sep.indent, last_line=sep.last_line) if broken else closing
        args[-1] = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""),
                                     comma=cst.Comma(whitespace_after=sep))
        args.append(arg.with_changes(whitespace_after_arg=_bare_break(closing)))
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=sep))
        args.append(arg.with_changes(whitespace_after_arg=closing) if closing.value else arg)
        if closing.value:
            args[-2] = args[-2].with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=args)


def kwarg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def prepend_elements(node: Union[cst.List, cst.Tuple], values: Sequence[cst.BaseExpression],
                     layout: Optional[Union[cst.List, cst.Tuple]] = None):
    """Put values first in a list literal, separated like its own elements.

    ``layout`` is the list whose separators to copy (the original, when
    ``node`` already lost elements).
    """
    layout = layout or node
    elements = list(node.elements)
    orig = list(layout.elements)
    if len(orig) >= 2 and isinstance(orig[0].comma, cst.Comma):
        sep = orig[0].comma.whitespace_after
    elif orig and isinstance(layout.lbracket.whitespace_after, cst.ParenthesizedWhitespace):
        sep = layout.lbracket.whitespace_after  # one element per line
    else:
        sep = cst.SimpleWhitespace(" ")
    new = [cst.Element(v, comma=cst.Comma(whitespace_after=sep)) for v in values]
    if not elements:
        new[-1] = new[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(elements=new + elements)


_ATOMS = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
    cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.List, cst.Tuple, cst.Dict, cst.Set,
)
_TIGHT_OPS = (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


def needs_parens(expr: cst.BaseExpression) -> bool:
    """Would ``expr * x`` change what expr means?"""
    if expr.lpar:
        return False
    if isinstance(expr, _ATOMS):
        return False
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _TIGHT_OPS):
        return False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return False
    return True


def source(module: cst.Module, expr: cst.BaseExpression, for_operand: bool = True) -> str:
    text = module.code_for_node(expr)
    if for_operand and needs_parens(expr):
        return f"({text})"
    return text


def receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    """``obj`` in ``obj.method(...)``."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


@fact
def is_optimizer_step(a, call: cst.Call) -> bool:
    """``opt.apply_gradients(...)``, or ``opt.apply(grads, vars)`` on what is
    known to be a Keras optimizer (apis.OPTIMIZER_APPLY_METHODS); not a method
    of that name of a user class that is no optimizer (a GAN model's own
    ``apply_gradients`` running its optimizers)."""
    name = method_name(call)
    if name not in apis.OPTIMIZER_APPLY_METHODS:
        return False
    if a.is_kind(receiver(call), A.KERAS_OPTIMIZER):
        return True
    return name not in apis.GENERIC_APPLY_METHODS and not a.methods_called(call)


@fact
def names_a_field(a, name: cst.Name) -> bool:
    """``layers`` in ``tf.keras.layers``, ``units`` in ``Dense(units=4)``:
    the name of an attribute or a keyword, not a read of a variable."""
    parent = a.parent(name)
    return (isinstance(parent, cst.Attribute) and parent.attr is name) or \
        (isinstance(parent, cst.Arg) and parent.keyword is name)


def mentions(node: cst.CSTNode, names) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk(node))


def calls_in(node: cst.CSTNode) -> List[cst.Call]:
    return [n for n in walk(node) if isinstance(n, cst.Call)]
