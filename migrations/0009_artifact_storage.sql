-- Artifacts at volume (content-addressed storage, streamed archives).
--
-- The CRC-32 of each artifact's bytes: a ZIP archive names it in each file's
-- header, so with it stored the archive's every byte (and its length) is
-- known before any object is read, and a ranged re-request can start in the
-- middle without reading what comes before. NULL for rows stored before:
-- the archive reads those objects once to compute it.
ALTER TABLE artifacts ADD COLUMN crc32 bigint;

-- Thumbnails: a small JPEG of an image artifact (a job's first segment, a
-- comparison's diff) for lists and the dashboard. Not an artifact of its own:
-- job results list exactly what the capture made. Deleted with its artifact;
-- the orphan sweep keeps every object a thumbnail names.
CREATE TABLE thumbnails (
    artifact_id  uuid PRIMARY KEY REFERENCES artifacts (id) ON DELETE CASCADE,
    object_key   text    NOT NULL,
    content_type text    NOT NULL,
    bytes        bigint  NOT NULL,
    width        integer NOT NULL,
    height       integer NOT NULL
);
CREATE INDEX thumbnails_object_key_idx ON thumbnails (object_key);
