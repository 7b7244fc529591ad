//! `POST /v1/track` and `POST /v1/verify`: their bodies and answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// An event that happened to a contact (made when the address is new).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({ "email": "ada@example.com", "event": "signed-up", "data": { "plan": "pro" } }))]
pub struct TrackBody {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
    /// The event's name: not `email.*`, `contact.subscribed`, `contact.unsubscribed` nor
    /// `segment.<slug>.entry|exit`, which the server records itself (422 `reserved_event`).
    #[schema(required, value_type = String, min_length = 1)]
    pub event: Option<String>,
    /// A new contact is subscribed unless this says otherwise; an existing one keeps its state
    /// unless this is given.
    pub subscribed: Option<bool>,
    /// Custom fields to patch into the contact, and one-off values (`{value, persistent: false}`)
    /// that only this event carries.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Double opt-in: the contact is subscribed only when it follows the link of the
    /// confirmation mail this queues. Not with `subscribed: false`.
    pub confirm: Option<bool>,
    /// The proof of consent to keep with the subscription; with the public key, the caller's
    /// address and browser are taken for what it leaves out.
    pub consent: Option<super::consent::ConsentBody>,
}

/// What a track recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct Tracked {
    /// The contact's id.
    pub contact: String,
    /// The event's id.
    pub event: String,
    #[schema(format = DateTime)]
    pub timestamp: String,
}

/// `POST /v1/verify`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct VerifyBody {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
}
