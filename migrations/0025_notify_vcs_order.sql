-- Reports and notifications fixed when decided (issue 26 items 2 and 3),
-- email bounded (issue 25 item 8).
--
-- A run's reports to its code host are numbered (1 its start, 2 its end,
-- 3 and up its approvals): vcs_report_seq is the last number an approval
-- took, vcs_reported_seq the last commit status (or check run state)
-- delivered, vcs_commented_seq the last pull request comment written. A
-- report older than the last delivered is dropped; a later one that finds
-- the start not delivered sends it first.
ALTER TABLE runs
    ADD COLUMN vcs_report_seq    integer NOT NULL DEFAULT 2,
    ADD COLUMN vcs_reported_seq  integer NOT NULL DEFAULT 0,
    ADD COLUMN vcs_commented_seq integer NOT NULL DEFAULT 0;

-- A notification's message, built once when the run's notifications are
-- decided: every attempt sends these bytes' content, whatever the run became
-- since (NULL: decided before this migration, built at delivery as before).
-- mail_claimed_at: when an email notification took one unit of the per-suite
-- and per-key mail budgets (SNAPQ_SMTP_MAX_PER_SUITE, SNAPQ_SMTP_MAX_PER_KEY).
ALTER TABLE notifications
    ADD COLUMN message         jsonb,
    ADD COLUMN mail_claimed_at timestamptz;
CREATE INDEX notifications_mail_claimed ON notifications (mail_claimed_at) WHERE mail_claimed_at IS NOT NULL;
