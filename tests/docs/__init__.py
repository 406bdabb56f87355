"""The manual checked: its links and paths exist, its ``$ `` examples run."""
