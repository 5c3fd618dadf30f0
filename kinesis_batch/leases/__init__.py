"""Leases: the KCL-style lease table, the manager and the renewer."""
