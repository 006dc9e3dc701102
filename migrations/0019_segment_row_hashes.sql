-- Segment manifests (issue 17): the row hashes a PNG segment's capture
-- recorded (diff.EncodeRowHashes: a quantised signature and an exact hash per
-- row, 16 bytes a row), kept with the segment's artifact row and gone with it.
-- An aligned comparison matches pages by them without decoding an image.
CREATE TABLE segment_row_hashes (
    artifact_id uuid PRIMARY KEY REFERENCES artifacts (id) ON DELETE CASCADE,
    hashes      bytea NOT NULL
);
