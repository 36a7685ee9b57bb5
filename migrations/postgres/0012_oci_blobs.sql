-- One row per blob the hub has stored or used: garbage collection and pushes exclude each other
-- through it (see hub-server/src/oci/gc.rs). A push's or publish's committing transaction
-- claims every blob it references (`used_at` = now, only while `deleting_by` is NULL, under the
-- row's lock); gc marks a blob (`deleting_by`, `deleting_at`) in one statement that requires no
-- claim since its cutoff, then looks for references, and removes the file only while marked.
-- A file without a row (stored before this migration, or left by a crash) is registered by its
-- next use, or marked by gc like any other.
CREATE TABLE oci_blobs (
    digest      TEXT   PRIMARY KEY,
    used_at     BIGINT NOT NULL,
    deleting_by TEXT,
    deleting_at BIGINT
);
CREATE INDEX oci_blobs_deleting ON oci_blobs(deleting_at);
