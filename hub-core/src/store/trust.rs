//! What the trust signals read (issue 33, point 5): an agent's downloads by week
//! (`download_weeks`, migration 0026, counted in the download's transaction) and its newest
//! publish.

use sqlx::AnyConnection;

use super::repo::{Result, Store};

impl Store {
    /// The agent's downloads in each week from `from_week` on (weeks as the day of their
    /// Monday, see `index_schema::hub_api::trust::week_of_day`), weeks without any left out.
    pub async fn downloads_by_week(
        &self,
        agent_id: i64,
        from_week: i64,
    ) -> Result<Vec<(i64, i64)>> {
        Ok(sqlx::query_as(
            "SELECT week, downloads FROM download_weeks WHERE agent_id = $1 AND week >= $2 \
             ORDER BY week",
        )
        .bind(agent_id)
        .bind(from_week)
        .fetch_all(self.db.read())
        .await?)
    }

    /// When the agent's newest version was published (Unix ms), if it has one.
    pub async fn last_published_at(&self, agent_id: i64) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("SELECT MAX(created_at) FROM versions WHERE agent_id = $1")
                .bind(agent_id)
                .fetch_one(self.db.read())
                .await?,
        )
    }
}

/// Counts one download of the agent in `week`, inside the download's transaction.
pub(super) async fn count_week(tx: &mut AnyConnection, agent_id: i64, week: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO download_weeks (agent_id, week, downloads) VALUES ($1, $2, 1) \
         ON CONFLICT (agent_id, week) DO UPDATE SET downloads = download_weeks.downloads + 1",
    )
    .bind(agent_id)
    .bind(week)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Deletes an agent's weekly counts, with the agent.
pub(super) async fn forget_weeks(tx: &mut AnyConnection, agent_id: i64) -> Result<()> {
    sqlx::query("DELETE FROM download_weeks WHERE agent_id = $1")
        .bind(agent_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
