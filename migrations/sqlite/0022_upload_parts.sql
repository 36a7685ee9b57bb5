-- Upload sessions any replica continues (issue 30): each chunk of a chunked `/v2/` upload is
-- stored in the shared blob backend as a part (the shared directory, or the upstream registry)
-- and recorded here, in upload order (`start` is its first byte). A chunk is appended only
-- when the session still holds `start` bytes (a compare-and-set on `oci_uploads.bytes`), and
-- the session is finished, cancelled or expired by one `DELETE` that one replica wins; the
-- parts go with it.
CREATE TABLE oci_upload_parts (
    upload_id TEXT   NOT NULL REFERENCES oci_uploads(id) ON DELETE CASCADE,
    start     BIGINT NOT NULL,
    size      BIGINT NOT NULL,
    digest    TEXT   NOT NULL,
    name      TEXT   NOT NULL,
    PRIMARY KEY (upload_id, start)
);
-- Sessions opened before this migration staged their bytes on one replica's disk, outside any
-- part: they end here (a client starts a new upload; `ofc-hub gc` removes the old staged files).
DELETE FROM oci_uploads;
