//! Stored calls in a PostgreSQL database: shared by runtimes on any number
//! of hosts, and surviving the death of any of them.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use deadpool_postgres::{
    Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime as PoolRuntime,
};
use noted::NotedColumns;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Config, NoTls, Row};
use tool_core::Excerpt;

use super::{
    AuditEntry, AuditLog, AuditQuery, AuditRetention, CallState, CallStore, Decided, Expected,
    Noted, Notification, PendingCall, PendingKind, PendingOrder, PendingQuery, Retention,
    Revocation, RuleStore, RunStore, Settlement, StandingRule, StoreError, StoreTransaction,
    StoredCall, StoredHead, StoredRun, TaskSignal, TaskSignaller, Transition, storable_audit,
    storable_call, storable_id, storable_json, storable_notifications, storable_rule,
    storable_run_record,
};

mod noted;
mod outbox;
mod transaction;

pub use transaction::{PostgresTransaction, TransactionError};

/// The schema version this build creates and reads, recorded in
/// `tool_runtime_schema`: 11 keeps the outbox of notifications
/// ([`ADD_OUTBOX`]); 10 orders waiting calls by time
/// ([`ADD_WAITING_ORDERS`]); 9 keeps standing rules ([`ADD_RULES`]); 8 keeps the approvals a call needs and its own
/// time limit ([`ADD_APPROVALS_TIMEOUT`]); 7 keeps when calls were asked for
/// ([`ADD_ASKED_AT`]); 6 adds the audit log ([`ADD_AUDIT`]); 5 remembers
/// the ids of calls purged by the size bound ([`ADD_PURGED`]); 4 lets calls
/// wait for their output ([`ADD_OUTPUT_KIND`]); 3 adds fencing tokens
/// ([`ADD_FENCING`]); 2 adds agent runs (`tool_runtime_runs`) to the calls
/// of version 1. Versions 1 to 10 are migrated.
const SCHEMA_VERSION: i32 = 11;
/// Connections the pool keeps at most: every store operation is one short
/// statement or transaction, so a few serve many concurrent calls.
const MAX_CONNECTIONS: usize = 8;
/// Connections the pool of transactional calls keeps at most: each holds
/// one for its tool's whole run. A pool of their own, so that the store's
/// own work (renewals, claims, decisions) never waits for them.
const TRANSACTION_CONNECTIONS: usize = 16;
/// Connections the pool of running calls' renewals and outcomes keeps at
/// most: a pool of their own, so that a burst of decisions and reads
/// queued for the main pool never holds a running call's renewal past its
/// lease (measured: 6,000 concurrent decisions on 8 connections queued
/// renewals for over a second, and calls were stopped at their lease).
const LEASE_CONNECTIONS: usize = 2;
/// How long the pool waits to connect, for a free connection, or to check
/// one: a database that does not answer is an error, not a hang.
const POOL_TIMEOUT: Duration = Duration::from_secs(10);
/// Key of the advisory lock that serializes schema setup, so that processes
/// connecting to a new database at once create the tables once ("tool").
const SETUP_LOCK: i64 = 0x746F_6F6C;
/// The channel on which inserting a task notifies (`pg_notify`) and workers
/// listen. Channels are per database, not per schema: a worker may wake for
/// another schema's task, finds nothing to claim, and waits again.
const TASK_CHANNEL: &str = "tool_runtime_tasks";
/// The `application_name` of the listener's connection, as
/// `pg_stat_activity` shows it.
const LISTENER_NAME: &str = "tool_runtime_task_listener";
/// The wait before reconnecting a lost listener connection.
const RELISTEN_AFTER: Duration = Duration::from_secs(1);

/// The tables of schema version 1 (and of 2, with [`CREATE_RUNS`]). Times
/// are the database's clock; the JSON
/// values are `text`, not `jsonb`, which would drop duplicate keys and
/// reorder them: a call reads back exactly as it was stored.
const CREATE_TABLES: &str = "
CREATE TABLE tool_runtime_schema (version integer NOT NULL);
CREATE TABLE tool_runtime_calls (
    call_id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('approval', 'suspended', 'task')),
    tool_id text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'running', 'settled')),
    owner text,
    lease_expires_at timestamptz,
    attempt integer NOT NULL DEFAULT 0,
    input text NOT NULL,
    request_context text NOT NULL,
    messages text NOT NULL,
    payload text,
    resume_data text,
    outcome text,
    settled_at timestamptz
);
CREATE INDEX tool_runtime_calls_expiring ON tool_runtime_calls (lease_expires_at)
    WHERE state = 'running';
CREATE INDEX tool_runtime_calls_settled ON tool_runtime_calls (settled_at)
    WHERE state = 'settled';";

/// The table schema version 2 adds: agent runs, their record as `text`
/// (read back exactly as stored), `saved_at` the database's clock.
const CREATE_RUNS: &str = "
CREATE TABLE tool_runtime_runs (
    run_id text PRIMARY KEY,
    revision bigint NOT NULL,
    finished boolean NOT NULL,
    record text NOT NULL,
    saved_at timestamptz NOT NULL
);
CREATE INDEX tool_runtime_runs_finished ON tool_runtime_runs (saved_at) WHERE finished;";

/// What schema version 4 changes: calls may wait for their output (a
/// declaration-only tool's, [`PendingKind::Output`]).
const ADD_OUTPUT_KIND: &str = "
ALTER TABLE tool_runtime_calls DROP CONSTRAINT IF EXISTS tool_runtime_calls_kind_check;
ALTER TABLE tool_runtime_calls ADD CONSTRAINT tool_runtime_calls_kind_check
    CHECK (kind IN ('approval', 'suspended', 'task', 'output'));";

/// What schema version 3 adds: each call's fencing token, drawn from a
/// sequence on every claim, so that a token never repeats, even for a call
/// id purged and used again.
const ADD_FENCING: &str = "
ALTER TABLE tool_runtime_calls ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
CREATE SEQUENCE tool_runtime_epochs;";

/// What schema version 5 adds: the ids of calls purged by the size bound of
/// the retention, with when (the database's clock), themselves purged after
/// the retention's age; and the agent context a call was made with (JSON
/// text, `NULL` for a call no agent made).
const ADD_PURGED: &str = "
CREATE TABLE tool_runtime_purged (
    call_id text PRIMARY KEY,
    purged_at timestamptz NOT NULL
);
CREATE INDEX tool_runtime_purged_by_time ON tool_runtime_purged (purged_at);
ALTER TABLE tool_runtime_calls ADD COLUMN agent text;";

