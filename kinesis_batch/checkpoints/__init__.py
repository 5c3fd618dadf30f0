"""Checkpoints: values, the two-phase store and the history."""
