"""The gold layer: per-stream grouping on Spark, group and alert tables."""
