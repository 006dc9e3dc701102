-- Artifacts at volume (content-addressed storage, streamed archives).
--
-- The CRC-32 of each artifact's bytes: a ZIP archive names it in each file's
-- header, so with it stored the archive's every byte (and its length) is
-- known before any object is read, and a ranged re-request can start in the
-- middle without reading what comes before. NULL for rows stored before:
-- the archive reads those objects once to compute it.
ALTER TABLE artifacts ADD COLUMN crc32 bigint;
