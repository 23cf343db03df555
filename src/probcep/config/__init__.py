"""What a run is told: settings, the patterns registry, and the clock from t to time."""
