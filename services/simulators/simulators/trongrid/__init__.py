"""A TronGrid-shaped HTTP server on loopback, for the demo and the tests."""