/// What schema version 6 adds: the audit log, appended to and never
/// updated (`seq` orders it, `entry` is the entry as JSON text); who asked
/// for each call, and when an approval expires (milliseconds since the
/// Unix epoch).
const ADD_AUDIT: &str = "
CREATE TABLE tool_runtime_audit (
    seq bigserial PRIMARY KEY,
    call_id text NOT NULL,
    entry text NOT NULL
);
CREATE INDEX tool_runtime_audit_by_call ON tool_runtime_audit (call_id, seq);
CREATE INDEX tool_runtime_calls_waiting ON tool_runtime_calls (call_id COLLATE \"C\")
    WHERE state = 'pending';
ALTER TABLE tool_runtime_calls ADD COLUMN requester text;
ALTER TABLE tool_runtime_calls ADD COLUMN expires_at_ms bigint;";

/// What schema version 7 adds: when each call was first stored to wait
/// (milliseconds since the Unix epoch; `NULL` for calls stored before).
const ADD_ASKED_AT: &str = "ALTER TABLE tool_runtime_calls ADD COLUMN asked_at_ms bigint;";

/// What schema version 8 adds: the approvals a call waiting for approval
/// needs (JSON text of `RequiredApprovals`) and the call's own time limit
/// (milliseconds); `NULL` for calls stored before.
const ADD_APPROVALS_TIMEOUT: &str = "ALTER TABLE tool_runtime_calls ADD COLUMN approvals text;
ALTER TABLE tool_runtime_calls ADD COLUMN timeout_ms bigint;";

/// What schema version 9 adds: standing rules, each as JSON text, with the
/// columns that select those in force (`until_ms`, milliseconds since the
/// Unix epoch); `seq` keeps the order they were added in.
const ADD_RULES: &str = "
CREATE TABLE tool_runtime_rules (
    seq bigserial PRIMARY KEY,
    rule_id text NOT NULL UNIQUE,
    tool_id text NOT NULL,
    until_ms bigint NOT NULL,
    revoked boolean NOT NULL,
    rule text NOT NULL
);
CREATE INDEX tool_runtime_rules_in_force ON tool_runtime_rules (tool_id, until_ms)
    WHERE NOT revoked;";

/// What schema version 10 adds: an index of the waiting calls in each
/// order by time (`PendingOrder::Asked`, `Expires`), on the key a page
/// sorts by (a call without the time after every other: `NO_TIME`).
const ADD_WAITING_ORDERS: &str = "
CREATE INDEX tool_runtime_calls_waiting_by_asked ON tool_runtime_calls
    ((COALESCE(asked_at_ms, 9223372036854775807)), call_id COLLATE \"C\") WHERE state = 'pending';
CREATE INDEX tool_runtime_calls_waiting_by_expiry ON tool_runtime_calls
    ((COALESCE(expires_at_ms, 9223372036854775807)), call_id COLLATE \"C\") WHERE state = 'pending';";

/// What schema version 11 adds: the outbox of notifications, each written
/// in the transaction of the change it reports (`data` is its data as JSON
/// text), with its delivery (`state`; `lease_expires_at`, `next_at` and
/// `settled_at` in milliseconds since the Unix epoch, leases by the
/// database's clock; `delivered_to` a JSON array of sink names). The
/// partial index holds the unsettled notifications only, by call: what a
/// claim reads (few when delivery keeps up), and each an index more to
/// write with every notification.
const ADD_OUTBOX: &str = "
CREATE TABLE tool_runtime_outbox (
    seq bigserial PRIMARY KEY,
    id text NOT NULL,
    at_ms bigint NOT NULL,
    call_id text NOT NULL,
    tool_id text NOT NULL,
    kind text NOT NULL,
    data text NOT NULL,
    state text NOT NULL CHECK (state IN ('waiting', 'sending', 'delivered', 'dead')),
    owner text,
    lease_expires_at bigint,
    attempts integer NOT NULL DEFAULT 0,
    epoch bigint NOT NULL DEFAULT 0,
    next_at bigint NOT NULL,
    delivered_to text NOT NULL DEFAULT '[]',
    last_error text,
    settled_at bigint
);
CREATE INDEX tool_runtime_outbox_unsettled ON tool_runtime_outbox (call_id, seq)
    WHERE state IN ('waiting', 'sending');
CREATE INDEX tool_runtime_outbox_settled ON tool_runtime_outbox (settled_at)
    WHERE state IN ('delivered', 'dead');";

/// The columns a [`StoredCall`] is read from ([`PostgresStore::stored`]).
const COLUMNS: &str = "call_id, kind, tool_id, state, owner, lease_expires_at, attempt, \
     input, request_context, messages, payload, resume_data, outcome, settled_at, epoch, agent, \
     requester, expires_at_ms, asked_at_ms, approvals, timeout_ms";

/// A durable store ([`CallStore`], [`RunStore`], [`AuditLog`],
/// [`RuleStore`]) in a
/// PostgreSQL database, for runtimes on several hosts: pending approvals
/// and suspensions, running calls and recorded outcomes survive the death
/// of any process, and every runtime connected to the database sees every
/// call. Each transition is one atomic
/// statement (or one transaction), so a decision wins at most once across
/// all of them; lease times are the database's clock, so hosts whose clocks
/// disagree still agree on when a lease ends.
///
/// The store keeps its calls in the table `tool_runtime_calls`, agent runs
/// ([`save_run`](RunStore::save_run)) in `tool_runtime_runs`, the audit
/// log ([`AuditLog`]) in `tool_runtime_audit` and the schema version in
/// `tool_runtime_schema`, all created by [`connect`](Self::connect) when
/// missing, in the connection's current schema (the first of its `search_path`; a URL can set another, as
/// `?options=-csearch_path%3Dmy_schema`). A schema of version 1 (before
/// runs) is migrated to 2 when connecting; one whose schema version is
/// newer than this build knows is refused. (So a build of version 1 refuses
/// a schema that a newer build migrated: upgrade every instance.)
///
/// The connections are a pool of 8, without TLS, opened when connecting (as
/// many as the server allows; the others when needed). One unreadable
/// call (its stored JSON edited by hand) does not stop the store: `list`
/// logs it with its call id and serves the others, and `get` or a decision
/// on it is an error naming it; it is left in place for the operator.
///
/// Cloning is cheap: clones share the pool.
///
/// ```no_run
/// use tool_runtime::store::PostgresStore;
/// use tool_runtime::Runtime;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresStore::connect("postgres://app@db.internal/app").await?;
/// let runtime = Runtime::builder().store(store).build()?;
/// // Take over the calls of instances that died, then serve.
/// runtime.recover().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The connections of transactional calls' tools, opened when needed.
    transactions: Pool,
    /// The connections that renew running calls' leases and record their
    /// outcomes, opened when needed.
    leases: Pool,
    /// The database as errors name it: its URL without the password.
    location: Arc<str>,
    /// To connect the listener of task notifications, outside the pool.
    config: Arc<Config>,
    /// The signaller of the running listener, while anyone subscribes.
    listener: Arc<Mutex<Option<TaskSignaller>>>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (a libpq connection string: a
    /// `postgres://` URL or `key=value` pairs), creates the store's tables
    /// if they are missing and checks their schema version. Fails with an
    /// error naming the database (its URL without the password) when the
    /// URL does not parse, the server cannot be reached within 10 seconds,
    /// or the schema is of a newer version than this build knows.
    ///
    /// Connections are made on the tokio runtime this is called on.
    ///
    /// ```no_run
    /// use tool_runtime::store::PostgresStore;
    ///
    /// # async fn run() {
    /// match PostgresStore::connect("postgres://app:secret@localhost:5432/app").await {
    ///     Ok(store) => println!("connected to {}", store.location()),
    ///     // Names postgres://app@localhost:5432/app: never the password.
    ///     Err(error) => eprintln!("{error}"),
    /// }
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let config: Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::Io {
                location: "PostgreSQL".to_owned(),
                reason: format!("the connection string does not parse: {e}"),
                source: Some(Box::new(e)),
            })?;
        let location: Arc<str> = describe(&config).into();
        let pool = |max_size| {
            let manager = Manager::from_config(
                config.clone(),
                NoTls,
                // Only a closed connection is replaced: a check query per use
                // would double the round trips, and a connection that broke
                // unnoticed fails one operation with an error.
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            Pool::builder(manager)
                .max_size(max_size)
                .runtime(PoolRuntime::Tokio1)
                .create_timeout(Some(POOL_TIMEOUT))
                .wait_timeout(Some(POOL_TIMEOUT))
                .recycle_timeout(Some(POOL_TIMEOUT))
                .build()
                .map_err(|e| StoreError::Io {
                    location: location.to_string(),
                    reason: format!("cannot build the connection pool: {e}"),
                    source: Some(Box::new(e)),
                })
        };
        let store = PostgresStore {
            pool: pool(MAX_CONNECTIONS)?,
            transactions: pool(TRANSACTION_CONNECTIONS)?,
            leases: pool(LEASE_CONNECTIONS)?,
            location,
            config: Arc::new(config),
            listener: Arc::default(),
        };
        store
            .init_schema()
            .await
            .map_err(store.failed("cannot set up the store"))?;
        store.open_connections().await;
        // Reads every pending call once: an unreadable one is reported now,
        // with its call id, rather than when someone approves it.
        store.list().await?;
        Ok(store)
    }

    /// The database, as errors name it: its URL without the password
    /// (`postgres://user@host:port/dbname`).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), tool_runtime::StoreError> {
    /// let store = tool_runtime::store::PostgresStore::connect("postgres://app:secret@localhost/app").await?;
    /// assert_eq!(store.location(), "postgres://app@localhost:5432/app");
    /// # Ok(())
    /// # }
    /// ```
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Opens every connection of the main pool, then of the leases' pool,
    /// now, at once. Opened on demand, they would open under the first
    /// burst of calls, where each costs the server a backend start beside
    /// the calls' own work: the async workers were then held up to 9 ms
    /// (BENCHMARKS.md, the ticker). A connection that closes later is
    /// replaced when next needed. A server that refuses some (its
    /// `max_connections` or the role's limit reached) is logged, not an
    /// error: the store works with those it has, as it would with a pool
    /// opened on demand (renewals and outcomes on the main pool's when
    /// their own cannot connect, [`lease_client`](Self::lease_client)).
    async fn open_connections(&self) {
        for (pool, wanted) in [
            (&self.pool, MAX_CONNECTIONS),
            (&self.leases, LEASE_CONNECTIONS),
        ] {
            let opening = (0..wanted).map(|_| pool.get());
            // Held together, so that each `get` opens a connection of its own.
            let opened = futures_util::future::join_all(opening).await;
            let refused: Vec<_> = opened.iter().filter_map(|r| r.as_ref().err()).collect();
            if let Some(error) = refused.first() {
                tracing::warn!(
                    database = %self.location,
                    opened = wanted - refused.len(),
                    wanted,
                    %error,
                    "the PostgreSQL store could not open all of its connections; the others open when needed"
                );
            }
        }
    }

    /// A connection to renew a running call's lease or record its outcome
    /// on: one of the leases' own pool, else (the server refuses it more
    /// connections) one of the main pool's.
    async fn lease_client(&self) -> Result<deadpool_postgres::Object, PoolError> {
        match self.leases.get().await {
            Ok(client) => Ok(client),
            Err(_) => self.pool.get().await,
        }
    }

    /// Creates the tables in an empty schema, migrates a schema of version
    /// 1, or checks the version of existing ones, under an advisory lock:
    /// concurrent first connections create (or migrate) them once.
    async fn init_schema(&self) -> Result<(), Failure> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SETUP_LOCK])
            .await?;
        let exists: bool = tx
            .query_one("SELECT to_regclass('tool_runtime_schema') IS NOT NULL", &[])
            .await?
            .try_get(0)?;
        if !exists {
            tx.batch_execute(CREATE_TABLES).await?;
            tx.batch_execute(CREATE_RUNS).await?;
            tx.batch_execute(ADD_FENCING).await?;
            tx.batch_execute(ADD_OUTPUT_KIND).await?;
            tx.batch_execute(ADD_PURGED).await?;
            tx.batch_execute(ADD_AUDIT).await?;
            tx.batch_execute(ADD_ASKED_AT).await?;
            tx.batch_execute(ADD_APPROVALS_TIMEOUT).await?;
            tx.batch_execute(ADD_RULES).await?;
            tx.batch_execute(ADD_WAITING_ORDERS).await?;
            tx.batch_execute(ADD_OUTBOX).await?;
            tx.execute(
                "INSERT INTO tool_runtime_schema (version) VALUES ($1)",
                &[&SCHEMA_VERSION],
            )
            .await?;
            tx.commit().await?;
            tracing::info!(database = %self.location, version = SCHEMA_VERSION, "pending store tables created");
            return Ok(());
        }
        let version: Option<i32> = tx
            .query_one("SELECT max(version) FROM tool_runtime_schema", &[])
            .await?
            .try_get(0)?;
        let refused = |reason: String| {
            Failure::Store(StoreError::Io {
                location: self.location.to_string(),
                reason,
                source: None,
            })
        };
        match version {
            Some(SCHEMA_VERSION) => Ok(()),
            Some(version @ 1..=10) => {
                if version == 1 {
                    // Version 1 had no runs; its calls are as they were.
                    tx.batch_execute(CREATE_RUNS).await?;
                }
                if version <= 2 {
                    // Version 2 had no fencing tokens.
                    tx.batch_execute(ADD_FENCING).await?;
                }
                if version <= 3 {
                    // Version 3 had no calls waiting for their output.
                    tx.batch_execute(ADD_OUTPUT_KIND).await?;
                }
                if version <= 4 {
                    // Version 4 did not remember purged calls.
                    tx.batch_execute(ADD_PURGED).await?;
                }
                if version <= 5 {
                    // Version 5 kept no audit log.
                    tx.batch_execute(ADD_AUDIT).await?;
                }
                if version <= 6 {
                    // Version 6 did not keep when calls were asked for.
                    tx.batch_execute(ADD_ASKED_AT).await?;
                }
                if version <= 7 {
                    // Version 7 kept neither the approvals a call needs nor
                    // its own time limit.
                    tx.batch_execute(ADD_APPROVALS_TIMEOUT).await?;
                }
                if version <= 8 {
                    // Version 8 kept no standing rules.
                    tx.batch_execute(ADD_RULES).await?;
                }
                if version <= 9 {
                    // Version 9 kept no orders by time.
                    tx.batch_execute(ADD_WAITING_ORDERS).await?;
                }
                // Version 10 kept no outbox.
                tx.batch_execute(ADD_OUTBOX).await?;
                tx.execute(
                    "UPDATE tool_runtime_schema SET version = $1",
                    &[&SCHEMA_VERSION],
                )
                .await?;
                tx.commit().await?;
                tracing::info!(database = %self.location, version = SCHEMA_VERSION, "pending store schema migrated from version {version}");
                Ok(())
            }
            Some(version) if version > SCHEMA_VERSION => Err(refused(format!(
                "its tool_runtime_schema is version {version}, newer than this build knows ({SCHEMA_VERSION}): upgrade tool-runtime"
            ))),
            Some(version) => Err(refused(format!(
                "unsupported tool_runtime_schema version {version} (this build reads {SCHEMA_VERSION})"
            ))),
            None => Err(refused(
                "the table tool_runtime_schema holds no version: it is not a tool-runtime schema, or was emptied".to_owned(),
            )),
        }
    }

    /// Maps a failure of `doing` to the store's error, naming the database.
    fn failed(&self, doing: impl fmt::Display) -> impl FnOnce(Failure) -> StoreError {
        let location = self.location.to_string();
        move |failure| match failure {
            Failure::Store(error) => error,
            Failure::Pool(error) => StoreError::Io {
                location,
                reason: format!("{doing}: no connection: {error}"),
                source: Some(Box::new(error)),
            },
            Failure::Db(error) => StoreError::Io {
                location,
                reason: format!("{doing}: {}", db_reason(&error)),
                source: Some(Box::new(error)),
            },
        }
    }

    /// `value` as JSON text, checked to read back ([`storable_json`]).
    fn json_text(
        &self,
        call_id: &str,
        what: &str,
        value: &impl serde::Serialize,
    ) -> Result<String, StoreError> {
        storable_json(call_id, what, value)
    }

    /// A JSON column of call `call_id`; unreadable: an error naming the call.
    fn parse<T: DeserializeOwned>(
        &self,
        call_id: &str,
        what: &str,
        text: &str,
    ) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Io {
            location: self.location.to_string(),
            reason: format!(
                "the {what} of call {:?} is unreadable: {e}; it was left in the store",
                Excerpt::of(call_id)
            ),
            source: Some(Box::new(e)),
        })
    }

    /// The stored call a row of [`COLUMNS`] holds.
    fn stored(&self, row: &Row) -> Result<StoredCall, Failure> {
        let call_id: String = row.try_get("call_id")?;
        let unreadable = |what: &str, reason: String| {
            Failure::Store(StoreError::Io {
                location: self.location.to_string(),
                reason: format!(
                    "the {what} of call {:?} is unreadable: {reason}; it was left in the store",
                    Excerpt::of(&call_id)
                ),
                source: None,
            })
        };
        let kind = match row.try_get::<_, &str>("kind")? {
            "approval" => PendingKind::Approval,
            "suspended" => PendingKind::Suspended,
            "task" => PendingKind::Task,
            "output" => PendingKind::Output,
            other => return Err(unreadable("kind", format!("unknown kind {other:?}"))),
        };
        let state = match row.try_get::<_, &str>("state")? {
            "pending" => CallState::Pending,
            "running" => CallState::Running {
                owner: row
                    .try_get::<_, Option<String>>("owner")?
                    .unwrap_or_default(),
                lease_expires_at: row
                    .try_get::<_, Option<SystemTime>>("lease_expires_at")?
                    .unwrap_or(SystemTime::UNIX_EPOCH),
            },
            "settled" => CallState::Settled {
                outcome: self.parse(
                    &call_id,
                    "outcome",
                    row.try_get::<_, Option<&str>>("outcome")?
                        .unwrap_or_default(),
                )?,
                settled_at: row
                    .try_get::<_, Option<SystemTime>>("settled_at")?
                    .unwrap_or(SystemTime::UNIX_EPOCH),
            },
            other => return Err(unreadable("state", format!("unknown state {other:?}"))),
        };
        let payload = row
            .try_get::<_, Option<&str>>("payload")?
            .map(|text| self.parse::<Value>(&call_id, "payload", text))
            .transpose()?;
        let resume_data = row
            .try_get::<_, Option<&str>>("resume_data")?
            .map(|text| self.parse::<Value>(&call_id, "resume data", text))
            .transpose()?;
        let agent = row
            .try_get::<_, Option<&str>>("agent")?
            .map(|text| self.parse(&call_id, "agent context", text))
            .transpose()?;
        let attempt: i32 = row.try_get("attempt")?;
        let epoch: i64 = row.try_get("epoch")?;
        let head = StoredHead {
            tool_id: row.try_get("tool_id")?,
            request_context: self.parse(
                &call_id,
                "request context",
                row.try_get("request_context")?,
            )?,
            messages: self.parse(&call_id, "messages", row.try_get("messages")?)?,
            agent,
            requester: row.try_get("requester")?,
            timeout_ms: row
                .try_get::<_, Option<i64>>("timeout_ms")?
                .and_then(|ms| u64::try_from(ms).ok()),
            call_id: call_id.clone(),
        };
        let call = PendingCall {
            head,
            kind,
            input: self.parse(&call_id, "arguments", row.try_get("input")?)?,
            payload,
            expires_at_ms: row
                .try_get::<_, Option<i64>>("expires_at_ms")?
                .and_then(|at| u64::try_from(at).ok()),
            asked_at_ms: row
                .try_get::<_, Option<i64>>("asked_at_ms")?
                .and_then(|at| u64::try_from(at).ok()),
            approvals: row
                .try_get::<_, Option<&str>>("approvals")?
                .map(|text| self.parse(&call_id, "required approvals", text))
                .transpose()?,
        };
        Ok(StoredCall {
            call,
            state,
            attempt: u32::try_from(attempt).unwrap_or(0),
            epoch: u64::try_from(epoch).unwrap_or(0),
            resume_data,
        })
    }

    async fn try_insert(&self, call: &PendingCall, noted: &Noted) -> Result<(), Failure> {
        let texts = storable_call(call)?;
        let id = &call.head.call_id;
        let columns = NotedColumns::of(noted);
        // With notifications, the same statement writes them.
        let noted_cte = columns
            .as_ref()
            .map(|columns| format!(", {}", columns.cte(15, "inserted")))
            .unwrap_or_default();
        let sql = format!(
            // A task notifies listening workers, when (and if) the insert commits.
            "WITH inserted AS (
                 INSERT INTO tool_runtime_calls
                     (call_id, kind, tool_id, state, attempt, input, request_context, messages, payload, agent, requester, expires_at_ms, asked_at_ms, approvals, timeout_ms)
                 VALUES ($1, $2, $3, 'pending', 0, $4, $5, $6, $7, $9, $10, $11, $12, $13, $14)
                 RETURNING kind){noted_cte}
             SELECT pg_notify($8, '') FROM inserted WHERE kind = 'task'"
        );
        let client = self.pool.get().await?;
        let statement = client.prepare_cached(&sql).await?;
        let kind = call.kind.as_str();
        let (expires, asked, timeout) = (
            call.expires_at_ms.and_then(|at| i64::try_from(at).ok()),
            call.asked_at_ms.and_then(|at| i64::try_from(at).ok()),
            call.head.timeout_ms.and_then(|ms| i64::try_from(ms).ok()),
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            id,
            &kind,
            &call.head.tool_id,
            &texts.input,
            &texts.request_context,
            &texts.messages,
            &texts.payload,
            &TASK_CHANNEL,
            &texts.agent,
            &call.head.requester,
            &expires,
            &asked,
            &texts.approvals,
            &timeout,
        ];
        if let Some(columns) = &columns {
            params.extend(columns.params());
        }
        let inserted = client.query(&statement, &params).await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                Err(Failure::Store(StoreError::Duplicate {
                    call_id: id.clone(),
                }))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn try_decide(
        &self,
        call_id: &str,
        expected: Expected,
        transition: Transition,
        noted: &Noted,
    ) -> Result<Decided, Failure> {
        let kind = expected.kind.as_str();
        let epoch = expected.epoch.map(epoch_value);
        // The values of each transition as text, first: the statement's
        // parameters borrow them.
        let (owner, lease, text, approvals) = match &transition {
            Transition::Run {
                owner,
                lease,
                resume_data,
            } => (
                Some(owner.as_str()),
                Some(millis(*lease)),
                resume_data
                    .as_ref()
                    .map(|data| self.json_text(call_id, "resume data", data))
                    .transpose()?,
                None,
            ),
            Transition::RunEdited {
                owner,
                lease,
                input,
            } => (
                Some(owner.as_str()),
                Some(millis(*lease)),
                Some(self.json_text(call_id, "input", input)?),
                None,
            ),
            Transition::Revise { input, approvals } => (
                None,
                None,
                Some(self.json_text(call_id, "input", input)?),
                approvals
                    .as_ref()
                    .map(|approvals| self.json_text(call_id, "required approvals", approvals))
                    .transpose()?,
            ),
            Transition::Settle(outcome) => (
                None,
                None,
                Some(self.json_text(call_id, "outcome", outcome)?),
                None,
            ),
        };
        let (change, mut params): (&str, Vec<&(dyn ToSql + Sync)>) = match &transition {
            Transition::Run { .. } => (
                "UPDATE tool_runtime_calls SET state = 'running', owner = $4,
                     lease_expires_at = now() + $5::bigint * interval '1 millisecond',
                     attempt = attempt + 1, resume_data = $6,
                     epoch = nextval('tool_runtime_epochs')",
                vec![&owner, &lease, &text],
            ),
            Transition::RunEdited { .. } => (
                "UPDATE tool_runtime_calls SET state = 'running', owner = $4,
                     lease_expires_at = now() + $5::bigint * interval '1 millisecond',
                     attempt = attempt + 1, resume_data = NULL, input = $6,
                     epoch = nextval('tool_runtime_epochs')",
                vec![&owner, &lease, &text],
            ),
            Transition::Revise { .. } => (
                "UPDATE tool_runtime_calls SET input = $4, approvals = $5,
                     epoch = nextval('tool_runtime_epochs')",
                vec![&text, &approvals],
            ),
            Transition::Settle(_) => (
                "UPDATE tool_runtime_calls SET state = 'settled', owner = NULL,
                     lease_expires_at = NULL, outcome = $4, settled_at = now()",
                vec![&text],
            ),
        };
        params.splice(0..0, [&call_id as &(dyn ToSql + Sync), &kind, &epoch]);
        let changed = format!(
            "{change}
             WHERE call_id = $1 AND state = 'pending' AND kind = $2
                 AND ($3::bigint IS NULL OR epoch = $3)
             RETURNING {COLUMNS}"
        );
        // The notifications in the same statement, written if it changed
        // the call.
        let columns = NotedColumns::of(noted);
        let sql = match &columns {
            Some(columns) => {
                let noted = columns.cte(params.len() + 1, "changed");
                params.extend(columns.params());
                format!("WITH changed AS ({changed}), {noted} SELECT * FROM changed")
            }
            None => changed,
        };
        let mut client = self.pool.get().await?;
        // One transaction, so that a call whose row does not read back is
        // left as it was (rolled back) rather than claimed and unusable.
        let tx = client.transaction().await?;
        let statement = tx.prepare_cached(&sql).await?;
        if let Some(row) = tx.query_opt(&statement, &params).await? {
            let stored = self.stored(&row)?;
            tx.commit().await?;
            return Ok(Decided::Won(stored));
        }
        // Not as expected (or no such call): nothing changed.
        let found = self.read(&tx, call_id).await?;
        tx.rollback().await?;
        Ok(Decided::Lost(found))
    }

    /// The call `call_id` as `client` sees it.
    async fn read(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        call_id: &str,
    ) -> Result<Option<StoredCall>, Failure> {
        let statement = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tool_runtime_calls WHERE call_id = $1"
            ))
            .await?;
        client
            .query_opt(&statement, &[&call_id])
            .await?
            .map(|row| self.stored(&row))
            .transpose()
    }

    async fn try_renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, Failure> {
        let client = self.lease_client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE tool_runtime_calls
                 SET lease_expires_at = now() + $3::bigint * interval '1 millisecond'
                 WHERE call_id = $1 AND state = 'running' AND epoch = $2",
            )
            .await?;
        let changed = client
            .execute(&statement, &[&call_id, &epoch_value(epoch), &millis(lease)])
            .await?;
        Ok(changed == 1)
    }

    async fn try_finish(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        noted: &Noted,
    ) -> Result<bool, Failure> {
        let mut client = self.lease_client().await?;
        if noted.0.is_empty() {
            return self.finish_on(&client, call_id, epoch, settlement).await;
        }
        let tx = client.transaction().await?;
        let finished = self
            .finish_on_noting(&tx, call_id, epoch, settlement, noted)
            .await?;
        tx.commit().await?;
        Ok(finished)
    }

    /// [`finish_on`](Self::finish_on), and `noted` if the call ends, on
    /// `client` inside a transaction.
    async fn finish_on_noting(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        noted: &Noted,
    ) -> Result<bool, Failure> {
        let finished = self.finish_on(client, call_id, epoch, settlement).await?;
        if finished {
            self.note(client, noted).await?;
        }
        Ok(finished)
    }

    /// Ends the running call `call_id` on `client` (a pooled connection, or
    /// a transactional call's own, inside its transaction) if its claim
    /// has token `epoch`: the fencing check is in the write itself.
    async fn finish_on(
        &self,
        client: &impl deadpool_postgres::GenericClient,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
    ) -> Result<bool, Failure> {
        let epoch = epoch_value(epoch);
        let changed = match settlement {
            Settlement::Settled(outcome) => {
                let outcome = self.json_text(call_id, "outcome", &outcome)?;
                let statement = client
                    .prepare_cached(
                        // clock_timestamp(), not now(): inside a transactional
                        // call's transaction, now() is when its tool began.
                        "UPDATE tool_runtime_calls SET state = 'settled', owner = NULL,
                             lease_expires_at = NULL, outcome = $3, settled_at = clock_timestamp()
                         WHERE call_id = $1 AND state = 'running' AND epoch = $2",
                    )
                    .await?;
                client
                    .execute(&statement, &[&call_id, &epoch, &outcome])
                    .await?
            }
            Settlement::Suspended { payload } => {
                let payload = self.json_text(call_id, "payload", &payload)?;
                let statement = client
                    .prepare_cached(
                        "UPDATE tool_runtime_calls SET state = 'pending', kind = 'suspended',
                             owner = NULL, lease_expires_at = NULL, attempt = 0,
                             resume_data = NULL, payload = $3
                         WHERE call_id = $1 AND state = 'running' AND epoch = $2",
                    )
                    .await?;
                client
                    .execute(&statement, &[&call_id, &epoch, &payload])
                    .await?
            }
        };
        Ok(changed == 1)
    }

    async fn try_claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, Failure> {
        let client = self.pool.get().await?;
        // SKIP LOCKED: a row another claimer holds is skipped, so concurrent
        // claimers take different calls without waiting on each other.
        let claim = client
            .prepare_cached(&format!(
                "UPDATE tool_runtime_calls SET state = 'running', owner = $3,
                     lease_expires_at = now() + $4::bigint * interval '1 millisecond',
                     attempt = attempt + 1, epoch = nextval('tool_runtime_epochs')
                 WHERE call_id = (
                     SELECT call_id FROM tool_runtime_calls
                     WHERE state = 'pending' AND kind = $1 AND tool_id = ANY($2)
                     ORDER BY call_id LIMIT 1
                     FOR UPDATE SKIP LOCKED)
                 RETURNING {COLUMNS}"
            ))
            .await?;
        let row = client
            .query_opt(&claim, &[&kind.as_str(), &tool_ids, &owner, &millis(lease)])
            .await?;
        row.map(|row| self.stored(&row)).transpose()
    }

    async fn try_recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, Failure> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // SKIP LOCKED: rows another instance is recovering right now are
        // its to take; this one takes the rest, so each is recovered once.
        let expired = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tool_runtime_calls
                 WHERE state = 'running' AND lease_expires_at <= now() AND tool_id = ANY($1)
                 FOR UPDATE SKIP LOCKED"
            ))
            .await?;
        let mut ids = Vec::new();
        for row in tx.query(&expired, &[&tool_ids]).await? {
            match self.stored(&row) {
                Ok(stored) => ids.push(stored.call.head.call_id),
                // Left as it is: claiming a call nobody can read would only
                // count its attempts up, once per recovery.
                Err(error) => {
                    let call_id: Option<String> = row.try_get("call_id").ok();
                    let error = self.failed("recovering")(error);
                    tracing::error!(call_id, %error, "unreadable running call left in the store");
                }
            }
        }
        if ids.is_empty() {
            tx.rollback().await?;
            return Ok(Vec::new());
        }
        let claim = tx
            .prepare_cached(&format!(
                "UPDATE tool_runtime_calls SET owner = $2,
                     lease_expires_at = now() + $3::bigint * interval '1 millisecond',
                     attempt = attempt + 1, epoch = nextval('tool_runtime_epochs')
                 WHERE call_id = ANY($1)
                 RETURNING {COLUMNS}"
            ))
            .await?;
        let rows = tx.query(&claim, &[&ids, &owner, &millis(lease)]).await?;
        let mut recovered = rows
            .iter()
            .map(|row| self.stored(row))
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit().await?;
        recovered.sort_by(|a, b| a.call.head.call_id.cmp(&b.call.head.call_id));
        Ok(recovered)
    }

    async fn try_purge_settled(&self, retention: Retention) -> Result<usize, Failure> {
        let client = self.pool.get().await?;
        // Past i64 keeps every one: no table holds that many rows.
        let kept = i64::try_from(retention.max_settled).unwrap_or(i64::MAX);
        // One statement, by one clock reading and one snapshot: settled calls
        // past the age; of the younger ones, all but the newest `kept`
        // (oldest settled first), their ids remembered as purged; purged ids
        // and finished runs past the age. (The statement's parts see the
        // same snapshot, so the two deletions of calls are kept disjoint.)
        let statement = client
            .prepare_cached(
                "WITH aged AS (
                     DELETE FROM tool_runtime_calls
                     WHERE state = 'settled'
                         AND settled_at < now() - $1::bigint * interval '1 millisecond'
                     RETURNING 1),
                 excess AS (
                     DELETE FROM tool_runtime_calls
                     WHERE call_id IN (
                         SELECT call_id FROM tool_runtime_calls
                         WHERE state = 'settled'
                             AND settled_at >= now() - $1::bigint * interval '1 millisecond'
                         ORDER BY settled_at DESC, call_id COLLATE \"C\" DESC OFFSET $2)
                     RETURNING call_id),
                 remembered AS (
                     INSERT INTO tool_runtime_purged (call_id, purged_at)
                     SELECT call_id, now() FROM excess
                     ON CONFLICT (call_id) DO UPDATE SET purged_at = excluded.purged_at
                     RETURNING 1),
                 forgotten AS (
                     DELETE FROM tool_runtime_purged
                     WHERE purged_at < now() - $1::bigint * interval '1 millisecond'
                     RETURNING 1),
                 runs AS (
                     DELETE FROM tool_runtime_runs
                     WHERE finished AND saved_at < now() - $1::bigint * interval '1 millisecond'
                     RETURNING 1)
                 SELECT (SELECT count(*) FROM aged) + (SELECT count(*) FROM remembered)
                     + (SELECT count(*) FROM runs)",
            )
            .await?;
        let purged: i64 = client
            .query_one(&statement, &[&millis(retention.age), &kept])
            .await?
            .try_get(0)?;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }

    async fn try_purged(&self, call_id: &str) -> Result<Option<SystemTime>, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached("SELECT purged_at FROM tool_runtime_purged WHERE call_id = $1")
            .await?;
        let row = client.query_opt(&statement, &[&call_id]).await?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    async fn try_add_rule(&self, rule: &StandingRule, text: &str) -> Result<bool, Failure> {
        let until = i64::try_from(rule.until_ms).unwrap_or(i64::MAX);
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO tool_runtime_rules (rule_id, tool_id, until_ms, revoked, rule)
                 VALUES ($1, $2, $3, false, $4) ON CONFLICT (rule_id) DO NOTHING",
            )
            .await?;
        let added = client
            .execute(&statement, &[&rule.rule_id, &rule.tool_id, &until, &text])
            .await?;
        Ok(added == 1)
    }

    async fn try_revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, Failure> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // Locked: a concurrent revocation waits, then finds it revoked.
        let Some(row) = tx
            .query_opt(
                "SELECT rule FROM tool_runtime_rules WHERE rule_id = $1 AND NOT revoked FOR UPDATE",
                &[&rule_id],
            )
            .await?
        else {
            return Ok(None);
        };
        let mut rule = self.decode_rule(rule_id, row.try_get("rule")?)?;
        rule.revoked = Some(revocation);
        let text = storable_rule(&rule)?;
        tx.execute(
            "UPDATE tool_runtime_rules SET revoked = true, rule = $2 WHERE rule_id = $1",
            &[&rule_id, &text],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(rule))
    }

    /// The rules `filter` (an SQL condition on the rules table, with
    /// `params`) selects, in the order they were added.
    async fn try_rules(
        &self,
        filter: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<StandingRule>, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT rule_id, rule FROM tool_runtime_rules WHERE {filter} ORDER BY seq"
            ))
            .await?;
        let mut rules = Vec::new();
        for row in client.query(&statement, params).await? {
            rules.push(self.decode_rule(row.try_get("rule_id")?, row.try_get("rule")?)?);
        }
        Ok(rules)
    }

    fn decode_rule(&self, rule_id: &str, text: &str) -> Result<StandingRule, Failure> {
        serde_json::from_str(text).map_err(|e| {
            Failure::Store(StoreError::Io {
                location: self.location.to_string(),
                reason: format!(
                    "standing rule {:?} is unreadable: {e}; it was left in the store",
                    Excerpt::of(rule_id)
                ),
                source: None,
            })
        })
    }

    async fn try_load_run(&self, run_id: &str) -> Result<Option<StoredRun>, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(
                "SELECT revision, finished, record FROM tool_runtime_runs WHERE run_id = $1",
            )
            .await?;
        let Some(row) = client.query_opt(&statement, &[&run_id]).await? else {
            return Ok(None);
        };
        let unreadable = |reason: String| {
            Failure::Store(StoreError::Io {
                location: self.location.to_string(),
                reason: format!(
                    "the record of run {:?} is unreadable: {reason}; it was left in the store",
                    Excerpt::of(run_id)
                ),
                source: None,
            })
        };
        let revision: i64 = row.try_get("revision")?;
        let revision =
            u64::try_from(revision).map_err(|_| unreadable(format!("revision {revision}")))?;
        let record =
            serde_json::from_str(row.try_get("record")?).map_err(|e| unreadable(e.to_string()))?;
        Ok(Some(StoredRun::new(
            run_id,
            revision,
            row.try_get("finished")?,
            record,
        )))
    }

    async fn try_save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: &Value,
    ) -> Result<Option<u64>, Failure> {
        let record = storable_run_record(run_id, record)?;
        let client = self.pool.get().await?;
        // One guarded statement each: a concurrent save of the same revision
        // waits for the row (or the key) and then finds it changed.
        let saved = match expected_revision {
            None => {
                let statement = client
                    .prepare_cached(
                        "INSERT INTO tool_runtime_runs (run_id, revision, finished, record, saved_at)
                         VALUES ($1, 1, $2, $3, now())
                         ON CONFLICT (run_id) DO NOTHING",
                    )
                    .await?;
                client
                    .execute(&statement, &[&run_id, &finished, &record])
                    .await?
            }
            Some(expected) => {
                // A revision past i64 was never stored: nothing to replace.
                let Ok(expected) = i64::try_from(expected) else {
                    return Ok(None);
                };
                let statement = client
                    .prepare_cached(
                        "UPDATE tool_runtime_runs
                         SET revision = revision + 1, finished = $3, record = $4, saved_at = now()
                         WHERE run_id = $1 AND revision = $2",
                    )
                    .await?;
                client
                    .execute(&statement, &[&run_id, &expected, &finished, &record])
                    .await?
            }
        };
        Ok((saved == 1).then(|| expected_revision.map_or(1, |r| r + 1)))
    }

    async fn try_list(&self) -> Result<Vec<StoredCall>, Failure> {
        let client = self.pool.get().await?;
        // COLLATE "C": ordered by the ids' bytes, as the other stores order
        // them, whatever the database's collation.
        let statement = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tool_runtime_calls
                 WHERE state = 'pending' ORDER BY call_id COLLATE \"C\""
            ))
            .await?;
        let rows = client.query(&statement, &[]).await?;
        Ok(self.readable(rows))
    }

    /// The calls of listed `rows`. One bad row must not hide every other
    /// call: it is reported, left for the operator, and named by get and
    /// decide.
    fn readable(&self, rows: Vec<Row>) -> Vec<StoredCall> {
        let mut calls = Vec::with_capacity(rows.len());
        for row in rows {
            match self.stored(&row) {
                Ok(stored) => calls.push(stored),
                Err(error) => {
                    let call_id: Option<String> = row.try_get("call_id").ok();
                    let error = self.failed("listing")(error);
                    tracing::error!(call_id, %error, "unreadable pending call left in the store");
                }
            }
        }
        calls
    }

    /// A page from the index of pending calls by id (bytes order), the
    /// kinds and tool filtered on the way.
    async fn try_list_page(&self, query: &PendingQuery) -> Result<Vec<StoredCall>, Failure> {
        let client = self.pool.get().await?;
        // The page's start as a range of the order's index (a condition
        // `$3 IS NULL OR ...` would make a generic plan scan the index from
        // its first entry): one statement each.
        let key = match query.order {
            PendingOrder::Asked => "COALESCE(asked_at_ms, 9223372036854775807)",
            PendingOrder::Expires => "COALESCE(expires_at_ms, 9223372036854775807)",
            _ => "0",
        };
        let (from, order_by) = match (query.order, query.after.is_some()) {
            (PendingOrder::CallId, true) => (
                "call_id COLLATE \"C\" > $3 AND $12::bigint IS NULL".to_owned(),
                "call_id COLLATE \"C\"".to_owned(),
            ),
            (PendingOrder::CallId, false) => (
                "$3::text IS NULL AND $12::bigint IS NULL".to_owned(),
                "call_id COLLATE \"C\"".to_owned(),
            ),
            (_, true) => (
                format!("({key}, call_id COLLATE \"C\") > ($12, $3)"),
                format!("{key}, call_id COLLATE \"C\""),
            ),
            (_, false) => (
                "$3::text IS NULL AND $12::bigint IS NULL".to_owned(),
                format!("{key}, call_id COLLATE \"C\""),
            ),
        };
        let statement = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM tool_runtime_calls
                 WHERE state = 'pending' AND kind = ANY($1)
                   AND ($2::text IS NULL OR tool_id = $2)
                   AND {from}
                   AND ($5::text IS NULL OR agent::jsonb ->> 'runId' = $5)
                   AND ($6::text IS NULL OR agent::jsonb ->> 'threadId' = $6)
                   AND ($7::text IS NULL OR agent::jsonb ->> 'resourceId' = $7)
                   AND ($8::text IS NULL OR requester = $8)
                   AND ($9::bigint IS NULL OR asked_at_ms < $9)
                   AND ($10::bigint IS NULL OR asked_at_ms > $10)
                   AND ($11::text IS NULL OR strpos(lower(tool_id), lower($11)) > 0
                        OR strpos(lower(requester), lower($11)) > 0
                        OR strpos(lower(call_id), lower($11)) > 0)
                 ORDER BY {order_by} LIMIT $4"
            ))
            .await?;
        // The start's key, in an order by time from a start.
        let after_key = (query.order != PendingOrder::CallId && query.after.is_some())
            .then(|| i64::try_from(query.after_key.unwrap_or(0)).unwrap_or(i64::MAX));
        let kinds: Vec<&str> = query.kinds.iter().map(|kind| kind.as_str()).collect();
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let time = |ms: Option<u64>| ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        let rows = client
            .query(
                &statement,
                &[
                    &kinds,
                    &query.tool_id,
                    &query.after,
                    &limit,
                    &query.run_id,
                    &query.thread_id,
                    &query.resource_id,
                    &query.requester,
                    &time(query.asked_before_ms),
                    &time(query.asked_after_ms),
                    &query.text,
                    &after_key,
                ],
            )
            .await?;
        Ok(self.readable(rows))
    }

    async fn try_append_audit(
        &self,
        call_id: &str,
        text: &str,
        noted: &Noted,
    ) -> Result<u64, Failure> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let statement = tx
            .prepare_cached(
                "INSERT INTO tool_runtime_audit (call_id, entry) VALUES ($1, $2) RETURNING seq",
            )
            .await?;
        let seq: i64 = tx
            .query_one(&statement, &[&call_id, &text])
            .await?
            .try_get(0)?;
        self.note(&tx, noted).await?;
        tx.commit().await?;
        Ok(u64::try_from(seq).unwrap_or_default())
    }

    async fn try_purge_audit(&self, retention: AuditRetention) -> Result<usize, Failure> {
        let client = self.pool.get().await?;
        let cutoff = i64::try_from(retention.cutoff_ms()).unwrap_or(i64::MAX);
        // Past i64 keeps every one: no table holds that many rows.
        let kept = i64::try_from(retention.max_entries).unwrap_or(i64::MAX);
        // One statement, one snapshot: the entries past the age, then of the
        // others all but the newest `kept` (oldest first); never those of a
        // call still pending, whose grants count.
        let statement = client
            .prepare_cached(
                "WITH purgeable AS (
                     SELECT a.seq, (a.entry::jsonb ->> 'atMs')::bigint < $1 AS aged
                     FROM tool_runtime_audit a
                     WHERE NOT EXISTS (SELECT 1 FROM tool_runtime_calls c
                                       WHERE c.call_id = a.call_id AND c.state = 'pending')
                 ), total AS (SELECT count(*) AS n FROM tool_runtime_audit),
                 doomed AS (
                     SELECT seq FROM purgeable WHERE aged
                     UNION
                     (SELECT seq FROM purgeable WHERE NOT aged ORDER BY seq
                      LIMIT GREATEST(0, (SELECT n FROM total)
                                        - (SELECT count(*) FROM purgeable WHERE aged) - $2))
                 )
                 DELETE FROM tool_runtime_audit WHERE seq IN (SELECT seq FROM doomed)",
            )
            .await?;
        let purged = client.execute(&statement, &[&cutoff, &kept]).await?;
        Ok(usize::try_from(purged).unwrap_or(usize::MAX))
    }

    async fn try_audit_end(&self) -> Result<u64, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached("SELECT COALESCE(MAX(seq), 0)::bigint FROM tool_runtime_audit")
            .await?;
        let seq: i64 = client.query_one(&statement, &[]).await?.try_get(0)?;
        Ok(u64::try_from(seq).unwrap_or_default())
    }

    async fn try_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, Failure> {
        let client = self.pool.get().await?;
        let statement = client
            .prepare_cached(
                "SELECT seq, entry, call_id FROM tool_runtime_audit
                 WHERE seq > $1 AND ($2::text IS NULL OR call_id = $2)
                 ORDER BY seq LIMIT $3",
            )
            .await?;
        let after = i64::try_from(query.after).unwrap_or(i64::MAX);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let mut entries = Vec::new();
        for row in client
            .query(&statement, &[&after, &query.call_id, &limit])
            .await?
        {
            let seq: i64 = row.try_get(0)?;
            let text: String = row.try_get(1)?;
            let call_id: String = row.try_get(2)?;
            let mut entry: AuditEntry =
                self.parse(&call_id, &format!("audit entry {seq}"), &text)?;
            entry.seq = u64::try_from(seq).unwrap_or_default();
            entries.push(entry);
        }
        Ok(entries)
    }
}

