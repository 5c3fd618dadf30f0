"""Spark glue (needs the spark extra); the core library never imports it."""
