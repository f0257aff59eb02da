"""Ends its process while importing (no exception to catch)."""

import os

os._exit(3)
