//! Our DKIM signatures, checked by independent verifiers besides mail-auth: Python's dkimpy
//! (Debian's python3-dkim, used by dkimpy-milter) and Perl's Mail::DKIM (libmail-dkim-perl, used
//! by SpamAssassin and amavis), the first given the published key, the second asking the loopback
//! DNS server itself. `.ci/run` installs both packages.

use std::process::Command;

use serde_json::json;

use crate::send::Mailroom;

const PYTHON: &str = r#"
import sys, dkim
message = open(sys.argv[1], "rb").read()
record = sys.argv[2].encode()
ok = dkim.verify(message, dnsfunc=lambda name, **kwargs: record if name == b"tidings._domainkey.example.test." else None)
print("pass" if ok else "fail")
"#;

// The resolver waits up to 30 s: the test DNS server is on loopback, but under the whole suite
// (and the browser test) it once took longer than Net::DNS's 5 s to answer.
const PERL: &str = r#"
use strict;
use Mail::DKIM::Verifier;
use Mail::DKIM::DNS;
use Net::DNS::Resolver;
Mail::DKIM::DNS::resolver(Net::DNS::Resolver->new(nameservers => [$ARGV[1]], port => $ARGV[2], recurse => 0, tcp_timeout => 30, udp_timeout => 30));
open(my $fh, "<", $ARGV[0]) or die;
binmode $fh;
my $dkim = Mail::DKIM::Verifier->new();
$dkim->load($fh);
print $dkim->result, " ", ($dkim->result_detail // ""), "\n";
"#;

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| {
        panic!("{program} is needed for this test (apt-get install python3-dkim libmail-dkim-perl): {e}")
    });
    assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What dkimpy and Mail::DKIM say of `raw`'s signature (the key of `example.test` as `room`
/// publishes it): `pass`, or why not.
pub(crate) async fn independent_verdicts(room: &Mailroom, raw: &[u8]) -> (String, String) {
    let (_, domain) =
        room.app.get(&format!("/domains/project/{}", room.keys.id), &room.keys.secret_key).await;
    let record = domain[0]["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["purpose"] == json!("dkim"))
        .unwrap()["value"]
        .as_str()
        .unwrap()
        .to_string();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), raw).unwrap();
    let path = file.path().to_string_lossy().to_string();
    let nameserver = room.dns.nameserver();
    let (ip, port) = (nameserver.ip().to_string(), nameserver.port().to_string());
    tokio::task::spawn_blocking(move || {
        (
            run("/usr/bin/python3", &["-c", PYTHON, &path, &record]),
            run("perl", &["-e", PERL, &path, &ip, &port]),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_verifiers_pass_our_signatures() {
    let room = Mailroom::new().await;
    // Subjects of every length, so the signature header is laid out (and folded) differently in
    // each: the form that dkimpy failed depended on where the lines broke.
    let (_, template) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": "news", "subject": "News", "body": "<p>Hi {{ email }}</p>", "from": "news@example.test", "type": "MARKETING" }),
        )
        .await;
    let mut count = 0;
    for n in 0..12 {
        let subject = format!("Subject {}", "x".repeat(n * 7));
        room.send_ok(json!({ "to": format!("user{n}@example.test"), "from": { "name": "Shop", "email": "shop@example.test" }, "subject": subject,
            "body": format!("<p>{}</p>", "body ".repeat(n * 13)) }))
            .await;
        count += 1;
    }
    room.app
        .post("/contacts", &room.keys.secret_key, json!({ "email": "fan@example.test", "subscribed": true }))
        .await;
    room.send_ok(json!({ "to": "fan@example.test", "template": template["id"] })).await;
    count += 1;
    let messages = room.deliver(count).await;
    for (n, message) in messages.iter().enumerate() {
        assert!(room.dkim_passes(&message.data).await, "mail-auth, message {n}");
        let (python, perl) = independent_verdicts(&room, &message.data).await;
        let text = String::from_utf8_lossy(&message.data);
        let header = text.split("\r\nFrom:").next().unwrap_or_default();
        assert_eq!(python, "pass", "dkimpy, message {n}:\n{header}");
        assert!(perl.starts_with("pass"), "Mail::DKIM, message {n}: {perl}\n{header}");
    }
}
