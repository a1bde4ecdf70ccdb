"""A PrivacyBudget that records its spend calls (the tests that a release charges once)."""
from dpnoise import PrivacyBudget


class SpyBudget(PrivacyBudget):
    """A budget that records every spend call (and still enforces the budget)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.calls = []

    def spend(self, loss, count=1, **kw):
        self.calls.append((loss, count, kw))
        return super().spend(loss, count, **kw)
