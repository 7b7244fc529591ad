//! Real DNS servers on loopback for tests and benchmarks.
//!
//! - [`DnsServer`]: hickory-server answering authoritatively for the zones it is given, over UDP
//!   and TCP, with records added and removed while it runs, and a count of the queries it got.
//! - [`silent_server`]: takes queries and never answers (timeouts).
//! - [`servfail_server`]: answers every query with SERVFAIL.

#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::{Time, TokioRuntimeProvider};
use hickory_server::proto::rr::rdata::{A, AAAA, CNAME, MX, NS, SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneHandler, ZoneType};

const TTL: u32 = 300;

/// Counts queries, then lets the catalog answer.
struct Counting {
    catalog: Catalog,
    queries: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl RequestHandler for Counting {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response: R,
    ) -> ResponseInfo {
        self.queries.fetch_add(1, Ordering::SeqCst);
        self.catalog.handle_request::<R, T>(request, response).await
    }
}

/// An authoritative DNS server on 127.0.0.1 (UDP and TCP on one port).
pub struct DnsServer {
    pub addr: SocketAddr,
    zones: Vec<(Name, Arc<InMemoryZoneHandler>)>,
    queries: Arc<AtomicUsize>,
    server: Server<Counting>,
}

fn name(text: &str) -> Name {
    let text = if text.ends_with('.') { text.to_string() } else { format!("{text}.") };
    Name::from_str(&text).unwrap_or_else(|e| panic!("bad DNS name {text}: {e}"))
}

impl DnsServer {
    /// Serves the zones named (e.g. `["test", "com"]`), empty but for their SOA records.
    pub async fn start(zones: &[&str]) -> DnsServer {
        let mut catalog = Catalog::new();
        let mut handlers = Vec::new();
        for zone in zones {
            let origin = name(zone);
            let handler = Arc::new(InMemoryZoneHandler::<TokioRuntimeProvider>::empty(
                origin.clone(),
                ZoneType::Primary,
                AxfrPolicy::Deny,
            ));
            let soa = SOA::new(
                name(&format!("ns.{zone}")),
                name(&format!("admin.{zone}")),
                1,
                3600,
                600,
                86400,
                60,
            );
            handler.upsert(Record::from_rdata(origin.clone(), TTL, RData::SOA(soa)), 1).await;
            catalog.upsert(LowerName::new(&origin), vec![handler.clone() as Arc<dyn ZoneHandler>]);
            handlers.push((origin, handler));
        }
        let queries = Arc::new(AtomicUsize::new(0));
        let mut server = Server::new(Counting { catalog, queries: queries.clone() });
        // UDP and TCP on one port: take a free UDP port, and try again if its TCP twin is taken.
        let (udp, tcp, addr) = {
            let mut attempt = 0;
            loop {
                let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
                let addr = udp.local_addr().unwrap();
                match tokio::net::TcpListener::bind(addr).await {
                    Ok(tcp) => break (udp, tcp, addr),
                    Err(e) if attempt < 20 => {
                        attempt += 1;
                        let _ = e;
                    }
                    Err(e) => panic!("no port free for both UDP and TCP: {e}"),
                }
            }
        };
        server.register_socket(udp);
        server.register_listener(tcp, Duration::from_secs(5), 64);
        DnsServer { addr, zones: handlers, queries, server }
    }

    fn zone_of(&self, owner: &Name) -> &Arc<InMemoryZoneHandler> {
        self.zones
            .iter()
            .filter(|(origin, _)| origin.zone_of(owner))
            .max_by_key(|(origin, _)| origin.num_labels())
            .map(|(_, zone)| zone)
            .unwrap_or_else(|| panic!("no zone serves {owner}"))
    }

    /// Adds a record (records of a type at a name accumulate; adding one twice changes nothing).
    pub async fn add(&self, owner: &str, data: RData) {
        let owner = name(owner);
        let zone = self.zone_of(&owner);
        zone.upsert(Record::from_rdata(owner, TTL, data), 2).await;
    }

    /// A TXT record; values longer than 255 bytes are split into several strings, as DNS needs.
    pub async fn txt(&self, owner: &str, value: &str) {
        let parts = value.as_bytes().chunks(255).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
        self.add(owner, RData::TXT(TXT::new(parts))).await;
    }

    pub async fn mx(&self, owner: &str, preference: u16, exchange: &str) {
        self.add(owner, RData::MX(MX::new(preference, name(exchange)))).await;
    }

    /// `MX 0 .`: the domain accepts no mail (RFC 7505).
    pub async fn null_mx(&self, owner: &str) {
        self.add(owner, RData::MX(MX::new(0, Name::root()))).await;
    }

    pub async fn a(&self, owner: &str, ip: Ipv4Addr) {
        self.add(owner, RData::A(A(ip))).await;
    }

    pub async fn aaaa(&self, owner: &str, ip: Ipv6Addr) {
        self.add(owner, RData::AAAA(AAAA(ip))).await;
    }

    pub async fn cname(&self, owner: &str, target: &str) {
        self.add(owner, RData::CNAME(CNAME(name(target)))).await;
    }

    pub async fn ns(&self, owner: &str, host: &str) {
        self.add(owner, RData::NS(NS(name(host)))).await;
    }

    /// Removes every record of `record_type` at `owner`.
    pub async fn remove(&self, owner: &str, record_type: RecordType) {
        let owner = name(owner);
        let zone = self.zone_of(&owner);
        zone.records_mut().await.remove(&RrKey::new(LowerName::new(&owner), record_type));
    }

    /// Queries answered so far.
    pub fn queries(&self) -> usize {
        self.queries.load(Ordering::SeqCst)
    }

    /// The `[dns] nameservers` entry for this server.
    pub fn nameserver(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.server.shutdown_token().cancel();
    }
}

/// A loopback address that takes DNS queries (UDP and TCP) and never answers.
pub fn silent_server() -> SocketAddr {
    // UDP and TCP on one port: take a free UDP port, and try again if its TCP twin is taken.
    let (udp, tcp, addr) = (0..20)
        .find_map(|_| {
            let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let addr = udp.local_addr().unwrap();
            std::net::TcpListener::bind(addr).ok().map(|tcp| (udp, tcp, addr))
        })
        .expect("no port free for both UDP and TCP");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let mut buf = [0u8; 4096];
        udp.set_nonblocking(true).unwrap();
        tcp.set_nonblocking(true).unwrap();
        loop {
            let _ = udp.recv_from(&mut buf);
            if let Ok((stream, _)) = tcp.accept() {
                held.push(stream);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    addr
}

/// A loopback DNS server that answers every query with SERVFAIL.
pub fn servfail_server() -> SocketAddr {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = udp.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            if n < 12 {
                continue;
            }
            // The query turned into its own answer: QR set, RCODE 2 (SERVFAIL), no records.
            let mut answer = buf[..n].to_vec();
            answer[2] |= 0x80;
            answer[3] = (answer[3] & 0xf0) | 2;
            let _ = udp.send_to(&answer, from);
        }
    });
    addr
}
