"""Shared by the LDP merge tests: the same report batches aggregated three ways."""


def merged_three_ways(oracle, batches):
    """(one, left, right) for three batches: one aggregator that adds them all, and the merges
    ((∅ + a) + b) + c and ∅ + (a + (b + c)) of one aggregator per batch."""
    one = oracle.aggregator()
    for batch in batches:
        one.add(batch)
    a, b, c = (oracle.aggregator().add(x) for x in batches)
    left = oracle.aggregator().merge(a).merge(b).merge(c)
    a2, b2, c2 = (oracle.aggregator().add(x) for x in batches)
    right = oracle.aggregator().merge(a2).merge(b2.merge(c2))
    return one, left, right