impl CallStore for PostgresStore {
    async fn insert_notifying(
        &self,
        call: PendingCall,
        notifications: Vec<Notification>,
    ) -> Result<(), StoreError> {
        let texts = storable_notifications(&notifications)?;
        self.try_insert(&call, &(notifications, texts))
            .await
            .map_err(self.failed(format_args!(
                "inserting call {:?}",
                Excerpt::of(&call.head.call_id)
            )))
    }

    async fn decide_notifying(
        &self,
        call_id: &str,
        expected: impl Into<Expected> + Send,
        transition: Transition,
        notifications: Vec<Notification>,
    ) -> Result<Decided, StoreError> {
        // An id no store keeps is not stored (asking would fail on a NUL).
        if !storable_id(call_id) {
            return Ok(Decided::Lost(None));
        }
        let texts = storable_notifications(&notifications)?;
        self.try_decide(
            call_id,
            expected.into(),
            transition,
            &(notifications, texts),
        )
        .await
        .map_err(self.failed(format_args!("deciding call {:?}", Excerpt::of(call_id))))
    }

    async fn renew(&self, call_id: &str, epoch: u64, lease: Duration) -> Result<bool, StoreError> {
        if !storable_id(call_id) {
            return Ok(false);
        }
        self.try_renew(call_id, epoch, lease)
            .await
            .map_err(self.failed(format_args!(
                "renewing the lease of call {:?}",
                Excerpt::of(call_id)
            )))
    }

