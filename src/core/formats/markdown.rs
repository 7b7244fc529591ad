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

#[cfg(test)]
mod tests {
    use super::super::{Format, compile};

    #[test]
    fn markdown_is_laid_out_as_responsive_mail() {
        let out = compile(
            Format::Markdown,
            "# Welcome\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ **new**",
            "body",
        )
        .unwrap()
        .html;
        for part in
            ["<h1>Welcome</h1>", "<table>", "<del>old</del>", "<strong>new</strong>", "max-width:600px"]
        {
            assert!(out.contains(part), "{part} in {out}");
        }
        // Pathological inputs stay linear and bounded (pulldown-cmark has no recursion).
        let deep = format!("{}x", "> ".repeat(20_000));
        let e = compile(Format::Markdown, &deep, "body").unwrap_err();
        assert!(["too_big", "template_limit"].contains(&e.fields()[0].code.as_str()), "{:?}", e.fields());
    }
}
