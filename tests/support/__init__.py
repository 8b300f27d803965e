"""Helpers for tests: finding and removing what tests made on the real substrate."""
