"""Scale-out adapters for distributed engines. Nothing here imports an engine: import
``dpnoise.distributed.spark`` (extra ``dpnoise[spark]``) for Apache Spark."""
