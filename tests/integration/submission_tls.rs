//! The submission listener's certificate in the built server (issue 31): read again on SIGHUP,
//! as an ACME client's deploy hook asks after a renewal (`systemctl reload tidings`), without a
//! restart; a reload that fails keeps the certificate in use, and the server serves on.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::binary::{Server, free_port};
use crate::submission::write_certificate;

/// Connects over TLS to the port and prints `same` when the server's certificate is the first
/// of the file given, else `other`.
const SERVED: &str = r#"
import socket, ssl, sys
port, path = int(sys.argv[1]), sys.argv[2]
context = ssl.create_default_context()
context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
    with context.wrap_socket(raw, server_hostname="localhost") as tls:
        served = tls.getpeercert(binary_form=True)
print("same" if served == ssl.PEM_cert_to_DER_cert(open(path).read()) else "other")
"#;

fn served_is(port: u16, cert: &std::path::Path) -> String {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", SERVED, &port.to_string(), &cert.to_string_lossy()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn hang_up(server: &Server) {
    assert!(Command::new("kill").args(["-HUP", &server.pid().to_string()]).status().unwrap().success());
}

#[test]
fn sighup_reads_the_certificate_again_and_a_bad_one_is_not_taken() {
    let dir = tempfile::TempDir::new().unwrap();
    write_certificate(dir.path(), "");
    write_certificate(dir.path(), "-renewed");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let env = [
        ("TIDINGS_SUBMISSION__LISTEN_TLS", listen.as_str()),
        ("TIDINGS_SUBMISSION__CERT", cert.to_str().unwrap()),
        ("TIDINGS_SUBMISSION__KEY", key.to_str().unwrap()),
    ];
    let mut server = Server::start(dir.path(), &env);
    server.wait_healthy(Duration::from_secs(30));
    assert_eq!(served_is(port, &cert), "same");

    // Renewed: the files are replaced, and the server told.
    let renewed = dir.path().join("cert-renewed.pem");
    std::fs::copy(&renewed, &cert).unwrap();
    std::fs::copy(dir.path().join("key-renewed.pem"), &key).unwrap();
    hang_up(&server);
    let start = Instant::now();
    while served_is(port, &renewed) != "same" {
        assert!(start.elapsed() < Duration::from_secs(10), "never reloaded: {}", server.log());
        std::thread::sleep(Duration::from_millis(100));
    }

    // A broken file: the reload fails, the renewed certificate stays, the server serves on.
    std::fs::write(&cert, "not a certificate").unwrap();
    hang_up(&server);
    let start = Instant::now();
    while !server.log().contains("could not be read again") {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", server.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(served_is(port, &renewed), "same", "the certificate in use stays");
    assert_eq!(server.get_json("/health").0, 200);
    server.terminate(Duration::from_secs(10));
}
