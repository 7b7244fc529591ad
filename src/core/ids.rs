//! Typed ids: what a row's id names, so a contact's id cannot be passed where a campaign's is
//! meant, and a text that is no id at all is refused before any query.
//!
//! Every row Tidings makes gets a UUID in its canonical text (lowercase, hyphenated:
//! `018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f`; `db::new_id`). [`parse`](ContactId::parse) takes
//! exactly that text and nothing else, so an id that parses may exist and one that does not
//! cannot: the same answer a lookup would give ([`missing`](ContactId::missing)), without the
//! lookup. Ids read back from rows are trusted ([`from_row`](ContactId::from_row)).

use std::fmt;
use std::ops::Deref;

use super::error::Error;

/// Whether `text` is a UUID written as Tidings writes them: 36 characters, lowercase hex in
/// groups of 8-4-4-4-12 separated by hyphens.
pub fn is_canonical(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// One id type per kind of row: a newtype over its text with what a not-found answer says.
macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident, |$text:pat_param| $missing:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id `text` names, if it is one (see the module's documentation).
            pub fn parse(text: &str) -> Option<Self> {
                is_canonical(text).then(|| Self(text.to_string()))
            }

            /// A fresh id for a new row.
            pub fn fresh() -> Self {
                Self(crate::db::new_id())
            }

            /// An id as a row holds it.
            pub fn from_row(text: impl Into<String>) -> Self {
                Self(text.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }

            /// What a use case answers when no row of the project has the id `text` (or
            /// `text` is no id at all).
            pub fn missing(text: &str) -> Error {
                let $text: &str = text;
                Error::NotFound($missing)
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    )*};
}

ids! {
    /// A contact of a project.
    ContactId, |_| "Contact not found".to_string();
    /// A campaign.
    CampaignId, |_| "Campaign not found".to_string();
    /// A template.
    TemplateId, |_| "Template not found".to_string();
    /// A segment, static or dynamic.
    SegmentId, |text| format!("No segment {text} in this project");
    /// A workflow.
    WorkflowId, |_| "Workflow not found".to_string();
    /// A step of a workflow.
    StepId, |_| "Step not found".to_string();
    /// A transition between two steps of a workflow.
    TransitionId, |_| "Transition not found".to_string();
    /// One run of a workflow for one contact.
    ExecutionId, |_| "Execution not found".to_string();
    /// A webhook endpoint.
    WebhookId, |_| "Webhook endpoint not found".to_string();
    /// A sender domain.
    DomainId, |_| "Domain not found".to_string();
    /// A CSV import or a bulk operation on contacts.
    ContactJobId, |_| "Job not found".to_string();
    /// A pending invitation to a project.
    InvitationId, |_| "No pending invitation with this id in the project".to_string();
    /// A dashboard user, as a member of a project.
    UserId, |_| "This user is not a member of the project".to_string();
    /// A project.
    ProjectId, |_| "Project not found".to_string();
    /// A credential of the submission listener.
    SmtpCredentialId, |_| "SMTP credential not found".to_string();
    /// A domain a project receives mail for.
    InboundDomainId, |_| "Inbound domain not found".to_string();
    /// A route of inbound mail.
    InboundRouteId, |_| "Inbound route not found".to_string();
    /// A message received.
    InboundMessageId, |_| "Inbound message not found".to_string();
    /// A subscription topic.
    TopicId, |_| "Topic not found".to_string();
    /// A signup form.
    FormId, |_| "Form not found".to_string();
    /// An entry of a project's suppression list.
    SuppressionId, |_| "Suppression not found".to_string();
    /// An erasure of a contact's data.
    ErasureId, |_| "Erasure not found".to_string();
    /// An export of a project's data.
    ExportId, |_| "Export not found".to_string();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_text_tidings_writes_is_an_id() {
        let made = ContactId::fresh();
        assert_eq!(ContactId::parse(&made).as_ref(), Some(&made));
        assert!(ContactId::parse("018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f").is_some());
        for text in [
            "",
            "nope",
            "018F2C1E-7B3A-7C4D-9E8F-0A1B2C3D4E5F",
            "018f2c1e7b3a7c4d9e8f0a1b2c3d4e5f",
            "{018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f}",
            "018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5",
            "018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f0",
            "018f2c1e_7b3a-7c4d-9e8f-0a1b2c3d4e5f",
            "018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5g",
            "018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4é",
        ] {
            assert!(ContactId::parse(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn a_missing_id_is_not_found_in_the_words_of_its_kind() {
        assert_eq!(CampaignId::missing("x").to_string(), "Campaign not found");
        assert_eq!(SegmentId::missing("x").to_string(), "No segment x in this project");
        assert_eq!(ContactId::missing("x").kind(), "not_found");
    }
}
