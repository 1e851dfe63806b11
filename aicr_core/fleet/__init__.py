"""One command over many clusters: choosing them, fanning out, waves."""
