-- Versions deleted by an administrator leave a tombstone: the same name and version can never
-- be published again, so a version, once seen, always means the same bytes (or nothing).
-- Keyed by name rather than agent id because deleting a whole agent removes its row too.
CREATE TABLE deleted_versions (
    agent      TEXT   NOT NULL,
    version    TEXT   NOT NULL,
    deleted_at BIGINT NOT NULL,
    PRIMARY KEY (agent, version)
);
