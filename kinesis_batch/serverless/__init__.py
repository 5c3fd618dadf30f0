"""The read step as an EMR Serverless job run: its settings, the checks made before any lease is
taken, the job run's request, its control (start, wait, cancel) and the job runs a crashed run
left behind. The other steps stay with the orchestrator, which holds and renews the leases."""
