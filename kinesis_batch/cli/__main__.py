"""``python -m kinesis_batch.cli``, as the ``kinesis-batch`` script."""

import sys

from kinesis_batch.cli import main

sys.exit(main())