    async fn finish_notifying(
        &self,
        call_id: &str,
        epoch: u64,
        settlement: Settlement,
        notifications: Vec<Notification>,
    ) -> Result<bool, StoreError> {
        if !storable_id(call_id) {
            return Ok(false);
        }
        let texts = storable_notifications(&notifications)?;
        self.try_finish(call_id, epoch, settlement, &(notifications, texts))
            .await
            .map_err(self.failed(format_args!("finishing call {:?}", Excerpt::of(call_id))))
    }

    async fn recover_expired(
        &self,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Vec<StoredCall>, StoreError> {
        self.try_recover_expired(owner, lease, tool_ids)
            .await
            .map_err(self.failed("recovering expired calls"))
    }

    async fn claim_next(
        &self,
        kind: PendingKind,
        owner: &str,
        lease: Duration,
        tool_ids: &[String],
    ) -> Result<Option<StoredCall>, StoreError> {
        self.try_claim_next(kind, owner, lease, tool_ids)
            .await
            .map_err(self.failed("claiming a pending call"))
    }

    async fn purge_settled(&self, retention: Retention) -> Result<usize, StoreError> {
        self.try_purge_settled(retention)
            .await
            .map_err(self.failed("purging settled calls"))
    }

    async fn purged(&self, call_id: &str) -> Result<Option<SystemTime>, StoreError> {
        if !storable_id(call_id) {
            return Ok(None);
        }
        self.try_purged(call_id)
            .await
            .map_err(self.failed(format_args!(
                "reading whether call {:?} was purged",
                Excerpt::of(call_id)
            )))
    }

    async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, StoreError> {
        if !storable_id(call_id) {
            return Ok(None);
        }
        async {
            let client = self.pool.get().await?;
            self.read(&client, call_id).await
        }
        .await
        .map_err(self.failed(format_args!("reading call {:?}", Excerpt::of(call_id))))
    }

    async fn list(&self) -> Result<Vec<StoredCall>, StoreError> {
        self.try_list()
            .await
            .map_err(self.failed("listing pending calls"))
    }

    async fn list_page(&self, query: PendingQuery) -> Result<Vec<StoredCall>, StoreError> {
        self.try_list_page(&query)
            .await
            .map_err(self.failed("listing a page of pending calls"))
    }

    fn transaction(&self) -> Option<Box<dyn StoreTransaction>> {
        Some(self.call_transaction())
    }

    /// Notifications from a connection of its own that `LISTEN`s while
    /// anyone subscribes (reconnecting when it is lost): a task inserted by
    /// any instance on the database wakes every worker. `None` outside a
    /// tokio runtime, where no listener can run.
    fn task_signal(&self) -> Option<TaskSignal> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let mut listener = self.listener.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(signaller) = listener.as_ref() {
            return Some(signaller.subscribe());
        }
        let signaller = TaskSignaller::new();
        let signal = signaller.subscribe();
        *listener = Some(signaller.clone());
        handle.spawn(listen(
            Arc::clone(&self.config),
            Arc::clone(&self.location),
            Arc::clone(&self.listener),
            signaller,
        ));
        Some(signal)
    }
}

