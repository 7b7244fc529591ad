//! Signup forms (issue 32, item 4) as the API shows them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::forms::{Form as Row, FormField};

/// A custom field a form asks for besides the email address.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = FormField)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// The contact's `data` key: 1 to 64 letters, digits or `_`, starting with a letter.
    pub key: String,
    /// What the form shows (1 to 200 characters).
    pub label: String,
    /// `string`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub required: bool,
}

impl From<&FormField> for Field {
    fn from(f: &FormField) -> Self {
        Field { key: f.key.clone(), label: f.label.clone(), kind: f.kind.clone(), required: f.required }
    }
}

impl From<Field> for FormField {
    fn from(f: Field) -> Self {
        FormField { key: f.key, label: f.label, kind: f.kind, required: f.required }
    }
}

/// A signup form.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Form {
    pub id: String,
    pub name: String,
    pub fields: Vec<Field>,
    /// Topic ids the subscriber may choose.
    pub topics: Vec<String>,
    /// Null: the project's setting (`/audience-settings`).
    pub double_opt_in: Option<bool>,
    /// The words the subscriber agrees to, shown above the button and kept as proof.
    pub consent_text: Option<String>,
    pub success_message: Option<String>,
    /// Where the hosted page sends the subscriber after a submission.
    pub redirect_url: Option<String>,
    /// Origins whose pages may post to the form (the embed, custom fronts).
    pub allowed_origins: Vec<String>,
    pub submissions: i64,
    /// The hosted page.
    pub url: String,
    /// What to paste in another site's page to embed the form.
    pub embed: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl Form {
    pub fn new(f: &Row, public_url: &str) -> Self {
        let url = format!("{public_url}/f/{}", f.id);
        Form {
            id: f.id.clone(),
            name: f.name.clone(),
            fields: f.fields.iter().map(Field::from).collect(),
            topics: f.topics.clone(),
            double_opt_in: f.double_opt_in,
            consent_text: f.consent_text.clone(),
            success_message: f.success_message.clone(),
            redirect_url: f.redirect_url.clone(),
            allowed_origins: f.allowed_origins.clone(),
            submissions: f.submissions,
            embed: format!(
                "<div data-tidings-form=\"{id}\"></div>\n<script src=\"{url}/embed.js\" async></script>",
                id = f.id
            ),
            url,
            created_at: iso(f.created_at),
            updated_at: iso(f.updated_at),
        }
    }
}

/// The body of `POST /forms` and `PATCH /forms/:id` (absent fields are kept, or default).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Newsletter", "fields": [{ "key": "firstName", "label": "First name", "type": "string" }], "consentText": "Send me the monthly newsletter", "allowedOrigins": ["https://www.example.com"] }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FormFields {
    /// Required to create.
    pub name: Option<String>,
    /// At most 20.
    pub fields: Option<Vec<Field>>,
    pub topics: Option<Vec<String>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<bool>)]
    pub double_opt_in: Option<Option<bool>>,
    /// At most 2,000 characters; empty clears it.
    pub consent_text: Option<String>,
    /// At most 2,000 characters; empty clears it.
    pub success_message: Option<String>,
    /// An http(s) URL; empty clears it.
    pub redirect_url: Option<String>,
    /// At most 20 origins like `https://www.example.com`.
    pub allowed_origins: Option<Vec<String>>,
}

impl From<FormFields> for crate::core::forms::Settings {
    fn from(f: FormFields) -> Self {
        crate::core::forms::Settings {
            name: f.name,
            fields: f.fields.map(|fields| fields.into_iter().map(FormField::from).collect()),
            topics: f.topics,
            double_opt_in: f.double_opt_in,
            consent_text: f.consent_text,
            success_message: f.success_message,
            redirect_url: f.redirect_url,
            allowed_origins: f.allowed_origins,
        }
    }
}

/// The answer to a submission: the same whether the address was a contact or not.
#[derive(Debug, Serialize, ToSchema)]
pub struct Submitted {
    pub success: bool,
    pub message: String,
    /// Where to send the subscriber, when the form says.
    pub redirect: Option<String>,
}
