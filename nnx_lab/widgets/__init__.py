"""Thin anywidget classes: traits (a snapshot plus small UI state), observers, and an ``_esm`` bundle."""
