-- The OCI distribution API: manifests (stored byte-exact), tags, upload sessions and the
-- short-lived bearer tokens the `/v2/token` endpoint issues.

CREATE TABLE oci_manifests (
    repository    TEXT   NOT NULL,
    digest        TEXT   NOT NULL,
    media_type    TEXT   NOT NULL,
    artifact_type TEXT,
    subject       TEXT,
    content       BYTEA  NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (repository, digest)
);
CREATE INDEX oci_manifests_subject ON oci_manifests(repository, subject);

CREATE TABLE oci_tags (
    repository TEXT   NOT NULL,
    tag        TEXT   NOT NULL,
    digest     TEXT   NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (repository, tag)
);

CREATE TABLE oci_uploads (
    id         TEXT   PRIMARY KEY,
    repository TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX oci_uploads_updated ON oci_uploads(updated_at);

CREATE TABLE oci_access_tokens (
    token_hash     TEXT   PRIMARY KEY,
    api_token_hash TEXT,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX oci_access_tokens_expiry ON oci_access_tokens(expires_at);
