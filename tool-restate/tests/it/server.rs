//! A Restate server for one test: started on free ports of 127.0.0.1 with a
//! data directory of its own, ready once its SQL introspection answers,
//! the test's endpoint registered through its admin API; killed and removed
//! when dropped.

use std::net::TcpListener as StdListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tool_restate::RestateTools;

/// A running server.
pub struct Restate {
    binary: std::ffi::OsString,
    child: Child,
    dir: tempfile::TempDir,
    ports: Ports,
    /// `http://127.0.0.1:PORT` of the ingress.
    pub ingress: String,
    /// `http://127.0.0.1:PORT` of the admin API.
    pub admin: String,
    http: reqwest::Client,
}

/// The ports a server listens on.
#[derive(Debug, Clone, Copy)]
struct Ports {
    admin: u16,
    ingress: u16,
    node: u16,
}

/// A port free when asked.
fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// The server `binary` on `ports`, its data in `dir`.
fn spawn(binary: &std::ffi::OsStr, dir: &std::path::Path, ports: Ports) -> Child {
    Command::new(binary)
        .arg("--no-logo")
        .env_remove("RUST_LOG")
        .env("RESTATE_BASE_DIR", dir)
        .env("RESTATE_NODE_NAME", "n1")
        .env("RESTATE_BIND_IP", "127.0.0.1")
        .env("RESTATE_ADMIN__BIND_PORT", ports.admin.to_string())
        .env("RESTATE_INGRESS__BIND_PORT", ports.ingress.to_string())
        .env("RESTATE_BIND_PORT", ports.node.to_string())
        .env("RESTATE_LISTEN_MODE", "tcp")
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        .env("RESTATE_DEFAULT_NUM_PARTITIONS", "1")
        .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "256MiB")
        .env("RESTATE_LOG_FILTER", "error,octocrab=off")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("restate-server starts")
}

impl Restate {
    /// A server, or `None` (with a notice) where none is installed, unless
    /// `REQUIRE_RESTATE=1`.
    pub async fn start() -> Option<Restate> {
        let binary =
            std::env::var_os("RESTATE_SERVER").filter(|path| std::path::Path::new(path).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var("REQUIRE_RESTATE").as_deref() != Ok("1"),
                "REQUIRE_RESTATE=1 but RESTATE_SERVER names no restate-server binary"
            );
            eprintln!(
                "skipping: no Restate server (set RESTATE_SERVER to a restate-server binary; .ci/run installs one from npm)"
            );
            return None;
        };
        // A port taken between asking and binding makes the server exit:
        // start again on others.
        for _ in 0..5 {
            let dir = tempfile::Builder::new()
                .prefix("rs")
                .tempdir_in("/tmp")
                .expect("temp dir");
            let ports = Ports {
                admin: free_port(),
                ingress: free_port(),
                node: free_port(),
            };
            let mut server = Restate {
                child: spawn(&binary, dir.path(), ports),
                binary: binary.clone(),
                ingress: format!("http://127.0.0.1:{}", ports.ingress),
                admin: format!("http://127.0.0.1:{}", ports.admin),
                http: reqwest::Client::new(),
                dir,
                ports,
            };
            if server.ready().await {
                return Some(server);
            }
            let _ = server.child.kill().await;
        }
        panic!("the Restate server did not start on five sets of ports");
    }

    /// Kills the server (SIGKILL) and starts it again on the same ports and
    /// data.
    pub async fn restart(&mut self) {
        self.child.kill().await.expect("SIGKILL the server");
        self.child = spawn(&self.binary, self.dir.path(), self.ports);
        assert!(self.ready().await, "the restarted server exited");
    }

    /// Waits until its SQL introspection answers (health answers earlier,
    /// before it can serve invocations); false if it exited.
    async fn ready(&mut self) -> bool {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(_exited)) = self.child.try_wait() {
                return false;
            }
            if self
                .query("SELECT count(*) AS c FROM sys_invocation")
                .await
                .is_ok()
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the Restate server was not ready within 60 s");
    }

    /// Rows of a query of its SQL introspection.
    pub async fn query(&self, sql: &str) -> Result<Vec<Value>, String> {
        let response = self
            .http
            .post(format!("{}/query", self.admin))
            .header("accept", "application/json")
            .json(&json!({ "query": sql }))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(response.text().await.unwrap_or_default());
        }
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        Ok(body["rows"].as_array().cloned().unwrap_or_default())
    }

    /// Registers the endpoint at `uri` (its services become callable).
    pub async fn register(&self, uri: &str) {
        let response = self
            .http
            .post(format!("{}/deployments", self.admin))
            .json(&json!({ "uri": uri, "force": true }))
            .send()
            .await
            .expect("admin API");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "registering {uri}: {status} {body}");
    }

    /// Serves `tools` on a free port of this process and registers them.
    pub async fn serve(&self, tools: &RestateTools) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let uri = format!("http://{}", listener.local_addr().expect("addr"));
        let tools = tools.clone();
        tokio::spawn(async move { tools.serve(listener).await });
        self.register(&uri).await;
    }
}
