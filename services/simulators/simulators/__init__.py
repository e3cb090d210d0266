"""Stand-ins for the outside world, for the demo and the tests: the Bot API, TronGrid and the
gateways' checkout pages. Installed beside the services for development; never in the image."""
