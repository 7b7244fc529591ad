//! Identifiers of new rows.

/// A fresh identifier for a new row: a UUIDv7, so rows made one after another sit side by side
/// in the id index (inserts append instead of landing at random pages).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
