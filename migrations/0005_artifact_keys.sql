-- The orphan sweeper (jobs.Sweeper) asks which object keys an artifact row
-- names, a page of keys at a time.
CREATE INDEX artifacts_object_key_idx ON artifacts (object_key);
