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

/// Where a campaign message's CPU goes before the relay: each step of making one message, timed
/// on one core as `core::delivery::compose` runs them, each message with its own email id (so
/// its own tracked links). Then whole messages, of the personal newsletter and of one whose
/// text is the same for everyone (its links aside).
pub fn compose_bench(messages: usize) {
    use tidings::core::{links, render};
    use tidings::mail::message::{Outgoing, build};
    use tidings::mail::text::text_of;
    let (pem, _) = tidings::mail::dkim::generate_key().expect("a key");
    let signers = tidings::mail::dkim::Signers::default();
    // Each contact's own fields.
    let data = |i: usize| {
        let data = json!({ "firstName": format!("Ada {i}"), "lastName": "Lovelace", "plan": "pro",
            "signupDate": "2024-01-15", "vip": i.is_multiple_of(2), "city": "London", "score": i, "company": "Analytical Engines" });
        data.as_object().unwrap().clone()
    };
    let (public_url, secret) = ("https://mail.example.com", "a-secret-of-the-server");
    let email_id = |i: usize| format!("0192f5c4-7d1e-7a2b-9c3d-{i:012}");
    let contact_id = |i: usize| format!("0192f5c4-0000-7a2b-9c3d-{i:012}");
    let message = |body: &str, i: usize| {
        let (email, contact) = (email_id(i), contact_id(i));
        let links = links::contact_links(public_url, secret, &contact, (Some(&email), Some("campaign-id")));
        let scope = render::scope(&data(i), "ada@example.com", &contact, &links);
        let html = render::render(body, render::Mode::Html, &scope).expect("renders");
        let html = links::track_clicks(&html, public_url, secret, &email);
        let html = links::add_open_pixel(&html, public_url, secret, &email);
        Outgoing {
            message_id: format!("<{email}@example.com>"),
            from: ("news@example.com".into(), Some("Example".into())),
            to: ("ada@example.org".into(), Some("Ada Lovelace".into())),
            reply_to: None,
            subject: "What changed this month".into(),
            html,
            headers: Vec::new(),
            attachments: Vec::new(),
            unsubscribe: Some(links::url(
                public_url,
                secret,
                &links::Link::Unsubscribe { contact, email: Some(email) },
            )),
        }
    };
    let time = |label: &str, work: &mut dyn FnMut(usize)| {
        work(0);
        let started = Instant::now();
        for i in 1..=messages {
            work(i);
        }
        let each = started.elapsed().as_secs_f64() / messages as f64 * 1e6;
        println!("{label:<44} {each:>8.1} µs");
        each
    };
    let personal = campaign_body();
    let outgoing: Vec<Outgoing> = (0..=messages).map(|i| message(&personal, i)).collect();
    let raw = build(&outgoing[0]).expect("builds");
    println!("a campaign message: {} bytes of HTML, {} bytes of MIME", outgoing[0].html.len(), raw.len());
    time("render, tracked links and the open pixel", &mut |i| {
        assert!(!message(&personal, i).html.is_empty())
    });
    time("text part of a personal message", &mut |i| assert!(!text_of(&outgoing[i].html).is_empty()));
    time("MIME of a personal message, text included", &mut |i| assert!(build(&outgoing[i]).is_ok()));
    time("DKIM signature", &mut |_| assert!(signers.sign("example.com", "tidings", &pem, &raw).is_ok()));
    let same = personal
        .replace("{{ firstName ?? \"there\" }} {{ lastName }}", "there")
        .replace("{{ plan | capitalize }}", "Pro")
        .replace("{{ signupDate }}", "2024")
        .replace("{% if vip %}", "")
        .replace("{% endif %}", "")
        .replace("{{ city }}", "London")
        .replace("{{ score }}", "98")
        .replace("{{ company }}", "Example");
    let outgoing: Vec<Outgoing> = (0..=messages).map(|i| message(&same, i)).collect();
    time("text part of a message the same for all", &mut |i| assert!(!text_of(&outgoing[i].html).is_empty()));
    for (label, body) in [("whole message, personal", &personal), ("whole message, the same for all", &same)]
    {
        time(label, &mut |i| {
            let raw = build(&message(body, i)).expect("builds");
            assert!(signers.sign("example.com", "tidings", &pem, &raw).is_ok());
        });
    }
}
