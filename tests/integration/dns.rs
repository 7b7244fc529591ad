//! The resolver module against real DNS servers on loopback.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tidings::adapters::dns::{Answer, Dns, Failure, Mx};
use tidings::config::DnsConfig;

use crate::common::dns_server::{DnsServer, servfail_server, silent_server};

fn resolver(server: std::net::SocketAddr, timeout_ms: u32) -> Dns {
    Dns::new(&DnsConfig { nameservers: vec![server], timeout_ms, domain_check_interval_secs: 300 })
}

#[rocket::async_test]
async fn answers_are_told_apart() {
    let server = DnsServer::start(&["test"]).await;
    server.txt("example.test", "v=spf1 -all").await;
    server.txt("example.test", &"k".repeat(400)).await;
    server.mx("example.test", 10, "mx1.example.test").await;
    server.null_mx("nomail.test").await;
    server.a("www.example.test", Ipv4Addr::new(192, 0, 2, 1)).await;
    server.aaaa("www.example.test", "2001:db8::1".parse().unwrap()).await;
    server.ns("test", "ns1.test").await;
    let dns = resolver(server.nameserver(), 2000);

    let mut txt = dns.txt("example.test").await.records().to_vec();
    txt.sort();
    assert_eq!(txt, ["k".repeat(400), "v=spf1 -all".to_string()], "long TXT strings are joined");
    assert_eq!(
        dns.mx("example.test").await,
        Answer::Found(vec![Mx { preference: 10, exchange: "mx1.example.test".into() }])
    );
    assert!(dns.mx("nomail.test").await.records()[0].is_null());
    assert_eq!(dns.a("www.example.test").await, Answer::Found(vec!["192.0.2.1".parse().unwrap()]));
    assert_eq!(dns.aaaa("www.example.test").await, Answer::Found(vec!["2001:db8::1".parse().unwrap()]));
    assert_eq!(dns.ns("test").await, Answer::Found(vec!["ns1.test".to_string()]));
    assert_eq!(dns.a("example.test").await, Answer::NoData, "the name exists without A records");
    assert_eq!(dns.txt("missing.test").await, Answer::NxDomain);
    assert_eq!(dns.aaaa("missing.test").await, Answer::NxDomain);
}

#[rocket::async_test]
async fn answers_are_cached_until_told_to_look_again() {
    let server = DnsServer::start(&["test"]).await;
    server.txt("cached.test", "one").await;
    let dns = resolver(server.nameserver(), 2000);
    assert_eq!(dns.txt("cached.test").await.records(), ["one".to_string()]);
    let after_first = server.queries();
    for _ in 0..20 {
        assert_eq!(dns.txt("cached.test").await.records(), ["one".to_string()]);
    }
    assert_eq!(server.queries(), after_first, "a burst of lookups makes one query");
    server.remove("cached.test", hickory_resolver::proto::rr::RecordType::TXT).await;
    server.txt("cached.test", "two").await;
    assert_eq!(dns.txt("cached.test").await.records(), ["one".to_string()], "still cached");
    dns.fresh("cached.test", &[hickory_resolver::proto::rr::RecordType::TXT]);
    assert_eq!(dns.txt("cached.test").await.records(), ["two".to_string()]);
}

#[rocket::async_test]
async fn timeouts_and_server_failures_are_failures() {
    let dns = resolver(silent_server(), 300);
    let started = Instant::now();
    assert_eq!(dns.txt("example.test").await, Answer::Failed(Failure::Timeout));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    let dns = resolver(servfail_server(), 500);
    assert_eq!(dns.mx("example.test").await, Answer::Failed(Failure::ServFail));
}
