-- Auth profiles (authprofile/): a named login per API key. Secrets and
-- logins are stored only as AES-GCM ciphertext (authprofile.Sealer): the
-- database never holds a password or a session cookie in the clear.
CREATE TABLE auth_profiles (
    id              uuid PRIMARY KEY,
    owner           text        NOT NULL, -- api key id, '' without auth
    name            text        NOT NULL,
    origins         text[]      NOT NULL,
    spec            jsonb       NOT NULL, -- login_url, steps (secret references, no values), success, logged_out
    secret_names    text[]      NOT NULL DEFAULT '{}',
    secrets         bytea,                -- sealed JSON {name: value}
    version         int         NOT NULL DEFAULT 0, -- the current login's
    last_login_at   timestamptz,
    last_failure_at timestamptz,
    last_failure    text,
    last_log        jsonb,                -- the last recipe run's action log, secrets masked
    last_test_id    uuid,                 -- the last POST /test a worker finished
    last_test_error text,                 -- its failure, '' when it logged in
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner, name)
);

-- Every login a profile had, sealed; the newest is the current one.
CREATE TABLE auth_profile_states (
    profile_id uuid        NOT NULL REFERENCES auth_profiles (id) ON DELETE CASCADE,
    version    int         NOT NULL,
    state      bytea       NOT NULL, -- sealed Playwright-style storage state
    source     text        NOT NULL, -- recipe | upload
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (profile_id, version)
);

-- An event whose body is fixed when it happens (auth_profile.failed) keeps
-- its data with the delivery; NULL: built when delivered (batch.completed).
ALTER TABLE webhook_deliveries ADD COLUMN data jsonb;
