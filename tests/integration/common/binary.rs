//! Running the built `tidings` binary: one-shot commands and a server on a free loopback port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_tidings");

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Not passed to the server: [`Server::start`] runs it under `prlimit --as=<this many bytes>`.
pub const ADDRESS_SPACE: &str = "TEST_ADDRESS_SPACE";

/// A command of the binary run in `dir`, with no inherited `TIDINGS_*` variables.
pub fn bare_command(dir: &Path, args: &[&str]) -> Command {
    clean(Command::new(BIN), dir, args)
}

/// The binary run in `dir` under an address-space limit of `bytes` (`prlimit --as`, util-linux).
fn limited_command(dir: &Path, args: &[&str], bytes: &str) -> Command {
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={bytes}")).arg("--").arg(BIN);
    let mut cmd = clean(cmd, dir, args);
    cmd.env("TIDINGS_AUTH__BCRYPT_COST", "4");
    cmd
}

fn clean(mut cmd: Command, dir: &Path, args: &[&str]) -> Command {
    cmd.current_dir(dir).args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("TIDINGS_") || key == "DISABLE_SIGNUPS" || key == "RUST_LOG" {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// As [`bare_command`], with cheap bcrypt so tests stay fast.
pub fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = bare_command(dir, args);
    cmd.env("TIDINGS_AUTH__BCRYPT_COST", "4");
    cmd
}

/// Runs a command to completion.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(dir, args);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

/// A user and a project of theirs made with the command line in `dir`: the project as
/// `project create` prints it (with both keys).
pub fn cli_project(dir: &Path) -> Value {
    let cli = |args: &[&str], stdin: Option<&str>| -> String {
        let mut child = command(dir, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    cli(
        &["user", "create", "--email", "bench@example.com", "--password-stdin"],
        Some("benchmark password\n"),
    );
    serde_json::from_str(&cli(
        &["project", "create", "--name", "Bench", "--owner", "bench@example.com"],
        None,
    ))
    .unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// An HTTP agent that returns 4xx and 5xx answers instead of failing on them.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// `tidings serve` on a free port, killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    log: PathBuf,
}

impl Server {
    /// Starts the server in `dir` on a free port with the given extra environment.
    ///
    /// The port is free when chosen, but another test may take it before the server binds it:
    /// then the server exits saying so, and it is started again on another port (were it left,
    /// `wait_healthy` could find the other test's server answering on that port).
    pub fn start(dir: &Path, env: &[(&str, &str)]) -> Server {
        let mut attempt = 0;
        loop {
            let port = free_port();
            let limit = env.iter().find(|(key, _)| *key == ADDRESS_SPACE).map(|(_, bytes)| *bytes);
            let mut cmd = match limit {
                Some(bytes) => limited_command(dir, &["serve"], bytes),
                None => command(dir, &["serve"]),
            };
            cmd.env("TIDINGS_SERVER__PORT", port.to_string())
                .env("TIDINGS_SERVER__SHUTDOWN_GRACE_SECS", "1")
                // Tests sign up many accounts (the default, first only, is tested with the app).
                .env("TIDINGS_AUTH__DISABLE_SIGNUPS", "false")
                .envs(env.iter().filter(|(key, _)| *key != ADDRESS_SPACE).copied());
            let mut server = Self::spawn(cmd, dir, port);
            if !server.lost_its_port() || attempt == 5 {
                return server;
            }
            attempt += 1;
        }
    }

    /// Waits until the server listens or exits; whether it exited because its port was taken.
    fn lost_its_port(&mut self) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.log().contains(&format!("listening on http://127.0.0.1:{}", self.port)) {
                return false;
            }
            if let Some(child) = self.child.as_mut()
                && child.try_wait().unwrap().is_some()
            {
                return self.log().contains("Address already in use");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Starts `tidings serve` in `dir` with no configuration at all (port 8080).
    pub fn start_unconfigured(dir: &Path) -> Server {
        Self::spawn(bare_command(dir, &["serve"]), dir, 8080)
    }

    fn spawn(mut cmd: Command, dir: &Path, port: u16) -> Server {
        let log = dir.join(format!("serve-{port}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn().unwrap();
        Server { child: Some(child), port, dir: dir.to_path_buf(), log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Waits for the first 200 from `/health`; returns how long it took.
    pub fn wait_healthy(&mut self, timeout: Duration) -> Duration {
        let start = Instant::now();
        let agent = agent();
        while start.elapsed() < timeout {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("server exited early ({status}):\n{}", self.log());
            }
            if let Ok(res) = agent.get(&self.url("/health")).call()
                && res.status() == 200
            {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("server not healthy within {timeout:?}:\n{}", self.log());
    }

    pub fn get_json(&self, path: &str) -> (u16, Value) {
        let mut res = agent().get(&self.url(path)).call().unwrap();
        let status = res.status().as_u16();
        (status, res.body_mut().read_json().unwrap_or(Value::Null))
    }

    /// A JSON POST with `Authorization: Bearer <key>`: the status and the body.
    pub fn post_keyed(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        let mut res = agent()
            .post(&self.url(path))
            .header("Authorization", &format!("Bearer {key}"))
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        (res.status().as_u16(), res.body_mut().read_json().unwrap_or(Value::Null))
    }

    /// A JSON PATCH with `Authorization: Bearer <key>`: the status and the body.
    pub fn patch_keyed(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        let mut res = agent()
            .patch(&self.url(path))
            .header("Authorization", &format!("Bearer {key}"))
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        (res.status().as_u16(), res.body_mut().read_json().unwrap_or(Value::Null))
    }

    /// A request of any method with `headers` and `bytes` as its JSON body: the status and the
    /// body, or the client's error (a server may answer a body past its cap before the client
    /// has written it all, and close the connection).
    pub fn send_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        bytes: &[u8],
    ) -> Result<(u16, Value), ureq::Error> {
        let mut request = ureq::http::Request::builder().method(method).uri(self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.header("content-type", "application/json").body(bytes).unwrap();
        let mut res = agent().run(request)?;
        Ok((res.status().as_u16(), res.body_mut().read_json().unwrap_or(Value::Null)))
    }

    /// A GET with `Authorization: Bearer <key>`: the body.
    pub fn get_keyed(&self, path: &str, key: &str) -> Value {
        agent()
            .get(&self.url(path))
            .header("Authorization", &format!("Bearer {key}"))
            .call()
            .unwrap()
            .body_mut()
            .read_json()
            .unwrap()
    }

    /// Uploads `csv` to `POST /contacts/import`; returns the job id.
    pub fn upload_csv(&self, key: &str, csv: &[u8]) -> String {
        let boundary = "tidings-binary-boundary-5kQ2";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(csv);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut res = agent()
            .post(&self.url("/contacts/import"))
            .header("Authorization", &format!("Bearer {key}"))
            .header("content-type", &format!("multipart/form-data; boundary={boundary}"))
            .send(&body[..])
            .unwrap();
        assert_eq!(res.status().as_u16(), 202);
        let job: Value = res.body_mut().read_json().unwrap();
        job["jobId"].as_str().unwrap().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends SIGTERM and waits for the exit.
    /// Kills the server with SIGKILL (a crash: nothing of it runs on) and waits for it to be gone.
    pub fn kill(&mut self) {
        Command::new("kill").args(["-KILL", &self.pid().to_string()]).status().unwrap();
        let status = self.wait(Duration::from_secs(10));
        assert!(!status.success(), "killed");
    }

    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let status = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().unwrap();
        assert!(status.success());
        self.wait(timeout)
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let start = Instant::now();
        let child = self.child.as_mut().unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(start.elapsed() < timeout, "server did not exit within {timeout:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `GET path` with `key` every 100 ms until `done` holds for its body; fails after `timeout`.
pub fn wait_until(
    server: &Server,
    key: &str,
    path: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let body = server.get_keyed(path, key);
        if done(&body) {
            return body;
        }
        assert!(start.elapsed() < timeout, "{path} did not get there in {timeout:?}: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
