"""Scenarios: small programs that put one mechanism of the framework on show."""
