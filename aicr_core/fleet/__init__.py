"""One command over many clusters: its sources, choosing them, fanning out, the runner (a read, a write, the waves)
spoken in values, and its one command-line side (`flags`)."""
