"""Sample parts for the demo and the chaos harness: a downstream service and a fleet."""
