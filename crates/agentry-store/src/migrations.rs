//! The schema migrations shipped with the crate, embedded in the binary.
//!
//! They are built from `include_str!` rather than with `sqlx::migrate!`, which would pull in
//! sqlx's macro crate (and the database drivers a second time, for the build host).

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// The table recording which migrations a database has had: a name of its own, so the store can
/// share a database with an application that runs its own sqlx migrations.
const TABLE: &str = "agentry_store_migrations";

/// The SQLite schema's migrations.
pub(crate) fn sqlite() -> Migrator {
    migrator(vec![
        migration(
            1,
            "runs",
            include_str!("../migrations/sqlite/0001_runs.sql"),
        ),
        migration(
            2,
            "message log",
            include_str!("../migrations/sqlite/0002_message_log.sql"),
        ),
        migration(
            3,
            "cancel requests",
            include_str!("../migrations/sqlite/0003_cancel_requests.sql"),
        ),
        migration(
            4,
            "revisions",
            include_str!("../migrations/sqlite/0004_revisions.sql"),
        ),
        migration(
            5,
            "blobs",
            include_str!("../migrations/sqlite/0005_blobs.sql"),
        ),
    ])
}

/// The PostgreSQL schema's migrations.
pub(crate) fn postgres() -> Migrator {
    migrator(vec![
        migration(
            1,
            "runs",
            include_str!("../migrations/postgres/0001_runs.sql"),
        ),
        migration(
            2,
            "message log",
            include_str!("../migrations/postgres/0002_message_log.sql"),
        ),
        migration(
            3,
            "cancel requests",
            include_str!("../migrations/postgres/0003_cancel_requests.sql"),
        ),
        migration(
            4,
            "revisions",
            include_str!("../migrations/postgres/0004_revisions.sql"),
        ),
        migration(
            5,
            "blobs",
            include_str!("../migrations/postgres/0005_blobs.sql"),
        ),
    ])
}

fn migration(version: i64, description: &'static str, sql: &'static str) -> Migration {
    Migration::new(
        version,
        description.into(),
        MigrationType::Simple,
        sql.into_sql_str(),
        false,
    )
}

fn migrator(migrations: Vec<Migration>) -> Migrator {
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.dangerous_set_table_name(TABLE);
    migrator
}
