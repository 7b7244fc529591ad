//! Subscription topics (issue 32).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::topics::Topic as Row;

/// What a project's marketing mail is about; each contact is subscribed to it or not.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topic {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// A contact that made no choice is subscribed.
    pub default_opt_in: bool,
    /// Listed on the preference centre and offered by forms.
    pub public: bool,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for Topic {
    fn from(t: &Row) -> Self {
        Topic {
            id: t.id.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            default_opt_in: t.default_opt_in,
            public: t.public,
            created_at: iso(t.created_at),
            updated_at: iso(t.updated_at),
        }
    }
}

/// The body of `POST /topics` and `PATCH /topics/:id` (absent fields are kept, or default).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Product news", "description": "New features, once a month", "defaultOptIn": true }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopicFields {
    /// 1 to 200 characters, unique in the project; required to create.
    pub name: Option<String>,
    /// At most 500 characters; empty clears it.
    pub description: Option<String>,
    /// Default `false`.
    pub default_opt_in: Option<bool>,
    /// Default `true`.
    pub public: Option<bool>,
}

impl From<TopicFields> for crate::core::topics::Settings {
    fn from(f: TopicFields) -> Self {
        crate::core::topics::Settings {
            name: f.name,
            description: f.description,
            default_opt_in: f.default_opt_in,
            public: f.public,
        }
    }
}
