-- Reflow-aware comparison (issue 17): how a comparison was made, how far its
-- content moved since the baseline, and the page's non-equal hunks touching it.
ALTER TABLE comparisons
    ADD COLUMN diff_mode  text    NOT NULL DEFAULT 'pixel' CHECK (diff_mode IN ('pixel', 'aligned')),
    ADD COLUMN shifted_px integer NOT NULL DEFAULT 0,
    ADD COLUMN hunks      jsonb   NOT NULL DEFAULT '[]';
