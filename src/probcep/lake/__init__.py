"""The lake: the table catalog, Delta reads and writes, Spark, and the expectation suites.

It knows the tables, not the pipeline steps that fill them."""
