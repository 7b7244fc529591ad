//! Reading what the bounce listener receives: a delivery status notification (RFC 3464,
//! `multipart/report; report-type=delivery-status`) or a feedback report (RFC 5965,
//! `report-type=feedback-report`), as [`Feedback`]. The MIME structure is mail-parser's; the
//! report's own fields (header-like blocks) are read with its header parser too.

use mail_parser::{MessageParser, MimeHeaders};

use super::feedback::Feedback;

/// What a received message reports, if it is a report we act on: a DSN's first recipient with a
/// failed (5.x.x hard, 4.x.x soft), delayed (soft) or delivered action, or an `abuse` feedback
/// report. Anything else (an out-of-office reply, a `not-spam` report) is `None`.
pub fn read(raw: &[u8]) -> Option<Feedback> {
    let message = MessageParser::default().parse(raw)?;
    for part in &message.parts {
        let Some(kind) = part.content_type() else { continue };
        if !kind.ctype().eq_ignore_ascii_case("message") {
            continue;
        }
        match kind.subtype().map(str::to_ascii_lowercase).as_deref() {
            Some("delivery-status") | Some("global-delivery-status") => {
                return delivery_status(part.contents());
            }
            Some("feedback-report") => return feedback_report(part.contents()),
            _ => {}
        }
    }
    None
}

/// The fields of each block of a report body (blocks are separated by blank lines).
fn blocks(body: &[u8]) -> Vec<Vec<(String, String)>> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let raw = format!("{}\r\n\r\n", block.trim_matches('\n').replace('\n', "\r\n"));
            MessageParser::default()
                .parse_headers(raw.as_bytes())
                .map(|m| {
                    m.headers_raw().map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string())).collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

fn field<'a>(block: &'a [(String, String)], name: &str) -> Option<&'a str> {
    block.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// RFC 3464 §2.3: the per-recipient blocks follow the per-message one.
fn delivery_status(body: &[u8]) -> Option<Feedback> {
    let blocks = blocks(body);
    let recipient = blocks.iter().find(|b| field(b, "action").is_some())?;
    let action = field(recipient, "action")?.to_ascii_lowercase();
    let status = field(recipient, "status").unwrap_or_default();
    let diagnostic =
        field(recipient, "diagnostic-code").map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "));
    let detail = Some(diagnostic.unwrap_or_else(|| status.to_string())).filter(|d| !d.is_empty());
    match action.as_str() {
        "failed" => Some(Feedback::Bounce { hard: !status.starts_with('4'), detail }),
        "delayed" => Some(Feedback::Bounce { hard: false, detail }),
        "delivered" | "relayed" | "expanded" => Some(Feedback::Delivered),
        _ => None,
    }
}

/// RFC 5965 §3.1: only `abuse` reports are complaints.
fn feedback_report(body: &[u8]) -> Option<Feedback> {
    let blocks = blocks(body);
    let kind = blocks.iter().find_map(|b| field(b, "feedback-type"))?.to_ascii_lowercase();
    (kind == "abuse").then_some(Feedback::Complaint { detail: Some(kind) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3464 appendix: a DSN for a failed delivery (shortened).
    const RFC3464: &str = "From: Mail Delivery Subsystem <MAILER-DAEMON@example.com>\r
To: b-x@bounces.example.test\r
Subject: Returned mail: User unknown\r
MIME-Version: 1.0\r
Content-Type: multipart/report; report-type=delivery-status; boundary=\"RAA14128.773615765/CS.UTK.EDU\"\r
\r
--RAA14128.773615765/CS.UTK.EDU\r
\r
The original message was received at Sat, 24 Jul 1994 13:42:39 -0400\r
\r
--RAA14128.773615765/CS.UTK.EDU\r
Content-Type: message/delivery-status\r
\r
Reporting-MTA: dns; cs.utk.edu\r
\r
Original-Recipient: rfc822;louisl@larry.slip.umd.edu\r
Final-Recipient: rfc822;louisl@larry.slip.umd.edu\r
Action: failed\r
Status: 4.0.0\r
Diagnostic-Code: smtp; 426 connection timed out\r
Last-Attempt-Date: Thu, 7 Jul 1994 17:15:49 -0400\r
\r
--RAA14128.773615765/CS.UTK.EDU\r
Content-Type: message/rfc822\r
\r
Subject: hi\r
\r
hello\r
--RAA14128.773615765/CS.UTK.EDU--\r
";

    #[test]
    fn a_dsn_is_read_by_its_status() {
        assert_eq!(
            read(RFC3464.as_bytes()),
            Some(Feedback::Bounce { hard: false, detail: Some("smtp; 426 connection timed out".into()) })
        );
        let hard = RFC3464
            .replace("Status: 4.0.0", "Status: 5.1.1")
            .replace("426 connection timed out", "550 5.1.1 unknown\r\n    user");
        assert_eq!(
            read(hard.as_bytes()),
            Some(Feedback::Bounce { hard: true, detail: Some("smtp; 550 5.1.1 unknown user".into()) })
        );
        let delivered = RFC3464.replace("Action: failed", "Action: delivered");
        assert_eq!(read(delivered.as_bytes()), Some(Feedback::Delivered));
        assert_eq!(read(b"Subject: out of office\r\n\r\nI am away"), None);
    }
}
