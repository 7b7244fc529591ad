//! An HTTP receiver on loopback for tests: it keeps every request (method, path, headers, body)
//! and answers with the status it is told to (200 by default), after an optional delay, with the
//! JSON body set for the request's path (`{"got":true}` otherwise), or with what a handler makes
//! of the request. One request per connection (`Connection: close`), which is all the webhook
//! and Stripe clients need.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request the receiver got.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: HashMap<String, String>,
    pub body: String,
}

/// An answer made from the request and the requests before it: status, headers and body.
pub type Handler = Arc<dyn Fn(&Request, &[Request]) -> (u16, Vec<(String, String)>, String) + Send + Sync>;

#[derive(Default)]
struct Shared {
    requests: Vec<Request>,
    status: u16,
    delay: Duration,
    /// Bodies by path (without the query).
    bodies: HashMap<String, String>,
    /// Answers made per request, by path (without the query); they take precedence.
    handlers: HashMap<String, Handler>,
}

pub struct HttpReceiver {
    pub port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl HttpReceiver {
    pub fn start() -> HttpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Mutex::new(Shared { status: 200, ..Shared::default() }));
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accepting.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        HttpReceiver { port, shared }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Answers the next requests with `status`.
    pub fn answer(&self, status: u16) {
        self.shared.lock().unwrap().status = status;
    }

    /// Answers requests for `path` (the query left out) with `body`.
    pub fn respond(&self, path: &str, body: &str) {
        self.shared.lock().unwrap().bodies.insert(path.into(), body.into());
    }

    /// Answers requests for `path` with what `handler` makes of each (a redirect, a body built
    /// from an earlier request).
    pub fn handle(
        &self,
        path: &str,
        handler: impl Fn(&Request, &[Request]) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
    ) {
        self.shared.lock().unwrap().handlers.insert(path.into(), Arc::new(handler));
    }

    /// Answers only after `delay`.
    pub fn delay(&self, delay: Duration) {
        self.shared.lock().unwrap().delay = delay;
    }

    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// Waits up to `timeout` for `n` requests.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Request> {
        let start = Instant::now();
        while self.requests().len() < n && start.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.requests()
    }
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, delay, headers, answer) = {
        let mut shared = shared.lock().unwrap();
        let route = path.split('?').next().unwrap_or_default().to_string();
        let request = Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() };
        let (status, extra, answer) = match shared.handlers.get(&route).cloned() {
            Some(handler) => handler(&request, &shared.requests),
            None => (
                shared.status,
                Vec::new(),
                shared.bodies.get(&route).cloned().unwrap_or_else(|| "{\"got\":true}".into()),
            ),
        };
        shared.requests.push(request);
        (status, shared.delay, extra, answer)
    };
    std::thread::sleep(delay);
    let mut stream = stream;
    let mut extra: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
        extra.push_str("Content-Type: application/json\r\n");
    }
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Answer\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = stream.flush();
}
