"""probcep: complex event processing over uncertain sensor data."""

__version__ = "0.1.0"
