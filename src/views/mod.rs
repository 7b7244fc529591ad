//! Typed views: the bodies the HTTP API answers with, as Rust types. Handlers build them,
//! webhook payloads embed them, and the OpenAPI document (`GET /openapi.json`) describes them
//! from the same types, so what is served and what is documented cannot drift apart.
//!
//! Times are ISO 8601 strings in UTC with milliseconds (`2026-11-24T12:00:00.000Z`).

pub mod ab_tests;
pub mod accounts;
pub mod analytics;
pub mod analytics_views;
pub mod billing;
pub mod branding;
pub mod campaign_report;
pub mod campaigns;
pub mod conditions;
pub mod consent;
pub mod contact_jobs;
pub mod contacts;
pub mod domains;
pub mod emails;
pub mod erasure;
pub mod events;
pub mod exports;
pub mod fields;
pub mod forms;
pub mod inbound;
pub mod outbox;
pub mod projects;
pub mod receivers;
pub mod retention;
pub mod segments;
pub mod send;
pub mod sending;
pub mod server;
pub mod smtp;
pub mod suppressions;
pub mod templates;
pub mod timeline;
pub mod topics;
pub mod track;
pub mod tracking_domains;
pub mod uploads;
pub mod usage;
pub mod warmups;
pub mod webhooks;
pub mod workflows;

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

/// Tells a field sent as `null` from one left out (which `default` makes `None`): with
/// `#[serde(default, deserialize_with = "present")]`, `Option<Option<T>>` is `None` when left
/// out and `Some(None)` when null.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `{success: true, data}`: the answer of the `/v1` endpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct Success<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
}

impl<T> Success<T> {
    pub fn new(data: T) -> Self {
        Success { success: true, data }
    }
}

/// A page of a cursor list (`?limit=&cursor=`): `cursor` fetches the next page while `hasMore`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CursorPage<T> {
    pub data: Vec<T>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub cursor: Option<String>,
    pub has_more: bool,
    /// How many there are in all; counted on the first page only (0 on later pages).
    pub total: i64,
}

impl<T> CursorPage<T> {
    pub fn new(data: Vec<T>, cursor: Option<String>, total: Option<i64>) -> Self {
        CursorPage { has_more: cursor.is_some(), data, cursor, total: total.unwrap_or(0) }
    }
}

/// A page of a numbered list (`?page=&pageSize=`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberedPage<T> {
    pub data: Vec<T>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
    pub total_pages: i64,
}

impl<T> NumberedPage<T> {
    pub fn new(data: Vec<T>, total: i64, page: i64, page_size: i64) -> Self {
        let total_pages = if total == 0 { 0 } else { (total + page_size - 1) / page_size };
        NumberedPage { data, total, page, page_size, total_pages }
    }
}
