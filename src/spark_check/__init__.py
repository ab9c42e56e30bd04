"""PySpark sweeps over indexable configuration spaces (issue: PySpark sweeps).

Nothing lives here yet: the package exists so the import direction
model <- reference <- invariants <- spark_check <- kcheck is fixed from the start.
"""