impl AuditLog for PostgresStore {
    async fn append_audit_notifying(
        &self,
        entry: AuditEntry,
        notifications: Vec<Notification>,
    ) -> Result<u64, StoreError> {
        let text = storable_audit(&entry)?;
        let texts = storable_notifications(&notifications)?;
        self.try_append_audit(&entry.call_id, &text, &(notifications, texts))
            .await
            .map_err(self.failed("appending to the audit log"))
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.try_audit(&query)
            .await
            .map_err(self.failed("reading the audit log"))
    }

    async fn audit_end(&self) -> Result<u64, StoreError> {
        self.try_audit_end()
            .await
            .map_err(self.failed("reading the audit log's end"))
    }

    async fn purge_audit(&self, retention: AuditRetention) -> Result<usize, StoreError> {
        self.try_purge_audit(retention)
            .await
            .map_err(self.failed("purging the audit log"))
    }
}

impl RuleStore for PostgresStore {
    async fn add_rule(&self, rule: StandingRule) -> Result<bool, StoreError> {
        let text = storable_rule(&rule)?;
        self.try_add_rule(&rule, &text)
            .await
            .map_err(self.failed(format_args!(
                "adding standing rule {:?}",
                Excerpt::of(&rule.rule_id)
            )))
    }

    async fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        if !storable_id(rule_id) {
            return Ok(None);
        }
        self.try_revoke_rule(rule_id, revocation)
            .await
            .map_err(self.failed(format_args!(
                "revoking standing rule {:?}",
                Excerpt::of(rule_id)
            )))
    }

    async fn rule(&self, rule_id: &str) -> Result<Option<StandingRule>, StoreError> {
        if !storable_id(rule_id) {
            return Ok(None);
        }
        let rules = self
            .try_rules("rule_id = $1", &[&rule_id])
            .await
            .map_err(self.failed(format_args!(
                "reading standing rule {:?}",
                Excerpt::of(rule_id)
            )))?;
        Ok(rules.into_iter().next())
    }

    async fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<StandingRule>, StoreError> {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.try_rules(
            "($1::text IS NULL OR tool_id = $1) AND NOT revoked AND until_ms > $2",
            &[&tool_id, &now],
        )
        .await
        .map_err(self.failed("reading the standing rules in force"))
    }
}

