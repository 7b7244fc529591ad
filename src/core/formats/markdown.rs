//! Markdown bodies: CommonMark (with tables, strikethrough and task lists) by pulldown-cmark,
//! placed in the same responsive page as the block editor's mail. HTML written in the Markdown
//! passes through, as CommonMark says.

use pulldown_cmark::{Options, Parser, html};

use super::blocks::{Style, page};

/// The MJML page holding `text` rendered from Markdown.
pub fn to_mjml(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut out = String::with_capacity(text.len() * 2);
    html::push_html(&mut out, Parser::new_ext(text, options));
    let section = format!(
        "<mj-section><mj-column><mj-text css-class=\"tidings-prose\">{out}</mj-text></mj-column></mj-section>"
    );
    page(&Style::default(), &section)
}
