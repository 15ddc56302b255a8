"""Wire records: the .avsc files, their models and the codecs.

The .avsc files are the one source of the layout: ``layout`` loads them and checks
the models against them at import, and the fast readers (``inline_reader``), the
writers (``record_writer``) and the dict forms (``convert``) are generated from them.
"""
