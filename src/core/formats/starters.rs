//! Starter layouts: a few complete mails to begin a template or campaign from (a welcome and a
//! newsletter in blocks, a letter in Markdown, a receipt in MJML), shipped in the binary. Each is
//! compiled by the test below, so a starter never fails to save.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One starter as shipped: a block document's body is a JSON object in its file and a string
/// (the document serialized) everywhere else, as any `blocks` body is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Starter {
    pub id: String,
    pub name: String,
    pub description: String,
    pub format: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub subject: String,
    pub body: String,
}

#[derive(Deserialize)]
struct Shipped {
    id: String,
    name: String,
    description: String,
    format: String,
    #[serde(rename = "type")]
    kind: String,
    subject: String,
    body: Value,
}

const FILES: [&str; 4] = [
    include_str!("starters/welcome.json"),
    include_str!("starters/newsletter.json"),
    include_str!("starters/letter.json"),
    include_str!("starters/receipt.json"),
];

/// Every starter, in the order the dashboard offers them.
pub fn all() -> Vec<Starter> {
    FILES
        .iter()
        .filter_map(|text| serde_json::from_str::<Shipped>(text).ok())
        .map(|s| Starter {
            id: s.id,
            name: s.name,
            description: s.description,
            format: s.format,
            kind: s.kind,
            subject: s.subject,
            body: match s.body {
                Value::String(text) => text,
                document => document.to_string(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Format, compile};

    #[test]
    fn every_starter_compiles() {
        let starters = super::all();
        assert_eq!(starters.len(), super::FILES.len(), "each file reads");
        for s in starters {
            let format = Format::parse(&s.format, "format").unwrap();
            let content = compile(format, &s.body, "body").unwrap_or_else(|e| panic!("{}: {e:?}", s.id));
            assert!(content.html.contains("<body"), "{}", s.id);
            crate::core::compose::check_subject(&s.subject, "subject").unwrap();
        }
    }
}