impl RunStore for PostgresStore {
    async fn load_run(&self, run_id: &str) -> Result<Option<StoredRun>, StoreError> {
        if !storable_id(run_id) {
            return Ok(None);
        }
        self.try_load_run(run_id)
            .await
            .map_err(self.failed(format_args!("loading run {:?}", Excerpt::of(run_id))))
    }

    async fn save_run(
        &self,
        run_id: &str,
        expected_revision: Option<u64>,
        finished: bool,
        record: Value,
    ) -> Result<Option<u64>, StoreError> {
        self.try_save_run(run_id, expected_revision, finished, &record)
            .await
            .map_err(self.failed(format_args!("saving run {:?}", Excerpt::of(run_id))))
    }
}

/// Forwards task notifications to `signaller` until it has no subscriber,
/// over a connection that is remade when it is lost (and then signals once:
/// a task may have been stored while nobody listened).
async fn listen(
    config: Arc<Config>,
    location: Arc<str>,
    slot: Arc<Mutex<Option<TaskSignaller>>>,
    signaller: TaskSignaller,
) {
    loop {
        tokio::select! {
            lost = listen_once(&config, &signaller) => {
                tracing::warn!(database = %location, reason = %lost, "the listener of task notifications lost its connection; reconnecting");
            }
            () = signaller.unsubscribed() => {
                // Checked again under the lock that subscribing takes: a
                // subscriber that came meanwhile keeps this listener.
                let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
                if signaller.subscribers() == 0 {
                    *slot = None;
                    return;
                }
                continue;
            }
        }
        signaller.notify();
        tokio::time::sleep(RELISTEN_AFTER).await;
    }
}

