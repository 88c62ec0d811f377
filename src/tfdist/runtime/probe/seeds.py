"""verify --compare gives each rank its own global seed (COMPARE_SEED + the
rank), so that draws nothing fixes differ between ranks as they do on a real
cluster (an unseeded shuffle before a split stays visible).  A draw with an
operation seed (``shuffle(n, seed=1234)``, ``tf.random.normal(..., seed=7)``)
is fixed on a real cluster: without a global seed TensorFlow pairs it with
the same default graph seed on every process.  The global seed the probe set
must not make those draws differ between ranks, or the sample check would
report ranks as sharing samples that the script, run without the probe,
divides exactly (a conversion that seeds its shuffle so that every worker
draws the same order, then takes its share)."""
from __future__ import annotations

from .patch import install_patch
from .state import STATE
from .tables import TF_RANDOM_SEED

#: TensorFlow truncates seeds modulo this (random_seed._truncate_seed).
_MAXINT32 = 2**31 - 1


def install_seed_pairing(base_seed: int) -> None:
    """After the probe set this rank's global seed: an operation seed is
    paired with ``base_seed`` (the seed every rank shares) instead, as long as
    the global seed in effect is still the probe's own (the script has not
    set one)."""
    module, get_name, set_name = TF_RANDOM_SEED
    probe_seed = STATE.seed

    def make_set(orig):
        def set_random_seed(seed):
            STATE.script_seeded = True
            return orig(seed)
        return set_random_seed

    def make_get(orig):
        def get_seed(op_seed):
            seeds = orig(op_seed)
            if op_seed is None or STATE.script_seeded or seeds is None or seeds[0] is None:
                return seeds
            if probe_seed is None or seeds[0] != probe_seed % _MAXINT32:
                return seeds
            return (base_seed % _MAXINT32, seeds[1])
        return get_seed

    install_patch(module, set_name, make_set)
    install_patch(module, get_name, make_get)
