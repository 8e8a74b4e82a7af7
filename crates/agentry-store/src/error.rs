//! sqlx failures as [`StoreError`]s whose messages say what failed and what to do about it.

use agentry_core::StoreError;
use sqlx::migrate::MigrateError;
use std::fmt;

/// A failure of `store` while `doing` something (`saving run `r1``), with advice for its kind.
pub(crate) fn backend(store: &str, doing: impl fmt::Display, err: sqlx::Error) -> StoreError {
    StoreError::backend(store, format!("{doing}: {}", describe(&err)))
}

/// A failure of the SQLite store's own connection (its worker thread) while `doing` something.
pub(crate) fn sqlite(store: &str, doing: impl fmt::Display, err: rusqlite::Error) -> StoreError {
    let message = match &err {
        rusqlite::Error::SqliteFailure(e, _) => sqlite_code(e.extended_code, &err),
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) => format!(
            "a stored record is unreadable ({err}); the database may have been written by an \
             incompatible version of agentry-store"
        ),
        _ => format!("SQLite refused the operation ({err})"),
    };
    StoreError::backend(store, format!("{doing}: {message}"))
}

/// What went wrong, and what to do, for a SQLite result code.
fn sqlite_code(code: i32, err: &dyn fmt::Display) -> String {
    // An extended result code: its low byte is the primary one.
    match code & 0xff {
        // SQLITE_BUSY, SQLITE_LOCKED.
        5 | 6 => format!(
            "the database file stayed locked by another connection past the busy timeout \
             ({err}); retry, and check that no process keeps a long transaction open on it"
        ),
        // SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN.
        3 | 8 | 14 => format!(
            "cannot open or write the database file ({err}); check the path and that this \
             process may write it and its directory"
        ),
        // SQLITE_FULL.
        13 => format!("the disk is full ({err}); free some space"),
        _ => format!("SQLite refused the operation ({err})"),
    }
}

/// A failure to bring the schema up to date when opening `store`.
pub(crate) fn migration(store: &str, err: MigrateError) -> StoreError {
    let message = match err {
        MigrateError::Execute(err) | MigrateError::ExecuteMigration(err, _) => {
            format!("updating its schema: {}", describe(&err))
        }
        MigrateError::VersionMissing(version) => format!(
            "its schema was updated by a newer agentry-store (migration {version} is unknown to \
             this build); use that version of the program or a newer one"
        ),
        MigrateError::VersionMismatch(version) => format!(
            "migration {version} applied to the database differs from this build's; the schema \
             was changed by hand or by a modified build, so repair it or use a fresh database"
        ),
        MigrateError::Dirty(version) => format!(
            "migration {version} failed partway in an earlier attempt; repair the database by \
             hand, then open it again"
        ),
        other => format!("updating its schema failed: {other}"),
    };
    StoreError::backend(store, message)
}

/// What went wrong, and what to do, for one sqlx error.
fn describe(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Io(e) => format!(
            "cannot reach the database ({e}); check the URL or path, and that the server is \
             running and accepts connections"
        ),
        sqlx::Error::PoolTimedOut => "no database connection became available in time; check \
             that the server is running and reachable, and that no long transaction holds the \
             store's connections"
            .to_string(),
        sqlx::Error::PoolClosed => {
            "the store's connection pool is closed; open the store again".to_string()
        }
        sqlx::Error::Tls(e) => format!(
            "TLS failed ({e}); agentry-store connects without TLS, so use a server that accepts \
             plain connections (e.g. `sslmode=disable` or `prefer` in the URL)"
        ),
        sqlx::Error::Configuration(e) => format!(
            "the connection settings are invalid ({e}); check the URL, e.g. \
             postgres://user@host:5432/database"
        ),
        sqlx::Error::Database(db) => database(db.as_ref()),
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::TypeNotFound { .. } => format!(
            "a stored record is unreadable ({err}); the database may have been written by an \
             incompatible version of agentry-store"
        ),
        sqlx::Error::Migrate(e) => format!("updating the schema failed: {e}"),
        other => other.to_string(),
    }
}

/// An error the database server (or SQLite) reported, by its code.
fn database(err: &dyn sqlx::error::DatabaseError) -> String {
    let code = err.code().unwrap_or_default();
    if err
        .try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .is_some()
    {
        return sqlite_code(code.parse::<i32>().unwrap_or(0), &err);
    }
    match code.as_ref() {
        "28000" | "28P01" => {
            format!("the server refused the login ({err}); check the user and password in the URL")
        }
        "3D000" => format!("the database does not exist ({err}); create it first"),
        "42501" => format!(
            "the database user lacks a privilege ({err}); grant it the right to create and \
             write tables in this database"
        ),
        "53300" => format!(
            "the server has no connection slots left ({err}); close idle clients or raise \
             max_connections"
        ),
        _ => format!("the database refused the operation ({err})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_say_to_check_the_server() {
        let err = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let message = backend("postgres:db:5432/x", "connecting", err).to_string();
        assert!(message.contains("postgres:db:5432/x"), "{message}");
        assert!(
            message.contains("connecting: cannot reach the database"),
            "{message}"
        );
        assert!(message.contains("server is running"), "{message}");
    }

    #[test]
    fn unknown_migrations_say_to_upgrade() {
        let message = migration("sqlite:runs.db", MigrateError::VersionMissing(7)).to_string();
        assert!(message.contains("migration 7 is unknown"), "{message}");
        assert!(message.contains("newer"), "{message}");
    }
}
