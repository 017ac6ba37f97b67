//! Column decoding and parameter conversion shared by the table modules.

use crate::{Fail, R};
use coord_domain::CoordError;
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;
use uuid::Uuid;

/// `now` for SQL: the injected clock's reading, or the database's own clock. Every
/// statement that needs the time takes it as `$1`. The database clock is read per
/// statement, not per transaction (`now()`): a transaction that began before another
/// committed must not stamp its later statements with an earlier time (a task would
/// look claimed before its dependency completed).
pub const NOW: &str = "COALESCE($1::timestamptz, statement_timestamp())";

pub fn get<'a, T: FromSql<'a>>(row: &'a Row, idx: usize) -> R<T> {
    row.try_get(idx).map_err(Fail::Db)
}

/// Ids were validated as UUIDs by the service; a failure here is a bug.
pub fn uuid(id: &str) -> R<Uuid> {
    Uuid::parse_str(id).map_err(|_| {
        tracing::error!(id, "postgres store received a non-UUID id");
        Fail::Coord(CoordError::internal())
    })
}

pub fn uuids(ids: &[String]) -> R<Vec<Uuid>> {
    ids.iter().map(|s| uuid(s)).collect()
}

pub fn id_text(u: Uuid) -> String {
    u.hyphenated().to_string()
}

/// Narrowing for `integer` columns; the domain bounds every such value far below.
pub fn int(v: i64) -> i32 {
    i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX })
}
