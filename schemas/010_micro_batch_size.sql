-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 10: the micro-batch size of a sweep
-- (schemas/README.md, "sweep"). A sweep's graph is built for one
-- micro-batch, global_batch / micro_batches samples; readers recomputed that
-- quotient (and each checked its divisibility) wherever they needed it. The
-- column stores it once, as the writer knew it. Rows already there get it
-- derived: the quotient when micro_batches divides global_batch, NULL
-- (unknown) otherwise (a CSV import may give a batch and a count that do
-- not divide).

ALTER TABLE sweep ADD COLUMN micro_batch_size INTEGER
  CHECK (micro_batch_size IS NULL OR (typeof(micro_batch_size) = 'integer'
         AND micro_batch_size > 0 AND micro_batch_size * micro_batches = global_batch));

UPDATE sweep SET micro_batch_size = global_batch / micro_batches
  WHERE typeof(global_batch) = 'integer' AND typeof(micro_batches) = 'integer'
    AND micro_batches > 0 AND global_batch % micro_batches = 0;
