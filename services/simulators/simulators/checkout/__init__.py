"""The simulated checkout of `make run`: each gateway's payment page and its signed callback."""
