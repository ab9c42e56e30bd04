"""PySpark sweeps over indexable configuration spaces (ARCHITECTURE.md, principle 6).

`batch` (what a range of ids yields, the `Space` protocol), `placement_space` (every cluster,
topic and draw of Kafka's placers), `groups` (every small consumer group and event, every
assignor), `vector` (NumPy twins of AdminUtils and the placement invariants), `job` (the Spark
job over id ranges), `store` (Parquet results per range, resumable) and `report` (rows per
invariant, Markdown with metric plots). Modules are imported on use: Spark executors load only
what the space they run needs.
"""
