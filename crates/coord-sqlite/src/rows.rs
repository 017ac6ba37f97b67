//! Column decoding shared by the table modules.

use coord_domain::Timestamp;
use coord_domain::time::from_micros;
use rusqlite::Row;
use rusqlite::types::Type;
use serde_json::Value;

pub fn ts(row: &Row, idx: usize) -> rusqlite::Result<Timestamp> {
    Ok(from_micros(row.get(idx)?))
}

pub fn opt_ts(row: &Row, idx: usize) -> rusqlite::Result<Option<Timestamp>> {
    Ok(row.get::<_, Option<i64>>(idx)?.map(from_micros))
}

fn decode<T: serde::de::DeserializeOwned>(idx: usize, text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

pub fn json<T: serde::de::DeserializeOwned>(row: &Row, idx: usize) -> rusqlite::Result<T> {
    decode(idx, &row.get::<_, String>(idx)?)
}

pub fn opt_json(row: &Row, idx: usize) -> rusqlite::Result<Option<Value>> {
    match row.get::<_, Option<String>>(idx)? {
        None => Ok(None),
        Some(t) => decode(idx, &t),
    }
}

pub fn string_list(row: &Row, idx: usize) -> rusqlite::Result<Vec<String>> {
    match row.get::<_, Option<String>>(idx)? {
        None => Ok(Vec::new()),
        Some(t) => decode(idx, &t),
    }
}

pub fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

pub fn minutes_to_micros(m: i64) -> i64 {
    m * 60_000_000
}
