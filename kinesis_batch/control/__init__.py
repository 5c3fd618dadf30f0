"""The control plane as the account's shared budget: AWS's documented limits (``limits``), the
process's pace under them (``pacing``), and how long and how visibly a run waits out a throttle
or a dropped connection (``waiting``). kinesis_batch.aws's :func:`~kinesis_batch.aws.retrying`
is the one caller."""
