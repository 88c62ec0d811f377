"""The binding model: which bindings of a name reach a use (engine/reaching.py).

A notebook or script is read in execution order: a use sees the last
binding run before it; a binding that only *may* have run (in an ``if``,
a loop, a ``try``) is kept with what came before it; what cannot be
decided (a function reading a global that is not only called directly by
module-level code, ``global`` rebinding, a walrus, a use inside ``try``)
keeps every binding -- never a guess.
"""
import textwrap

import libcst as cst

from tfdist.engine.analysis import Analysis


def _analysis(src: str) -> Analysis:
    return Analysis(cst.parse_module(textwrap.dedent(src)))


def _use(a: Analysis, line: int, name: str, nth: int = 0) -> cst.Name:
    uses = sorted((n for n in a.scopes.access_index if n.value == name and a.line(n) == line), key=a.col)
    assert uses, f"no use of {name} on line {line}"
    return uses[nth]


def reach(src: str, line: int, name: str, nth: int = 0):
    """Lines of the bindings of name that reach its use on line (None: undecided)."""
    a = _analysis(src)
    found = a.reaching.bindings(_use(a, line, name, nth))
    return None if found is None else [a.line(b.node) for b in found]


def values(src: str, line: int, name: str):
    """Lines of what assigned_values (the rules' view) gives for the use."""
    a = _analysis(src)
    return [a.line(origin) for origin, _ in a.assigned_values(_use(a, line, name))]


def test_straight_line_last_binding_reaches():
    src = """\
    callbacks = [a()]
    fit(callbacks)
    callbacks = [b()]
    fit(callbacks)
    callbacks = [c()]
    """
    assert values(src, 2, "callbacks") == [1]
    assert values(src, 4, "callbacks") == [3]


def test_rebinding_from_itself_reads_the_binding_before():
    src = """\
    ds = source()
    ds = ds.map(f)
    ds = ds.batch(32)
    fit(ds)
    """
    assert reach(src, 4, "ds") == [3]
    assert reach(src, 3, "ds") == [2]
    assert reach(src, 2, "ds") == [1]


def test_small_statements_of_one_line_are_in_order():
    src = """\
    x = 1
    x = 2; use(x); x = 3
    """
    assert reach(src, 2, "x") == [2]


def test_binding_in_if_may_have_run():
    src = """\
    callbacks = [a()]
    if flag:
        callbacks = [b()]
    fit(callbacks)
    """
    assert reach(src, 4, "callbacks") == [1, 3]


def test_if_else_branches_both_kept_and_the_one_before_too():
    src = """\
    opt = a()
    if flag:
        opt = b()
    elif other:
        opt = c()
    else:
        use(opt)
    compile(opt)
    """
    assert reach(src, 8, "opt") == [1, 3, 5]
    assert reach(src, 7, "opt") == [1]  # the branches before it are not taken


def test_use_inside_a_branch_after_a_binding_there():
    src = """\
    model = a()
    model = b()
    if flag:
        model = c()
        fit(model)
    """
    assert reach(src, 5, "model") == [4]


def test_loop_body_sees_its_own_later_bindings():
    src = """\
    x = start()
    for i in range(3):
        fit(x)
        x = x.more()
    """
    assert reach(src, 3, "x") == [1, 4]


def test_loop_body_binding_before_the_use_kills_the_rest():
    src = """\
    model = a()
    for units in [16, 64]:
        model = build(units)
        model.fit()
    model.save()
    """
    assert reach(src, 4, "model") == [3]
    assert reach(src, 5, "model") == [1, 3]  # the loop may not have run


def test_loop_target_binds_before_each_iteration():
    src = """\
    lr = 1.0
    for lr in rates:
        use(lr)
    """
    assert reach(src, 3, "lr") == [2]


def test_with_body_runs_whole():
    src = """\
    model = a()
    with tf.device("/cpu:0"):
        model = b()
    fit(model)
    """
    assert reach(src, 4, "model") == [3]


def test_try_is_not_decided():
    src = """\
    model = a()
    try:
        model = b()
        fit(model)
    except ValueError:
        fit(model)
    fit(model)
    """
    assert reach(src, 4, "model") == [3]  # straight-line inside the try body
    assert reach(src, 6, "model") is None  # how far the try body ran: not decided
    assert reach(src, 7, "model") == [1, 3]  # after it: the try's bindings may have run


def test_function_reading_a_global_sees_the_bindings_live_at_its_calls():
    src = """\
    callbacks = [a()]
    def train():
        fit(callbacks)
    train()
    callbacks = [b()]
    train()
    """
    assert reach(src, 3, "callbacks") == [1, 5]  # each call runs it with the binding live then
    once = "callbacks = [a()]\ndef train():\n    fit(callbacks)\ncallbacks = [b()]\ntrain()\n"
    assert reach(once, 3, "callbacks") == [4]
    assert values(once, 3, "callbacks") == [4]


