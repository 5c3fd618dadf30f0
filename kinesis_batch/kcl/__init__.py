"""The hand-over between a stopped KCL application and kinesis-batch (``import-kcl``,
``export-kcl``): a KCL application's lease table as KCL writes it (``table``), whether its
application is running (``liveness``), and carrying the checkpoints both ways (``handover``)."""
