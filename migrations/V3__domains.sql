-- Sender domains: DNS verification and the DKIM key each one signs with.

CREATE TABLE domains (
    id               TEXT PRIMARY KEY,
    project_id       TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    domain           TEXT NOT NULL,                 -- lowercase ASCII (IDNs in punycode)
    status           TEXT NOT NULL CHECK (status IN ('pending', 'verified')),
    token            TEXT NOT NULL,                 -- published as tidings-verification=<token>
    dkim_selector    TEXT NOT NULL,
    dkim_private_key TEXT NOT NULL,                 -- PKCS#8 PEM; no endpoint ever returns it
    dkim_public_key  TEXT NOT NULL,                 -- base64 DER SubjectPublicKeyInfo, the DNS p= value
    checks           TEXT,                          -- JSON of the last check: purpose -> {found, error}
    created_at       INTEGER NOT NULL,
    verified_at      INTEGER,
    last_checked_at  INTEGER,
    next_check_at    INTEGER NOT NULL,
    UNIQUE (project_id, domain)
);
CREATE INDEX domains_due ON domains(next_check_at);
CREATE INDEX domains_by_name ON domains(domain, project_id, status);
