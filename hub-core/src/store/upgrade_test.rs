//! One migration more than this commit has, for the rolling-upgrade test only (cargo feature
//! `upgrade-test-migration`, never in a release): the `ofc-hub-next` example built with it is
//! "the new binary" that `tests/tests/it/deploy_e2e.rs` rolls three replicas onto while the
//! old ones keep serving the migrated database. The migration is the kind a real release may
//! make while older replicas still run: additive only (a new nullable column on a table every
//! publish writes, a new table), so the old binary's statements keep working.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// Its version: after every real migration (they count up from 0001).
pub const VERSION: i64 = 9000;

/// Its description, as `_sqlx_migrations` records it.
pub const DESCRIPTION: &str = "upgrade test: additive columns and table";

const SQL: &str = "ALTER TABLE versions ADD COLUMN upgrade_note TEXT;\n\
                   CREATE TABLE upgrade_probe (id INTEGER PRIMARY KEY, note TEXT NOT NULL);\n";

/// `migrator` with the upgrade-test migration appended.
pub(crate) fn extend(migrator: Migrator) -> Migrator {
    let mut migrations = migrator.migrations.to_vec();
    migrations.push(Migration::new(
        VERSION,
        Cow::Borrowed(DESCRIPTION),
        MigrationType::Simple,
        Cow::Borrowed(SQL),
        false,
    ));
    Migrator {
        migrations: Cow::Owned(migrations),
        ..migrator
    }
}