/// One listener connection, until it ends: returns why it did.
async fn listen_once(config: &Config, signaller: &TaskSignaller) -> String {
    let mut config = config.clone();
    config
        .connect_timeout(POOL_TIMEOUT)
        .application_name(LISTENER_NAME);
    let (client, mut connection) = match config.connect(NoTls).await {
        Ok(connected) => connected,
        Err(error) => return db_reason(&error),
    };
    let forwarding = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => signaller.notify(),
                Some(Ok(_)) => {}
                Some(Err(error)) => return db_reason(&error),
                None => return "the server closed the connection".to_owned(),
            }
        }
    };
    let listening = async {
        match client
            .batch_execute(&format!("LISTEN {TASK_CHANNEL}"))
            .await
        {
            Err(error) => db_reason(&error),
            Ok(()) => {
                signaller.notify();
                std::future::pending().await
            }
        }
    };
    tokio::select! {
        ended = forwarding => ended,
        ended = listening => ended,
    }
}

/// What failed below the store: the pool, the server, or the store's own
/// check (an error already naming the call).
enum Failure {
    Pool(PoolError),
    Db(tokio_postgres::Error),
    Store(StoreError),
}

impl From<PoolError> for Failure {
    fn from(error: PoolError) -> Self {
        Failure::Pool(error)
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        Failure::Db(error)
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error)
    }
}

