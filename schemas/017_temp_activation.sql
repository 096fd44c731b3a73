-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 17: the activation-sized part of a
-- phase's transient bytes (schemas/README.md, "stage_profile";
-- docs/context-parallel.md, "Memory"). A cp stage is priced from its
-- dp x cp twin's entry, which holds whole sequences where a cp GPU holds
-- seq / cp tokens of each: the twin's per-token buffers (the gradients of
-- the activations, the loss's logits, a recomputed block's activations)
-- are cp times a cp GPU's, its weight-sized ones (ZeRO-3's gathered blocks,
-- a parameter's fresh gradient) are not. stage_cost gains
-- temp_activation_size: the bytes of temp_buffer_size that scale with the
-- tokens a GPU holds, which apsolve's cp step divides by cp; the rest of
-- temp_buffer_size is weight-sized. NULL when unknown or none: every row
-- written before this version, CSV imports, rows written through the
-- stage_profile view and measured peaks, for which the cp step divides no
-- transient (as before); an entry composed from single layers takes the
-- largest of its layers' (profiler/sweep/compose.c). The view
-- stage_profile is unchanged: the column is read from stage_cost.

ALTER TABLE stage_cost ADD COLUMN temp_activation_size INTEGER
  CHECK (temp_activation_size IS NULL OR
         (temp_activation_size > 0 AND temp_activation_size <= temp_buffer_size));
