-- Quotas on `/v2/` (issue 13, point 6): who owns an upload session and how many bytes it has
-- staged (per-user limits on sessions and staged bytes), and the size of every blob linked to
-- a repository (a namespace's stored bytes are the sum over its repositories' links).
ALTER TABLE oci_uploads ADD COLUMN user_id BIGINT;
ALTER TABLE oci_uploads ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
CREATE INDEX oci_uploads_user ON oci_uploads(user_id, updated_at);
ALTER TABLE oci_blob_links ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE oci_blob_links SET size = COALESCE((
    SELECT MAX(v.bundle_size) FROM versions v WHERE v.bundle_digest = oci_blob_links.digest
), 0);