/// The server's message for an error it reported (tokio-postgres's own
/// message is only "db error"), else the client's.
fn db_reason(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// A fencing token as PostgreSQL keeps it (`bigint`); a token beyond its
/// range matches no row.
fn epoch_value(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(-1)
}

/// A lease or an age in whole milliseconds, as the queries take it.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The database `config` names, as a URL without the password:
/// `postgres://user@host:port/dbname`.
fn describe(config: &Config) -> String {
    let user = config
        .get_user()
        .map(|user| format!("{user}@"))
        .unwrap_or_default();
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let host = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => dir.display().to_string(),
            };
            // One port applies to every host; otherwise they pair up.
            match ports.get(i).or(if ports.len() == 1 {
                ports.first()
            } else {
                None
            }) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    let dbname = config
        .get_dbname()
        .map(|name| format!("/{name}"))
        .unwrap_or_default();
    format!("postgres://{user}{}{dbname}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(url: &str) -> String {
        describe(&url.parse().unwrap())
    }

    #[test]
    fn the_database_is_named_without_its_password() {
        assert_eq!(
            described("postgres://app:secret@db.internal:5433/calls?sslmode=disable"),
            "postgres://app@db.internal:5433/calls"
        );
        // The port given, or PostgreSQL's default.
        assert_eq!(
            described("postgres://app@localhost/app"),
            "postgres://app@localhost:5432/app"
        );
        assert_eq!(
            described("host=a,b port=1,2 user=u password=secret dbname=d"),
            "postgres://u@a:1,b:2/d"
        );
        assert_eq!(
            described("postgresql://u:p%40ss@h1,h2:7/d"),
            "postgres://u@h1:5432,h2:7/d"
        );
    }
}
