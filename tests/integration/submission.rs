//! The submission listener (issue 31) through real clients: Python's smtplib over STARTTLS and
//! swaks over TLS from the start, with a certificate of a test CA. What they submit is delivered
//! to the sink as written (byte for byte after Tidings' headers), DKIM-signed as independent
//! verifiers check; what must be refused is refused with the right reply and queues nothing.

use std::process::Command;

use rocket::http::Status;
use serde_json::{Value, json};
use tempfile::TempDir;
use tidings::listeners::smtp::tls::Certificates;
use tidings::listeners::smtp::{Tls, submission};
use tokio::sync::watch;

use crate::dkim::independent_verdicts;
use crate::send::{Mailroom, parse};

/// smtplib: signs in (STARTTLS on `starttls`, else TLS from the start), sends the file's bytes
/// from the envelope sender to the recipients, and prints what happened as JSON.
const SMTPLIB: &str = r#"
import json, smtplib, ssl, sys
host, port, mode, cafile, user, password, path, sender = sys.argv[1:9]
recipients = sys.argv[9:]
context = ssl.create_default_context(cafile=cafile)
if mode == "starttls":
    s = smtplib.SMTP(host, int(port), timeout=30)
    s.ehlo()
    before = s.has_extn("auth")
    s.starttls(context=context)
    s.ehlo()
else:
    before = None
    s = smtplib.SMTP_SSL(host, int(port), context=context, timeout=30)
    s.ehlo()
out = {"authBeforeTls": before}
try:
    s.login(user, password)
except smtplib.SMTPAuthenticationError as e:
    out["auth"] = e.smtp_code
    print(json.dumps(out))
    sys.exit(0)
try:
    s.sendmail(sender, recipients, open(path, "rb").read())
    out["sent"] = True
except smtplib.SMTPResponseException as e:
    out["code"], out["text"] = e.smtp_code, e.smtp_error.decode()
except smtplib.SMTPRecipientsRefused as e:
    out["refused"] = {k: v[0] for k, v in e.recipients.items()}
s.quit()
print(json.dumps(out))
"#;

/// Writes a certificate for `localhost`, issued by a test CA, to `dir`: `ca<suffix>.pem`,
/// `cert<suffix>.pem` and `key<suffix>.pem`.
pub fn write_certificate(dir: &std::path::Path, suffix: &str) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    // OpenSSL takes a certificate whose issuer reads like its subject for a self-signed one.
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "Tidings test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join(format!("ca{suffix}.pem")), ca.pem()).unwrap();
    std::fs::write(dir.join(format!("cert{suffix}.pem")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("key{suffix}.pem")), key.serialize_pem()).unwrap();
}

/// A mailroom with the submission listener on two loopback ports.
struct Hub {
    room: Mailroom,
    starttls: u16,
    implicit: u16,
    dir: TempDir,
    _stop: watch::Sender<bool>,
}

impl Hub {
    async fn new(tweak: impl FnOnce(&mut tidings::config::Config)) -> Hub {
        let room = Mailroom::with(tweak).await;
        let dir = TempDir::new().unwrap();
        write_certificate(dir.path(), "");
        let certificates =
            Certificates::load(&dir.path().join("cert.pem"), &dir.path().join("key.pem")).unwrap();
        let (stop, stopped) = watch::channel(false);
        let first = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let second = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (starttls, implicit) = (first.local_addr().unwrap().port(), second.local_addr().unwrap().port());
        let state = room.app.state.clone();
        submission::start(state.clone(), first, Tls::StartTls(certificates.clone()), stopped.clone());
        submission::start(state, second, Tls::Implicit(certificates), stopped);
        Hub { room, starttls, implicit, dir, _stop: stop }
    }

    /// A new credential's username and password.
    async fn credential(&self, body: Value) -> (String, String) {
        let (status, made) = self.room.app.post("/smtp-credentials", &self.room.keys.secret_key, body).await;
        assert_eq!(status, Status::Ok, "{made}");
        (made["username"].as_str().unwrap().into(), made["password"].as_str().unwrap().into())
    }

