//! Mail work on one core: rendering a campaign body and DKIM signing.

use std::time::{Duration, Instant};

use serde_json::json;

/// A newsletter of about 5 KB using 10 variables, as a campaign body would.
pub fn campaign_body() -> String {
    let mut body = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{{ company }} news</title></head>\n\
         <body style=\"font-family:Helvetica,Arial,sans-serif;color:#222;background:#f4f4f4\">\n\
         <table width=\"100%\" cellpadding=\"0\" cellspacing=\"0\"><tr><td align=\"center\">\n\
         <h1>Hello {{ firstName ?? \"there\" }} {{ lastName }},</h1>\n\
         <p>Thanks for being on the {{ plan | capitalize }} plan since {{ signupDate }}.</p>\n",
    );
    let paragraph = "<p style=\"margin:0 0 16px;line-height:1.5\">Here is what changed this month. We shipped faster \
        search, a calmer inbox and better reports for teams who send a lot of mail. Read on for the details, or \
        reply to this email and tell us what you would like to see next.</p>\n";
    while body.len() < 4300 {
        body.push_str(paragraph);
    }
    body.push_str(
        "{% if vip %}<p><strong>As a VIP in {{ city }}, you get early access.</strong></p>{% endif %}\n\
         <p>Your score: {{ score }}. Company: {{ company }}.</p>\n\
         <p><a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a> · <a href=\"{{ manageUrl }}\">Preferences</a></p>\n\
         </td></tr></table></body></html>\n",
    );
    body
}

pub fn dkim_bench(messages: usize) {
    let (pem, _) = tidings::mail::dkim::generate_key().expect("a key");
    let signers = tidings::mail::dkim::Signers::default();
    let message = format!(
        "From: a@example.com\r\nTo: b@example.com\r\nSubject: Hi\r\nMessage-ID: <1@example.com>\r\n\r\n{}",
        campaign_body().replace('\n', "\r\n")
    );
    signers.sign("example.com", "tidings", &pem, message.as_bytes()).expect("signs");
    let started = Instant::now();
    for _ in 0..messages {
        signers.sign("example.com", "tidings", &pem, message.as_bytes()).expect("signs");
    }
    let each = started.elapsed().as_secs_f64() / messages as f64;
    println!(
        "DKIM RSA-2048 (aws-lc-rs, via mail-auth): {:.3} ms a message, {:.0} messages/s on one core",
        each * 1000.0,
        1.0 / each
    );
}

pub fn render_bench(seconds: u64) {
    use tidings::core::render;
    let body = campaign_body();
    let data = json!({ "firstName": "Ada", "lastName": "Lovelace", "plan": "pro", "signupDate": "2024-01-15",
        "vip": true, "city": "London", "score": 98.5, "company": "Analytical Engines" });
    let data = data.as_object().unwrap().clone();
    let links = vec![
        ("unsubscribeUrl", "https://mail.example.com/unsubscribe/token".to_string()),
        ("manageUrl", "https://mail.example.com/manage/token".to_string()),
    ];
    let scope = render::scope(&data, "ada@example.com", "contact-id", &links);
    let out = render::render(&body, render::Mode::Html, &scope).expect("renders");
    println!("template: {} bytes, 10 variables; output {} bytes", body.len(), out.len());
    for (label, with_scope) in [("render", false), ("build the variables + render", true)] {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let started = Instant::now();
        let mut n = 0u64;
        while Instant::now() < deadline {
            for _ in 0..100 {
                let rendered = if with_scope {
                    render::render(
                        &body,
                        render::Mode::Html,
                        &render::scope(&data, "ada@example.com", "contact-id", &links),
                    )
                } else {
                    render::render(&body, render::Mode::Html, &scope)
                };
                assert!(rendered.is_ok());
            }
            n += 100;
        }
        println!("{label:<30} {:.0} renders/s on one core", n as f64 / started.elapsed().as_secs_f64());
    }
}
