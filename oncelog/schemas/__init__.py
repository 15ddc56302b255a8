"""Wire records: the .avsc files are the source of truth."""
