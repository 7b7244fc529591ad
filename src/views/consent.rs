//! Double opt-in and proof of consent as the API shows them (issue 32, item 3).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::consent::{Confirmation, Consent, Settings};

/// What a producer says of the contact's consent: kept as its proof, per subscription.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsentBody {
    /// The words the person agreed to, as shown to them (at most 2,000 characters).
    pub text: Option<String>,
    /// The person's IP address (the caller's own when a browser calls with the public key).
    pub ip: Option<String>,
    /// The person's browser (the caller's own when a browser calls with the public key).
    pub user_agent: Option<String>,
}

impl ConsentBody {
    pub fn parts(self) -> (Option<String>, Option<String>, Option<String>) {
        (self.text, self.ip, self.user_agent)
    }
}

/// A subscription waiting for the contact to confirm it by mail.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingConfirmation {
    /// Topic ids the confirmation adds, besides marketing mail.
    pub topics: Vec<String>,
    /// `api`, `form` or `import`.
    pub method: String,
    pub form_id: Option<String>,
    #[schema(format = DateTime)]
    pub requested_at: String,
    #[schema(format = DateTime)]
    pub mailed_at: Option<String>,
    /// The link stops working then; a new request mails a new one.
    #[schema(format = DateTime)]
    pub expires_at: String,
}

impl From<&Confirmation> for PendingConfirmation {
    fn from(c: &Confirmation) -> Self {
        PendingConfirmation {
            topics: c.topics.clone(),
            method: c.proof.method.clone(),
            form_id: c.proof.form_id.clone(),
            requested_at: iso(c.requested_at),
            mailed_at: c.mailed_at.map(iso),
            expires_at: iso(c.expires_at),
        }
    }
}

/// One grant of a contact's consent record: marketing mail (`topicId` null) or one topic.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsentRecord {
    pub topic_id: Option<String>,
    /// The topic's name when the consent was given.
    pub topic: Option<String>,
    /// `api`, `form`, `import`, `preference_centre` or `dashboard`.
    pub method: String,
    pub form_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// The words the person agreed to.
    pub consent_text: Option<String>,
    #[schema(format = DateTime)]
    pub requested_at: String,
    /// When the mailed link was followed and its button pressed (double opt-in); null for a
    /// single opt-in.
    #[schema(format = DateTime)]
    pub confirmed_at: Option<String>,
    pub confirm_ip: Option<String>,
    pub confirm_user_agent: Option<String>,
}

impl From<&Consent> for ConsentRecord {
    fn from(c: &Consent) -> Self {
        ConsentRecord {
            topic_id: c.topic_id.clone(),
            topic: c.topic_name.clone(),
            method: c.proof.method.clone(),
            form_id: c.proof.form_id.clone(),
            ip: c.proof.ip.clone(),
            user_agent: c.proof.user_agent.clone(),
            consent_text: c.proof.consent_text.clone(),
            requested_at: iso(c.requested_at),
            confirmed_at: c.confirmed_at.map(iso),
            confirm_ip: c.confirm_ip.clone(),
            confirm_user_agent: c.confirm_user_agent.clone(),
        }
    }
}

/// `GET /contacts/{id}/consents`: the open request, and the latest grants, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactConsents {
    pub pending: Option<PendingConfirmation>,
    pub records: Vec<ConsentRecord>,
}

/// A project's audience settings.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudienceSettings {
    /// New subscribers from forms confirm by mail, unless a form says otherwise.
    pub double_opt_in: bool,
    /// The template of the confirmation mail (`{{ confirmUrl }}`, `{{ projectName }}`); the
    /// built-in text when null.
    pub confirmation_template_id: Option<String>,
    /// The built-in mail's sender, at a verified domain; `noreply@` the project's first
    /// verified domain when null.
    #[schema(format = Email)]
    pub confirmation_from: Option<String>,
}

impl From<&Settings> for AudienceSettings {
    fn from(s: &Settings) -> Self {
        AudienceSettings {
            double_opt_in: s.double_opt_in,
            confirmation_template_id: s.confirmation_template_id.clone(),
            confirmation_from: s.confirmation_from.clone(),
        }
    }
}

/// `PATCH /audience-settings`: what is left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AudienceSettingsChanges {
    pub double_opt_in: Option<bool>,
    /// A template of the project; null goes back to the built-in mail.
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>)]
    pub confirmation_template_id: Option<Option<String>>,
    /// An address at a verified domain of the project; null goes back to the default.
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>, format = Email)]
    pub confirmation_from: Option<Option<String>>,
}
