-- Single sign-on (issue 15): a sign-in under way at a provider (single-use, 10 minutes), and the
-- accounts of providers linked to users.
CREATE TABLE oauth_states (
    state      TEXT PRIMARY KEY,          -- the CSRF token sent to the provider and back
    provider   TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    verifier   TEXT NOT NULL,             -- the PKCE code verifier
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE user_identities (
    provider   TEXT NOT NULL,
    subject    TEXT NOT NULL,             -- the provider's stable id of the account
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (provider, subject)
) WITHOUT ROWID;
CREATE INDEX user_identities_by_user ON user_identities(user_id);