    /// smtplib's account of submitting `raw` (STARTTLS when `starttls`, else port 465's way).
    async fn smtplib(
        &self,
        starttls: bool,
        login: (&str, &str),
        raw: &[u8],
        from: &str,
        to: &[&str],
    ) -> Value {
        let path = self.dir.path().join(format!("{}.eml", tidings::db::new_id()));
        std::fs::write(&path, raw).unwrap();
        let port = if starttls { self.starttls } else { self.implicit };
        let mut args: Vec<String> = vec![
            "-c".into(),
            SMTPLIB.into(),
            "localhost".into(),
            port.to_string(),
            if starttls { "starttls" } else { "tls" }.into(),
            self.dir.path().join("ca.pem").to_string_lossy().into(),
            login.0.into(),
            login.1.into(),
            path.to_string_lossy().into(),
            from.into(),
        ];
        args.extend(to.iter().map(|t| t.to_string()));
        let out = tokio::task::spawn_blocking(move || {
            Command::new("/usr/bin/python3").args(args).output().unwrap()
        })
        .await
        .unwrap();
        assert!(out.status.success(), "smtplib: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// A multipart message with an HTML part, a text part and a PDF attachment, as an app writes it.
fn multipart(from: &str, to: &str, message_id: &str) -> Vec<u8> {
    format!(
        "From: Gitea <{from}>\r\nTo: {to}\r\nSubject: [gitea] A new issue\r\nMessage-ID: {message_id}\r\n\
         Date: Fri, 27 Nov 2026 03:00:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n\
         --outer\r\nContent-Type: multipart/alternative; boundary=\"inner\"\r\n\r\n\
         --inner\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nIssue #7 was opened.\r\n\
         --inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Issue <b>#7</b> was opened.</p>\r\n\
         --inner--\r\n\
         --outer\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQKJcOkw7zDtsOfCg==\r\n--outer--\r\n"
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtplib_over_starttls_sends_a_multipart_message_as_written_and_signed() {
    let hub = Hub::new(|_| {}).await;
    let (user, password) = hub.credential(json!({ "name": "Gitea" })).await;
    let raw = multipart("gitea@example.test", "ada@example.org", "<issue-7@gitea.example.test>");
    let said =
        hub.smtplib(true, (&user, &password), &raw, "bounces@example.test", &["ada@example.org"]).await;
    assert_eq!(said["sent"], json!(true), "{said}");
    assert_eq!(said["authBeforeTls"], json!(false), "AUTH is offered only after STARTTLS");

    let delivered = hub.room.deliver(1).await.remove(0);
    assert_eq!(delivered.to, ["ada@example.org"]);
    assert!(
        delivered.data.ends_with(&raw),
        "the message arrives as the app wrote it, after Tidings' headers:\n{}",
        String::from_utf8_lossy(&delivered.data)
    );
    let message = parse(&delivered.data);
    let pdf = message.attachments().next().expect("the attachment");
    assert_eq!(pdf.contents(), b"%PDF-1.4\n%\xc3\xa4\xc3\xbc\xc3\xb6\xc3\x9f\n");
    assert_eq!(message.body_html(0).unwrap(), "<p>Issue <b>#7</b> was opened.</p>");
    assert!(hub.room.dkim_passes(&delivered.data).await, "mail-auth");
    let (python, perl) = independent_verdicts(&hub.room, &delivered.data).await;
    assert_eq!(python, "pass", "dkimpy");
    assert!(perl.starts_with("pass"), "Mail::DKIM: {perl}");

    // The same email /v1/send would have made: a contact (not subscribed to marketing), the
    // app's Message-ID, email.sent, the subject in the activity feed.
    let store = hub.room.app.store();
    let id: String = store.value("emails", "id", &[("to_email", "ada@example.org".into())]);
    let email = hub.room.email(&id);
    assert_eq!((email.status.as_str(), email.message_id.as_str()), ("SENT", "<issue-7@gitea.example.test>"));
    assert_eq!(
        (email.subject.as_str(), email.source_type.as_str()),
        ("[gitea] A new issue", "TRANSACTIONAL")
    );
    let (_, contacts) =
        hub.room.app.get("/contacts?search=ada%40example.org", &hub.room.keys.secret_key).await;
    assert_eq!(contacts["data"][0]["subscribed"], json!(false), "{contacts}");
    assert_eq!(store.count("events", &[("name", "email.sent".into())]), 1);
    // The message is not kept once it has gone.
    assert_eq!(store.count("raw_messages", &[]), 0);

    // Submitted again (the app did not see the 250): nothing is queued twice.
    let again =
        hub.smtplib(true, (&user, &password), &raw, "bounces@example.test", &["ada@example.org"]).await;
    assert_eq!(again["sent"], json!(true), "{again}");
    assert_eq!(store.count("emails", &[("to_email", "ada@example.org".into())]), 1);
}

/// A credential that tracks clicks by default: the HTML part's link goes through Tidings, the
/// text part and the attachment stay as written, and the signature still verifies. A message
/// saying `X-Tidings-Track: none` is not tracked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_rewrites_the_html_part_only_when_asked() {
    let hub = Hub::new(|_| {}).await;
    let (user, password) = hub.credential(json!({ "name": "Ghost", "track": ["clicks", "opens"] })).await;
    let mut raw = multipart("news@example.test", "ada@example.org", "<tracked@ghost>");
    let html = b"<p>Issue <b>#7</b> was opened.</p>";
    let linked = b"<p>Issue <a href=\"https://git.example.org/7\">#7</a> was opened.</p>";
    let at = raw.windows(html.len()).position(|w| w == html).unwrap();
    raw.splice(at..at + html.len(), linked.iter().copied());
    let said = hub.smtplib(true, (&user, &password), &raw, "news@example.test", &["ada@example.org"]).await;
    assert_eq!(said["sent"], json!(true), "{said}");
    let delivered = hub.room.deliver(1).await.remove(0);
    let message = parse(&delivered.data);
    let body = message.body_html(0).unwrap().to_string();
    assert!(body.contains("/t/c/") && !body.contains("href=\"https://git.example.org/7\""), "{body}");
    assert!(body.contains("/t/o/"), "the open pixel: {body}");
    assert_eq!(message.body_text(0).unwrap(), "Issue #7 was opened.");
    assert_eq!(
        message.attachments().next().unwrap().contents(),
        b"%PDF-1.4\n%\xc3\xa4\xc3\xbc\xc3\xb6\xc3\x9f\n"
    );
    assert!(hub.room.dkim_passes(&delivered.data).await);
    let (python, perl) = independent_verdicts(&hub.room, &delivered.data).await;
    assert_eq!(python, "pass", "dkimpy");
    assert!(perl.starts_with("pass"), "Mail::DKIM: {perl}");

    let mut plain = multipart("news@example.test", "bob@example.org", "<untracked@ghost>");
    plain.splice(0..0, b"X-Tidings-Track: none\r\n".iter().copied());
    let said = hub.smtplib(true, (&user, &password), &plain, "news@example.test", &["bob@example.org"]).await;
    assert_eq!(said["sent"], json!(true), "{said}");
    let delivered = hub.room.deliver(2).await.remove(1);
    let kept: Vec<u8> = plain["X-Tidings-Track: none\r\n".len()..].to_vec();
    assert!(delivered.data.ends_with(&kept), "as written, less Tidings' header");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swaks_over_tls_from_the_start_with_the_secret_key_as_password() {
    let hub = Hub::new(|_| {}).await;
    let out = tokio::task::spawn_blocking({
        let (port, key, ca) = (hub.implicit, hub.room.keys.secret_key.clone(), hub.dir.path().join("ca.pem"));
        move || {
            Command::new("swaks")
                .args(["--server", "localhost", "--port", &port.to_string(), "--tlsc", "--tls-verify"])
                .args(["--tls-ca-path", &ca.to_string_lossy()])
                .args(["--auth", "LOGIN", "--auth-user", "cron", "--auth-password", &key])
                .args(["--from", "cron@example.test", "--to", "ops@example.org"])
                .args(["--header", "Subject: nightly backup", "--header", "X-Tidings-Type: transactional"])
                .args(["--body", "The backup finished."])
                .output()
                .expect("swaks (apt-get install swaks)")
        }
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "swaks: {said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("<~  235 2.7.0") && said.contains("<~  250 2.0.0 queued"), "{said}");
    let delivered = hub.room.deliver(1).await.remove(0);
    let message = parse(&delivered.data);
    assert_eq!(message.subject(), Some("nightly backup"));
    assert!(message.header_raw("X-Tidings-Type").is_none(), "Tidings' own header is taken out");
    assert!(hub.room.dkim_passes(&delivered.data).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_must_be_refused_is_refused_with_its_reply_and_nothing_is_queued() {
    let hub = Hub::new(|c| c.submission.max_message_bytes = 64 * 1024).await;
    let (user, password) = hub.credential(json!({ "name": "App" })).await;
    let login = (user.as_str(), password.as_str());
    let (narrow_user, narrow_password) =
        hub.credential(json!({ "name": "News", "allowedFromDomains": ["news.example.test"] })).await;
    let ok = |from: &str| multipart(from, "bob@example.org", &format!("<{}@app>", tidings::db::new_id()));

    let wrong = hub
        .smtplib(true, (&user, "sp_wrong"), &ok("app@example.test"), "a@example.test", &["bob@example.org"])
        .await;
    assert_eq!(wrong["auth"], json!(535), "{wrong}");
    let unverified =
        hub.smtplib(true, login, &ok("app@elsewhere.test"), "a@example.test", &["bob@example.org"]).await;
    assert_eq!(unverified["code"], json!(550), "{unverified}");
    assert!(unverified["text"].as_str().unwrap().contains("elsewhere.test is not verified"), "{unverified}");
    let narrow = (narrow_user.as_str(), narrow_password.as_str());
    let outside =
        hub.smtplib(true, narrow, &ok("app@example.test"), "a@example.test", &["bob@example.org"]).await;
    assert_eq!(outside["code"], json!(550), "{outside}");
    assert!(outside["text"].as_str().unwrap().contains("may not send from example.test"), "{outside}");
    let mut big = ok("app@example.test");
    big.extend(std::iter::repeat_n(b'x', 70 * 1024));
    big.extend(b"\r\n");
    let too_big = hub.smtplib(true, login, &big, "a@example.test", &["bob@example.org"]).await;
    assert_eq!(too_big["code"], json!(552), "{too_big}");
    let bad_rcpt =
        hub.smtplib(true, login, &ok("app@example.test"), "a@example.test", &["not an address"]).await;
    assert!(bad_rcpt["refused"].is_object(), "{bad_rcpt}");

    // The monthly cap: 452, so the app tries again later.
    let path = format!("/users/@me/projects/{}/billing-limits", hub.room.keys.id);
    let cap = Some(json!({ "transactional": 0 }));
    let (status, _, _) =
        hub.room.app.as_user(rocket::http::Method::Put, &path, Some(&hub.room.session), cap).await;
    assert_eq!(status, Status::Ok);
    let capped =
        hub.smtplib(false, login, &ok("app@example.test"), "a@example.test", &["bob@example.org"]).await;
    assert_eq!(capped["code"], json!(452), "{capped}");

    let store = hub.room.app.store();
    assert_eq!(store.count("emails", &[("to_email", "bob@example.org".into())]), 0, "nothing was queued");
    assert_eq!(store.count("contacts", &[("email", "bob@example.org".into())]), 0, "no contact was made");
    assert_eq!(store.count("raw_messages", &[]), 0);
}

/// smtplib on loopback without TLS (`allow_plaintext_auth`): signs in with the secret key and
/// submits one message; the reply to its data.
const PLAIN_SMTPLIB: &str = r#"
import smtplib, sys
port, key = sys.argv[1:3]
s = smtplib.SMTP("127.0.0.1", int(port), timeout=30)
s.login("app", key)
s.sendmail("app@example.test", ["survivor@example.org"],
    b"From: app@example.test\r\nTo: survivor@example.org\r\nSubject: Kept\r\nMessage-ID: <kept@app>\r\n\r\nKept.\r\n")
print("250")
"#;

/// 250 is said only once the message is committed: the built server killed with SIGKILL right
/// after it delivers the message once after a restart. The relay refuses the first try for now
/// (451), so nothing can have been handed over before the kill and be handed over again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_right_after_a_250_loses_nothing_and_sends_nothing_twice() {
    use crate::common::binary::free_port;
    use crate::common::dns_server::DnsServer;
    use crate::common::sending::Sending;
    use crate::common::smtp_sink::{Reply, SmtpSink};
    use std::time::Duration;

    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    sink.script(&[Reply::Temporary]);
    let submission = free_port();
    let listen = format!("127.0.0.1:{submission}");
    let extra = [
        ("TIDINGS_SUBMISSION__LISTEN", listen.as_str()),
        ("TIDINGS_SUBMISSION__ALLOW_PLAINTEXT_AUTH", "true"),
        ("TIDINGS_SCHEDULER__RETRY_BASE_SECS", "1"),
    ];
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &extra).await;
    let key = sending.key.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("/usr/bin/python3")
            .args(["-c", PLAIN_SMTPLIB, &submission.to_string(), &key])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "250",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::task::block_in_place(|| sending.kill());

    tokio::task::block_in_place(|| sending.restart());
    let delivered = tokio::task::block_in_place(|| sink.wait_for(1, Duration::from_secs(60)));
    assert_eq!(delivered.len(), 1, "{}", sending.server.log());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(sink.messages().len(), 1, "delivered once");
    let message = parse(&sink.messages()[0].data).message_id().map(str::to_string);
    assert_eq!(message.as_deref(), Some("kept@app"));
    sending.server.terminate(Duration::from_secs(15));
}

/// smtplib signing in `n` times with a wrong password, each on a new connection over STARTTLS;
/// the reply code of each attempt.
const GUESSES: &str = r#"
import json, smtplib, ssl, sys
port, cafile, user, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
codes = []
for i in range(n):
    s = smtplib.SMTP("localhost", int(port), timeout=30)
    s.starttls(context=ssl.create_default_context(cafile=cafile))
    try:
        s.login(user, "sp_guess%d" % i)
        codes.append(235)
    except smtplib.SMTPAuthenticationError as e:
        codes.append(e.smtp_code)
    except smtplib.SMTPServerDisconnected:
        codes.append(421)
    try:
        s.quit()
    except Exception:
        pass
print(json.dumps(codes))
"#;

/// Failed sign-ins count as a dashboard's do: 535, then 421 and the connection closed once the
/// credential has failed too often, even for the right password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_a_password_is_stopped() {
    let hub = Hub::new(|_| {}).await;
    let (user, password) = hub.credential(json!({ "name": "App" })).await;
    let (port, ca) = (hub.starttls, hub.dir.path().join("ca.pem"));
    let guessed = user.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("/usr/bin/python3")
            .args(["-c", GUESSES, &port.to_string(), &ca.to_string_lossy(), &guessed, "8"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let codes: Vec<u16> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(codes[0], 535, "{codes:?}");
    let locked = codes.iter().position(|c| *c == 421).unwrap_or_else(|| panic!("never stopped: {codes:?}"));
    assert!(codes[locked..].iter().all(|c| *c == 421), "{codes:?}");
    let right = hub
        .smtplib(
            true,
            (&user, &password),
            &multipart("a@example.test", "b@example.org", "<x@y>"),
            "a@example.test",
            &["b@example.org"],
        )
        .await;
    assert_eq!(right["auth"], json!(421), "the credential stays locked for a while: {right}");
}

/// Two connections: the first starts a message's data and holds it; the second submits a whole
/// message meanwhile; then the first ends its message. The replies, as JSON.
const HOLDING: &str = r#"
import json, smtplib, ssl, sys
port, cafile, user, password = sys.argv[1:5]
def signed_in():
    s = smtplib.SMTP("localhost", int(port), timeout=60)
    s.starttls(context=ssl.create_default_context(cafile=cafile))
    s.login(user, password)
    return s
message = b"From: app@example.test\r\nTo: c@example.org\r\nSubject: Budget\r\n\r\nHi\r\n"
first = signed_in()
first.mail("app@example.test")
first.rcpt("c@example.org")
first.putcmd("data")
held = first.getreply()[0]
second = signed_in()
try:
    second.sendmail("app@example.test", ["d@example.org"], message)
    refused = 250
except smtplib.SMTPDataError as e:
    refused = e.smtp_code
first.send(message + b".\r\n")
ended = first.getreply()[0]
print(json.dumps({"held": held, "second": refused, "first": ended}))
"#;

/// The memory of messages being read is one budget with the HTTP API's bodies (`[limits]
/// body_memory_bytes`): while one message holds it all, another waits, then is told 452 (a 4xx
/// the app retries), and the first still goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_being_read_share_the_memory_budget() {
    let hub = Hub::new(|c| {
        c.limits.body_memory_bytes = 1024 * 1024;
        c.submission.max_message_bytes = 1024 * 1024;
    })
    .await;
    let (user, password) = hub.credential(json!({ "name": "App" })).await;
    let (port, ca) = (hub.starttls, hub.dir.path().join("ca.pem"));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("/usr/bin/python3")
            .args(["-c", HOLDING, &port.to_string(), &ca.to_string_lossy(), &user, &password])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(said, json!({ "held": 354, "second": 452, "first": 250 }));
    let store = hub.room.app.store();
    assert_eq!(store.count("emails", &[("to_email", "d@example.org".into())]), 0);
    assert_eq!(store.count("emails", &[("to_email", "c@example.org".into())]), 1);
}

/// Signs in over STARTTLS once per line of stdin's `user password` pairs, holding every session
/// open, and prints each AUTH PLAIN's code; then quits the first session, and signs in with the
/// first pair again (trying for a while, as the place is given back when the session ends).
const SESSIONS: &str = r#"
import json, smtplib, ssl, sys, time
port, cafile = sys.argv[1:3]
pairs = [line.split() for line in sys.stdin if line.strip()]
context = ssl.create_default_context(cafile=cafile)
def sign_in(user, password):
    s = smtplib.SMTP("localhost", int(port), timeout=30)
    s.starttls(context=context)
    s.ehlo()
    s.user, s.password = user, password
    try:
        return s, s.auth("PLAIN", s.auth_plain)[0]
    except smtplib.SMTPResponseException as e:
        return None, e.smtp_code
held, codes = [], []
for user, password in pairs:
    s, code = sign_in(user, password)
    codes.append(code)
    if s:
        held.append(s)
held[0].quit()
again = None
for _ in range(50):
    s, again = sign_in(*pairs[0])
    if again == 235:
        break
    time.sleep(0.1)
print(json.dumps({"codes": codes, "again": again}))
"#;

/// One project holds at most `max_sessions_per_project` signed-in sessions, whatever their
/// credentials: one more is told 421, another project still signs in, and a session that ends
/// gives its place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_project_cannot_hold_every_session() {
    let hub = Hub::new(|c| c.submission.max_sessions_per_project = 2).await;
    let (user, password) = hub.credential(json!({ "name": "App" })).await;
    let (second, second_password) = hub.credential(json!({ "name": "Cron" })).await;
    let (_, other) = hub.room.app.user_with_project("other@example.com").await;
    let pairs = format!(
        "{user} {password}\n{second} {second_password}\nanyone {key}\nanyone {other}\n",
        key = hub.room.keys.secret_key,
        other = other.secret_key,
    );
    let (port, ca) = (hub.starttls, hub.dir.path().join("ca.pem"));
    let out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", SESSIONS, &port.to_string(), &ca.to_string_lossy()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(pairs.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(said, json!({ "codes": [235, 235, 421, 235], "again": 235 }));
}
