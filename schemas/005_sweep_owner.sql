-- SPDX-License-Identifier: Apache-2.0
-- approf cost database, schema version 5: who is writing a sweep
-- (schemas/README.md, "sweep_owner"). A process that runs or resumes a sweep
-- takes its row in one transaction and gives it back when it stops; a
-- second writer of the same sweep is told which process holds it instead of
-- racing it (two `--resume` runs of one sweep used to collide on its rows
-- and leave a complete sweep marked interrupted). A row left by a killed
-- process is taken over: by approf itself when the holder was on this host
-- and is gone, or with `approf sweep --take-over`.

CREATE TABLE sweep_owner (
  sweep_id  INTEGER PRIMARY KEY REFERENCES sweep(id) ON DELETE CASCADE,
  pid       INTEGER NOT NULL CHECK (pid > 0),
  host      TEXT NOT NULL,
  since     TEXT NOT NULL     -- ISO 8601 UTC
);

CREATE TRIGGER strict_sweep_owner_insert BEFORE INSERT ON sweep_owner
  WHEN typeof(NEW.sweep_id) <> 'integer' OR typeof(NEW.pid) <> 'integer'
    OR typeof(NEW.host) <> 'text' OR typeof(NEW.since) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'sweep_owner: a value of the wrong type');
END;
CREATE TRIGGER strict_sweep_owner_update BEFORE UPDATE ON sweep_owner
  WHEN typeof(NEW.sweep_id) <> 'integer' OR typeof(NEW.pid) <> 'integer'
    OR typeof(NEW.host) <> 'text' OR typeof(NEW.since) <> 'text'
BEGIN
  SELECT RAISE(ABORT, 'sweep_owner: a value of the wrong type');
END;
