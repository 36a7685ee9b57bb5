-- Accounts, tokens, namespaces, keys, agents, versions, outbox and audit log of the hub.
-- Times are Unix milliseconds (BIGINT) so the same queries run on SQLite and PostgreSQL.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL UNIQUE,
    password_hash TEXT,
    is_admin      BOOLEAN NOT NULL DEFAULT FALSE,
    disabled      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT  NOT NULL
);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT   NOT NULL,
    token_hash   TEXT   NOT NULL UNIQUE,
    scopes       TEXT   NOT NULL,
    namespaces   TEXT   NOT NULL,
    expires_at   BIGINT,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);

CREATE TABLE namespaces (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT   NOT NULL UNIQUE,
    created_by BIGINT NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL
);

CREATE TABLE namespace_members (
    namespace_id BIGINT NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    user_id      BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role         TEXT   NOT NULL,
    added_at     BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, user_id)
);
CREATE INDEX namespace_members_user ON namespace_members(user_id);

CREATE TABLE publisher_keys (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id BIGINT NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    key_id       TEXT   NOT NULL,
    public_key   TEXT   NOT NULL,
    added_by     BIGINT NOT NULL REFERENCES users(id),
    added_at     BIGINT NOT NULL,
    revoked_at   BIGINT,
    revoked_by   BIGINT REFERENCES users(id),
    UNIQUE (namespace_id, key_id)
);

CREATE TABLE agents (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id      BIGINT NOT NULL REFERENCES namespaces(id),
    name              TEXT   NOT NULL UNIQUE,
    handle            TEXT,
    latest_version    TEXT,
    registry_endpoint TEXT,
    registry_metadata TEXT,
    registry_key      TEXT,
    registry_token_hash TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    downloads         BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX agents_updated ON agents(updated_at, id);
CREATE INDEX agents_handle ON agents(handle);

CREATE TABLE versions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id        BIGINT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    version         TEXT   NOT NULL,
    manifest_digest TEXT   NOT NULL,
    envelope        TEXT   NOT NULL,
    key_id          TEXT   NOT NULL,
    source_kind     TEXT   NOT NULL,
    bundle_digest   TEXT,
    bundle_size     BIGINT,
    published_by    BIGINT NOT NULL REFERENCES users(id),
    token_id        BIGINT,
    created_at      BIGINT NOT NULL,
    yanked_at       BIGINT,
    yank_reason     TEXT,
    deprecated_message TEXT,
    downloads       BIGINT NOT NULL DEFAULT 0,
    UNIQUE (agent_id, version)
);

-- What search follows. `seq` is handed out from `outbox_counter` inside the writing
-- transaction, so sequence order is commit order and there are no gaps.
CREATE TABLE outbox (
    seq        BIGINT PRIMARY KEY,
    kind       TEXT   NOT NULL,
    agent      TEXT   NOT NULL,
    version    TEXT,
    created_at BIGINT NOT NULL
);
CREATE TABLE outbox_counter (
    id       INTEGER PRIMARY KEY,
    last_seq BIGINT NOT NULL
);
INSERT INTO outbox_counter (id, last_seq) VALUES (1, 0);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        BIGINT NOT NULL,
    user_id   BIGINT,
    user_name TEXT,
    token_id  BIGINT,
    action    TEXT   NOT NULL,
    target    TEXT   NOT NULL,
    detail    TEXT
);
CREATE INDEX audit_log_target ON audit_log(target);
