"""End to end: the real Copilot CLI and SDK, the bridge on what they write (see conftest.py)."""
