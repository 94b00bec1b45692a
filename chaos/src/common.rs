//! What every process of the test shares: the command line, the store it
//! names, the chaos tools' ids, a seeded PRNG, the clock.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// (a) approval required, not retry-safe: a recovery settles it as interrupted.
pub const APPROVE: &str = "chaos_approve";
/// (b) approval required and retry-safe: a recovery runs it again.
pub const APPROVE_SAFE: &str = "chaos_approve_safe";
/// (c) a background task with retries: a recovery runs it again.
pub const TASK_RETRY: &str = "chaos_task_retry";
/// (d) a background task without retries: a recovery settles it as interrupted.
pub const TASK_ONCE: &str = "chaos_task_once";
/// (e) suspends on its first run; a decider resumes it.
pub const SUSPEND: &str = "chaos_suspend";
/// (f) transactional: its effect (a `chaos_effects` row) is written in the
/// runtime's transaction and commits with the outcome or not at all; some
/// of its calls require approval (`{"approval": true}`), the others run at
/// once in the front.
pub const TRANSACTIONAL: &str = "chaos_transactional";

/// The command line, as `--key value` pairs and bare flags.
pub struct Args {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    pub fn parse(raw: &[String]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut flags = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let key = raw[i]
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {:?}", raw[i]))?;
            match raw.get(i + 1) {
                Some(value) if !value.starts_with("--") => {
                    values.insert(key.to_owned(), value.clone());
                    i += 2;
                }
                _ => {
                    flags.push(key.to_owned());
                    i += 1;
                }
            }
        }
        Ok(Args { values, flags })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    pub fn need(&self, key: &str) -> Result<&str, String> {
        self.get(key).ok_or_else(|| format!("missing --{key}"))
    }

    pub fn num(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|e| format!("--{key} {text:?}: {e}")),
        }
    }

    pub fn flag(&self, key: &str) -> bool {
        self.flags.iter().any(|flag| flag == key)
    }
}

/// The shared store the runtimes use, and where the chaos tables are.
#[derive(Clone, Debug)]
pub enum Store {
    /// A PostgreSQL database: the store's tables and the chaos tables.
    Postgres { url: String },
    /// A SQLite store file, and the chaos tables in a file of their own.
    Sqlite { path: String, chaos: String },
}

impl Store {
    pub fn from_args(args: &Args) -> Result<Store, String> {
        match args.need("store")? {
            "postgres" => Ok(Store::Postgres {
                url: args.need("url")?.to_owned(),
            }),
            "sqlite" => {
                let path = args.need("path")?.to_owned();
                let chaos = args
                    .get("chaos-db")
                    .map_or_else(|| format!("{path}.chaos"), str::to_owned);
                Ok(Store::Sqlite { path, chaos })
            }
            other => Err(format!("--store {other:?}: postgres or sqlite")),
        }
    }

    /// The arguments that name this store to a child.
    pub fn to_args(&self) -> Vec<String> {
        match self {
            Store::Postgres { url } => vec![
                "--store".into(),
                "postgres".into(),
                "--url".into(),
                url.clone(),
            ],
            Store::Sqlite { path, chaos } => vec![
                "--store".into(),
                "sqlite".into(),
                "--path".into(),
                path.clone(),
                "--chaos-db".into(),
                chaos.clone(),
            ],
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Store::Postgres { .. })
    }
}

/// A small seeded PRNG (SplitMix64): the runs are reproducible in what the
/// driver decides, without a dependency.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi.saturating_sub(lo) + 1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A stable hash of a string (FNV-1a), for per-call choices every process
/// makes alike.
pub fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Microseconds since the Unix epoch, by this process's clock.
pub fn now_us() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}
