"""The apps wing: what dpnoise is shown and measured with, built only on the public API.

* :mod:`dpnoise.demos.data` - made-up data (people, clinics, app usage and names, Zipf items,
  the heavy-hitters ID workload), deterministic per seed;
* :mod:`dpnoise.demos.workloads` - the built-in ``dpnoise bench`` workload catalogue (registered
  with :func:`dpnoise.bench.register` when ``dpnoise bench`` first lists its workloads);
* :mod:`dpnoise.demos.tour` - the ``dpnoise demo`` tour;
* :mod:`dpnoise.demos.spark` - the telemetry scenario on a local Spark session (``dpnoise demo --spark``).

Nothing in the library imports this package; it imports the library.
"""
