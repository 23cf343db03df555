"""The columns of a raw reading: one per row of a long landing file, as bronze and the
quarantine keep them. Symbols may not take these names (the settings check it), so the
landing reader, the catalog and the settings share this one tuple."""

READING_COLUMNS = ("stream_id", "sensor_id", "ts", "symbol", "score")
