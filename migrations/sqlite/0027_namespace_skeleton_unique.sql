-- Look-alike namespaces refused atomically (issue 33 follow-up). Migration 0024 refused a new
-- namespace whose skeleton was taken by reading first and inserting after, so two look-alikes
-- created at the same moment (two replicas, two connections) could both pass. From here a
-- unique index on the skeleton decides, in the insert itself (hub-core
-- `store/namespaces.rs`: `ON CONFLICT DO NOTHING`, then the refusal names the namespace
-- that holds the skeleton).
--
-- The rows already here may not fit a plain unique index, and are kept as they are:
-- * look-alikes that existed before 0024 (it kept them: "existing look-alikes stay") and any
--   pair that won the race since share a skeleton. The oldest namespace of each skeleton
--   stays in the index; the younger ones are marked `lookalike_before_0027` and left out of
--   it (a partial index). They keep their skeleton, so a new name reading like them is still
--   refused (it meets the oldest one, which holds the same skeleton in the index).
-- * a namespace made by a binary older than 0024 while a newer one had already migrated has
--   no skeleton (NULL, which no unique index compares): it gets one now, with 0024's folds.
-- Additive: an older replica's insert leaves the column FALSE and meets the index (a race it
-- loses is a unique violation, answered as a conflict).
UPDATE namespaces SET skeleton =
    REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(
        LOWER(name), '-', ''), '_', ''), 'rn', 'm'), 'vv', 'w'), '0', 'o'), '1', 'l'), 'i', 'l')
    WHERE skeleton IS NULL;
ALTER TABLE namespaces ADD COLUMN lookalike_before_0027 BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE namespaces SET lookalike_before_0027 = TRUE
    WHERE EXISTS (SELECT 1 FROM namespaces older
                  WHERE older.skeleton = namespaces.skeleton AND older.id < namespaces.id);
CREATE UNIQUE INDEX namespaces_skeleton_unique ON namespaces (skeleton)
    WHERE NOT lookalike_before_0027;
