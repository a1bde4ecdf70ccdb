Generator = None
def default_rng(seed=None): pass
