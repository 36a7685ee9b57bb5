-- A `/v2/token` bearer carries only what was asked for (issue 13, point 7): the namespaces of
-- the repositories the client asked to push to, comma-separated; empty or NULL: pull only.
ALTER TABLE oci_access_tokens ADD COLUMN push_namespaces TEXT;