def test_notebook_redefining_a_step_function_and_its_global():
    # cell after cell: an optimizer and the function using it, both defined again
    src = """\
    optimizer = SGD(0.1)
    def run_optimization(x):
        optimizer.apply_gradients(x)
    for step in range(10):
        run_optimization(step)
    optimizer = Adam(0.01)
    def run_optimization(x):
        optimizer.apply_gradients(x)
    for step in range(10):
        run_optimization(step)
    """
    assert reach(src, 3, "optimizer") == [1]
    assert reach(src, 8, "optimizer") == [6]


def test_function_reading_a_global_called_elsewhere_is_not_decided():
    # called from another function, handed on, or never called: every binding
    for tail in ("def outer():\n    train()\nouter()\n", "schedule(train)\n", ""):
        src = "callbacks = [a()]\ndef train():\n    fit(callbacks)\ncallbacks = [b()]\n" + tail
        assert reach(src, 3, "callbacks") is None, tail
        assert values(src, 3, "callbacks") == [1, 4], tail


def test_global_rebound_in_a_function_is_not_decided():
    src = """\
    opt = a()
    def reset():
        global opt
        opt = b()
    opt = c()
    reset()
    compile(opt)
    """
    assert reach(src, 7, "opt") is None


def test_walrus_is_not_decided():
    src = """\
    ds = a()
    ds = b()
    if (ds := c()) is not None:
        pass
    fit(ds)
    """
    assert reach(src, 5, "ds") is None


def test_function_locals_and_parameters():
    src = """\
    def main(optimizer):
        compile(optimizer)
        optimizer = make()
        compile(optimizer)
        if flag:
            optimizer = other()
        compile(optimizer)
    """
    assert reach(src, 2, "optimizer") == [1]
    assert reach(src, 4, "optimizer") == [3]
    assert reach(src, 7, "optimizer") == [3, 6]


def test_parameter_reaches_past_a_conditional_rebinding():
    src = """\
    def main(optimizer):
        if optimizer is None:
            optimizer = make()
        compile(optimizer)
    """
    assert reach(src, 4, "optimizer") == [1, 3]


def test_redefined_function_resolves_to_the_definition_run_last():
    src = """\
    def build():
        return a()
    model = build()
    def build():
        return b()
    model = build()
    """
    assert reach(src, 3, "build") == [1]
    assert reach(src, 6, "build") == [4]


def test_imports_rebind():
    src = """\
    from keras import optimizers
    optimizers = None
    from tensorflow.keras import optimizers
    use(optimizers)
    """
    assert reach(src, 4, "optimizers") == [3]


def test_types_follow_the_reaching_model():
    a = _analysis("""\
    import tensorflow as tf
    model = tf.keras.Sequential()
    model.fit(x)
    model = tf.keras.models.load_model("m.keras")
    model.evaluate(x)
    """)
    first = _use(a, 3, "model")
    second = _use(a, 5, "model")
    assert {t.name for t in a.types(first)} == {"keras.Sequential"}
    assert {t.name for t in a.types(second)} != {"keras.Sequential"}


def test_every_binding_is_kept_where_rules_ask_for_all():
    src = """\
    x = load()
    x = x / 255.0
    fit(x)
    """
    a = _analysis(src)
    use = _use(a, 3, "x")
    assert [a.line(o) for o, _ in a.assigned_values(use)] == [2]
    assert [a.line(o) for o, _ in a.assigned_values(use, reaching=False)] == [1, 2]


def test_a_with_as_binding_hides_the_earlier_one():
    # Two tapes named alike in one step (a GAN's discriminator, then its
    # generator): the second block's ``as tape`` always runs, so a use after
    # it sees only that tape.
    src = """\
    def step():
        with tf.GradientTape() as tape:
            d = 1
        g1 = tape.gradient(d, [])
        with tf.GradientTape() as tape:
            g = 2
        g2 = tape.gradient(g, [])
    """
    assert reach(src, 4, "tape") == [2]
    assert reach(src, 7, "tape") == [5]


def test_a_use_in_a_with_body_sees_only_its_as_binding():
    # Progress bars bound by ``with trange(...) as steps`` cell after cell:
    # the loop in the second block iterates the second block's steps, even
    # inside an epoch loop (the with runs again before every iteration's use).
    src = """\
    with trange(1, n + 1) as steps:
        for step in steps:
            train()
    for epoch in range(3):
        with trange(1, m + 1) as steps:
            x = 1
            for step in steps:
                train()
    with open("log") as f:
        if cond:
            f = other()
        f.write("x")
    """
    assert reach(src, 2, "steps") == [1]
    assert reach(src, 7, "steps") == [5]
    assert reach(src, 12, "f") == [9, 11]   # a binding in the body that may have run stays
