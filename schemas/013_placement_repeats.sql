-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 13: repeats in a placement list
-- (schemas/README.md, "placement"). A shared list of a range of k layers
-- holds the same block of items (each layer's tensors, same deltas, same
-- specs) k times over, so placement_tail grew with the square of the
-- layers: on llama-3.1-405b, 12 layers, 32x8, every variant, it was 62 % of
-- the file. In schema 6's encoding a pair (d, spec) now may be a repeat
-- (r, -p): the p pairs just before it, all literal pairs, r more times
-- (the tensors go on by the same deltas). Spec ids are positive, so a
-- negative one was never written before. approf rewrites the lists already
-- there with repeats in C as it migrates (costdb/db.c); the `placement`
-- view below expands them. The version bump keeps an older approf, which
-- reads no repeats, from opening a file that holds them.

DROP VIEW placement;

CREATE VIEW placement AS
  WITH RECURSIVE
  -- every pair of a list in schema 6's encoding (a set's own items or the
  -- shared list it references): its place e in the text, the delta d and
  -- the spec id, or a repeat (d = r, spec = -p)
  pair(sid, base, np, ni, e, d, spec) AS (
    SELECT s.rowid, coalesce(s.first_tensor, 0),
           json_extract(coalesce(t.items, s.items), '$[0]'),
           json_extract(coalesce(t.items, s.items), '$[1]'),
           (j.key - 3) / 2, max(CASE WHEN j.key % 2 = 1 THEN j.value END),
           max(CASE WHEN j.key % 2 = 0 THEN j.value END)
    FROM placement_set s LEFT JOIN placement_tail t ON t.id = s.tail_id
    JOIN json_each(coalesce(t.items, s.items)) j
    WHERE json_type(coalesce(t.items, s.items), '$[0]') = 'integer' AND j.key >= 3
    GROUP BY s.rowid, (j.key - 3) / 2),
  -- where the items of each pair start in the list: a literal is one
  -- item, a repeat r * p
  placed(sid, base, np, ni, e, d, spec, at) AS (
    SELECT sid, base, np, ni, e, d, spec,
           coalesce(sum(CASE WHEN spec < 0 THEN d * -spec ELSE 1 END)
                      OVER (PARTITION BY sid ORDER BY e
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
    FROM pair),
  -- the k-th item a repeat makes, k = 0 .. r * p - 1: a copy of the
  -- literal k % p of its block
  copy(sid, e, p, n, k) AS (
    SELECT sid, e, -spec, d * -spec, 0 FROM placed WHERE spec < 0
    UNION ALL
    SELECT sid, e, p, n, k + 1 FROM copy WHERE k + 1 < n),
  item(sid, base, np, ni, i, d, spec) AS (
    SELECT sid, base, np, ni, at, d, spec FROM placed WHERE spec >= 0
    UNION ALL
    SELECT r.sid, r.base, r.np, r.ni, r.at + c.k, l.d, l.spec
    FROM copy c JOIN placed r ON r.sid = c.sid AND r.e = c.e
    JOIN placed l ON l.sid = c.sid AND l.e = c.e - c.p + c.k % c.p)
  SELECT s.sweep_id AS sweep_id, s.start_layer AS start_layer, s.end_layer AS end_layer,
         s.submesh_index AS submesh_index, s.config_index AS config_index,
         x.ti AS tensor_index, n.text AS tensor_name,
         CASE x.r WHEN 0 THEN 'param' WHEN 1 THEN 'input' ELSE 'output' END AS role,
         sh.text AS shape, dt.text AS dtype, sp.text AS sharding_spec
  FROM (
    SELECT s.rowid AS sid, json_extract(j.value, '$[0]') AS r,
           json_extract(j.value, '$[1]') AS ti, json_extract(j.value, '$[2]') AS spec_id
    FROM placement_set s JOIN json_each(s.items) j
    WHERE s.tail_id IS NULL AND json_type(s.items, '$[0]') = 'array'
    UNION ALL
    SELECT sid, CASE WHEN i < np THEN 0 WHEN i < np + ni THEN 1 ELSE 2 END,
           base + sum(d) OVER (PARTITION BY sid ORDER BY i), spec
    FROM item
  ) x
  JOIN placement_set s ON s.rowid = x.sid
  JOIN placement_tensor t ON t.sweep_id = s.sweep_id AND t.tensor_index = x.ti
  JOIN placement_text n ON n.id = t.name_id
  JOIN placement_text sh ON sh.id = t.shape_id
  JOIN placement_text dt ON dt.id = t.dtype_id
  JOIN placement_text sp ON sp.id = x.spec_id;
