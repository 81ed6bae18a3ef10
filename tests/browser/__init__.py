"""Real-browser tests (a package, so its conftest.py does not clash with tests/conftest.py under --doctest-modules)."""
