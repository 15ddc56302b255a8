"""Wire records: the .avsc files, their models and the codecs.

The layout is not yet derived from the .avsc files alone: the models, the converters
and the fast readers and writers repeat it, and tests/schemas proves they agree.
"""
