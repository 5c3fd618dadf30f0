"""Shards: listing, lineage and the bounded reader."""
