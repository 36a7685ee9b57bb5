-- Blobs belong to repositories (issue 13, point 7). A blob is readable, mountable and
-- deletable through `/v2/<repository>/blobs/…` only when it was uploaded or mounted into that
-- repository (`oci_blob_links`) or a manifest of that repository references it
-- (`oci_blob_refs`, one row per config/layer descriptor, removed with its manifest). The
-- reference index also answers "does anything reference this blob?" without reading every
-- stored manifest.

CREATE TABLE oci_blob_refs (
    repository      TEXT NOT NULL,
    manifest_digest TEXT NOT NULL,
    blob_digest     TEXT NOT NULL,
    PRIMARY KEY (repository, manifest_digest, blob_digest),
    FOREIGN KEY (repository, manifest_digest)
        REFERENCES oci_manifests(repository, digest) ON DELETE CASCADE
);
CREATE INDEX oci_blob_refs_blob ON oci_blob_refs(blob_digest, repository);

CREATE TABLE oci_blob_links (
    repository TEXT   NOT NULL,
    digest     TEXT   NOT NULL,
    linked_at  BIGINT NOT NULL,
    PRIMARY KEY (repository, digest)
);
CREATE INDEX oci_blob_links_digest ON oci_blob_links(digest);

CREATE INDEX versions_bundle_digest ON versions(bundle_digest);

-- The manifests stored before this migration: their config and layer descriptors.
INSERT OR IGNORE INTO oci_blob_refs (repository, manifest_digest, blob_digest)
SELECT m.repository, m.digest, json_extract(CAST(m.content AS TEXT), '$.config.digest')
FROM oci_manifests m
WHERE json_valid(CAST(m.content AS TEXT))
  AND json_type(CAST(m.content AS TEXT), '$.config.digest') = 'text';

INSERT OR IGNORE INTO oci_blob_refs (repository, manifest_digest, blob_digest)
SELECT m.repository, m.digest, json_extract(l.value, '$.digest')
FROM oci_manifests m, json_each(CAST(m.content AS TEXT), '$.layers') l
WHERE json_valid(CAST(m.content AS TEXT))
  AND json_type(CAST(m.content AS TEXT), '$.layers') = 'array'
  AND json_type(l.value, '$.digest') = 'text';

-- Bundles of published versions belong to their agent's repository.
INSERT OR IGNORE INTO oci_blob_links (repository, digest, linked_at)
SELECT a.name, v.bundle_digest, v.created_at
FROM versions v JOIN agents a ON a.id = v.agent_id
WHERE v.bundle_digest IS NOT NULL;
