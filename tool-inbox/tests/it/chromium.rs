//! Headless Chromium over WebDriver for the page's tests and its timing
//! benchmark (`benches/page.rs` includes this file): chromedriver started
//! on a free loopback port, a session with a profile of its own.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

/// Chromium and chromedriver, when both are installed.
pub fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
            .find(|candidate| candidate.is_file())
    };
    let chromium = find(&["chromium", "chromium-browser", "google-chrome"])?;
    let driver = find(&["chromedriver"])?;
    Some((chromium, driver))
}

/// chromedriver, killed when dropped.
pub struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    pub fn start(path: &Path) -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not listen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn session(driver: &Driver, chromium: &Path, profile: &Path) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                format!("--user-data-dir={}", profile.display()), "--window-size=1100,1400",
            ],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

/// A browser for one test or benchmark: its profile in a temporary
/// directory, chromedriver, and the session; `None` (with a notice) when
/// Chromium or chromedriver is missing, unless `REQUIRE_BROWSER=1`, which
/// fails instead.
pub struct Browser {
    pub client: Client,
    // Dropped after the client: chromedriver, then the directory.
    _driver: Driver,
    pub dir: tempfile::TempDir,
}

impl Browser {
    pub async fn start(prefix: &str) -> Option<Browser> {
        let Some((chromium, chromedriver)) = browser() else {
            assert!(
                std::env::var_os("REQUIRE_BROWSER").is_none_or(|v| v != "1"),
                "REQUIRE_BROWSER=1 but chromium or chromedriver is not on PATH"
            );
            eprintln!(
                "skipped: chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
            );
            return None;
        };
        // Removed when dropped, also when the test fails.
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("profile")).unwrap();
        let driver = Driver::start(&chromedriver);
        let client = session(&driver, &chromium, &dir.path().join("profile")).await;
        Some(Browser {
            client,
            _driver: driver,
            dir,
        })
    }

    /// Where the test keeps its files (a store).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// axe-core's script (`AXE_CORE`: the path of its `axe.min.js`, which
/// `.ci/run` installs from npm); `None` with a notice when unset, unless
/// `REQUIRE_BROWSER=1`, which fails instead.
fn axe_core() -> Option<String> {
    let Some(path) = std::env::var_os("AXE_CORE") else {
        assert!(
            std::env::var_os("REQUIRE_BROWSER").is_none_or(|v| v != "1"),
            "REQUIRE_BROWSER=1 but AXE_CORE (the path of axe-core's axe.min.js) is not set"
        );
        eprintln!(
            "accessibility check skipped: set AXE_CORE to axe-core's axe.min.js (npm install axe-core)"
        );
        return None;
    };
    Some(std::fs::read_to_string(&path).expect("AXE_CORE names a readable axe.min.js"))
}

/// Runs axe-core on the page as it is now and fails on any serious or
/// critical violation (`what` names the page's state in the message).
pub async fn assert_accessible(client: &Client, what: &str) {
    let Some(axe) = axe_core() else {
        return;
    };
    client.execute(&axe, vec![]).await.unwrap();
    let violations = client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               axe.run(document, { resultTypes: ['violations'] })
                 .then(result => done(result.violations
                   .filter(v => v.impact === 'serious' || v.impact === 'critical')
                   .map(v => ({ id: v.id, impact: v.impact, help: v.help,
                                nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ')) }))))
                 .catch(error => done([{ id: 'axe-failed', help: String(error) }]));"#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        violations,
        json!([]),
        "axe-core: serious or critical violations {what}"
    );
}
