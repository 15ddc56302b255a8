"""Wire records: the .avsc files, their models and the codecs (the layout is still written
in several places here: see issue 25 and docs/performance.md)."""
