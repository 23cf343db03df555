"""The lake's first layers: raw readings into bronze, bronze into validated silver."""
