"""Changes: a stream of changes (DynamoDB, AWS DMS, Debezium, any keyed events) applied to a
table of current state, one row per live key, exactly once.

The stage runs after decoding, in the Spark tasks: an envelope (:mod:`.dynamodb`, :mod:`.dms`,
:mod:`.debezium`) or the user's key (``--changes upsert``) makes each record a change (its key,
its operation, its place in its key's order: :mod:`.model`), and a page's changes of one key
collapse to the newest (:mod:`.fold`). At publish, the batch's changes fold again across its
shards, are compared with what the table and its tombstones hold for their keys (:mod:`.apply`),
and the newer ones are merged into the table in one commit with the batch's marker
(kinesis_batch.output.merge). Every function here but the tombstone store is pure.
"""
