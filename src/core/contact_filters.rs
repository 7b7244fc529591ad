//! The contact list's filters beyond the email search and the subscription: a search across
//! the custom fields' values, a segment and a topic. The list (`GET /contacts`) and a bulk job
//! over a list's matches (`mode: "query"`) read them the same way.

use serde::{Deserialize, Serialize};

use crate::core::error::Result;
use crate::core::ids::SegmentId;
use crate::core::{segments, topics};
use crate::db::Tx;
use crate::db::contacts::Within;

/// The longest search across fields, in characters.
pub const MAX_Q: usize = 255;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Narrowing {
    /// Part of the email or of any custom field's value (lowercase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

impl Narrowing {
    /// The filters as given (trimmed; empty ones absent), `q` checked for length (422 on
    /// `field`).
    pub fn new(
        q: Option<&str>,
        segment: Option<&str>,
        topic: Option<&str>,
        q_field: &str,
    ) -> Result<Narrowing> {
        let given = |raw: Option<&str>| raw.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let q = given(q).map(|q| q.to_lowercase());
        if q.as_ref().is_some_and(|q| q.chars().count() > MAX_Q) {
            return Err(crate::core::Error::invalid(
                q_field,
                "too_big",
                format!("a search is at most {MAX_Q} characters"),
            ));
        }
        Ok(Narrowing { q, segment: given(segment), topic: given(topic) })
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_none() && self.segment.is_none() && self.topic.is_none()
    }

    /// Whether a count reads every contact of the project (a search across fields, a dynamic
    /// segment).
    pub fn scans(&self) -> bool {
        self.q.is_some() || self.segment.is_some()
    }

    /// The filters as restrictions of a list of `project`'s contacts at `now`: 404 for a segment
    /// or topic the project does not have.
    pub fn within(&self, conn: &Tx, project: &str, now: i64) -> Result<Vec<Within>> {
        let mut within = Vec::new();
        if let Some(q) = &self.q {
            within.push(Within::anywhere(q));
        }
        if let Some(raw) = &self.segment {
            let id = SegmentId::parse(raw).ok_or_else(|| SegmentId::missing(raw))?;
            let segment = segments::find(conn, project, &id)?;
            within.push(segments::list_filter(conn, &segment, now)?);
        }
        if let Some(id) = &self.topic {
            let topic = topics::find(conn, project, id)?;
            within.push(Within::topic(&topic.id, topic.default_opt_in));
        }
        Ok(within)
    }
}
