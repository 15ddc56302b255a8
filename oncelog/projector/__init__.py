"""The projector: the pure fold and, later, the service that runs it."""
