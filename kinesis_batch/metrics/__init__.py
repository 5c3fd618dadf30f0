"""A run's metrics (``--metrics``): what they are (:mod:`.points`, pure), where they go (one
module per backend, behind :class:`.backend.Backend`), and :func:`.send.send_metrics`, which
the run calls once it has its report and which never fails a run."""
