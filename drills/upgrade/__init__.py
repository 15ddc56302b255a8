"""The rolling-upgrade drill: the previous release against the current one (``make faults``)."""
