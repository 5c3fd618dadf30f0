"""Routing: one stream into many tables, each named by a field of its records
(kinesis_batch.routing.routes holds the rules; pure)."""
