-- Issue 33 point 5, trust signals (additive: old replicas keep working on this schema).
-- An agent's downloads by week (`week`: the day, since 1970-01-01, of the week's Monday, UTC),
-- counted as `agents.downloads` is (once per client, version and UTC day) and in the same
-- transaction. Downloads before this migration are in no week. Rows go with their agent.
CREATE TABLE download_weeks (
    agent_id  BIGINT NOT NULL,
    week      BIGINT NOT NULL,
    downloads BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, week)
);
