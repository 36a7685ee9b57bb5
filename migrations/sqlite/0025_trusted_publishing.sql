-- Issue 33, trusted publishing (additive: old replicas keep working on this schema).
-- A namespace trusts an OIDC issuer, audience and subject pattern; tokens minted for it act
-- as the owner who registered it (created_by).
CREATE TABLE trusted_publishers (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id BIGINT NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    issuer       TEXT   NOT NULL,
    audience     TEXT   NOT NULL,
    subject      TEXT   NOT NULL,
    created_by   BIGINT NOT NULL REFERENCES users(id),
    created_at   BIGINT NOT NULL,
    UNIQUE (namespace_id, issuer, audience, subject)
);
-- Every ID token exchanged, kept until it expires, so each is exchanged once: the key is the
-- SHA-256 of the issuer and its jti (or of the whole token when it has no jti).
CREATE TABLE oidc_exchanges (
    token_key    TEXT   NOT NULL PRIMARY KEY,
    expires_at   BIGINT NOT NULL,
    exchanged_at BIGINT NOT NULL
);
CREATE INDEX oidc_exchanges_expiry ON oidc_exchanges(expires_at);
-- A token minted by an exchange: from which trusted publisher, issuer and subject.
ALTER TABLE api_tokens ADD COLUMN trusted_publisher_id BIGINT;
ALTER TABLE api_tokens ADD COLUMN trusted_issuer TEXT;
ALTER TABLE api_tokens ADD COLUMN trusted_subject TEXT;
-- A version published with such a token: the issuer and subject (also logged).
ALTER TABLE versions ADD COLUMN trusted_issuer TEXT;
ALTER TABLE versions ADD COLUMN trusted_subject TEXT;
