//! The chaos test of issue 22: durable calls under database faults and
//! paused instances, with real processes, `SIGKILL`, `SIGSTOP` and (for
//! PostgreSQL) a database server that is restarted and held down; and of
//! issue 36: the notifications of those calls, delivered from the store's
//! outbox by dispatchers that are killed too. `chaos restate` is issue
//! 37's: the same tools served on Restate (module `restate`).
//!
//! # What runs
//!
//! `chaos run` is the driver. It starts copies of its own executable, each a
//! [`tool_runtime::Runtime`] with its own instance id on one shared store
//! (PostgreSQL or SQLite), every one writing notifications
//! (`notifications(true)`: each change people hear of notified in the
//! store's outbox, in the same atomic step as the change):
//!
//! - one **front** (`chaos front`) creates calls through `Runtime::call` over
//!   the run's duration, a mix of six tools: (a) `chaos_approve`, approval
//!   required; (b) `chaos_approve_safe`, approval required and retry-safe;
//!   (c) `chaos_task_retry`, a background task with 2 retries; (d)
//!   `chaos_task_once`, a background task without retries; (e)
//!   `chaos_suspend`, which suspends on its first run and completes when
//!   resumed; (f) `chaos_transactional`, a transactional tool (22% of the
//!   calls): three in five are plain calls, stored and claimed by the front
//!   and run there at once (a worker recovers and runs again the ones a
//!   killed front left), two in five require approval (`{"approval": true}`,
//!   its approval policy), run by the deciding decider or recovered by a
//!   worker. It waits (`Runtime::wait`) for each background call and
//!   records the answer, and records what `call` answered for a plain (f)
//!   call (verb `call`);
//! - two **workers** (`chaos worker`): `Runtime::worker()`, which claims
//!   tasks and recovers calls whose lease expired;
//! - two **deciders** (`chaos decider`) racing on the same calls: they list
//!   `runtime.inbox().waiting()` and approve (decider 0 declines one call in ten
//!   instead), resume, and ask again after an error, recording every answer
//!   (`chaos_answers`);
//! - two **dispatchers** (`chaos dispatcher`): `Runtime::dispatcher()` with
//!   one sink, under the run's lease, polling every 100 ms, retrying a
//!   failed delivery after 50 ms to 1 s up to 1,000 times (an outage makes
//!   nothing dead). A delivery takes 20–300 ms and records itself in
//!   `chaos_deliveries` (notification id, kind, call, instance, pid, stamped
//!   by the database) at a random point of it, over a connection of its
//!   own; when that fails (PostgreSQL down) the sink answers "try again".
//!   So a kill lands now before a claimed notification is recorded, now
//!   after it is recorded and before it is settled (it is delivered again,
//!   under its id).
//!
//! Every tool body records its execution in `chaos_executions` over a
//! connection of its own (autocommit): a row at its start stamped by the
//! database (`clock_timestamp()`, SQLite `strftime(..., 'now')`), a sleep of
//! 50–800 ms (a tokio sleep, so a dropped future stops there), `ended_at`
//! stamped at its end, and an output naming the row (`{"execution": id}`).
//! A body whose future is dropped before its end records `dropped_at` (the
//! process clock at the drop, written later if the database is down; every
//! process runs on one host, so the clocks are one). Tool (f)'s body also
//! writes its **effect**, at a random point of its sleep, inside the
//! runtime's transaction of the call: one row of `chaos_effects (call_id,
//! execution)` (PostgreSQL: `PostgresTransaction::execute`; SQLite:
//! `SqliteTransaction::defer`, the table in the store's own file), with no
//! unique key on `call_id`, so a duplicate would show. When writing it
//! fails (PostgreSQL down), the body ends with an error: the call fails,
//! its transaction rolled back.
//!
//! Meanwhile the driver injects faults at random times drawn from the seed,
//! one at a time: `SIGKILL` of a worker, a decider, a dispatcher or the
//! front (restarted with a new instance id), `SIGSTOP` of a worker for
//! longer than lease + takeover grace (then `SIGCONT`), and for PostgreSQL
//! `pg_ctl restart -m immediate` and `pg_ctl stop -m immediate` held longer
//! than the lease. Each fault is recorded in `chaos_faults`, stamped by the
//! database (a stop before `SIGSTOP`, a continue after `SIGCONT`, a kill
//! after `SIGKILL`).
//!
//! # What it checks
//!
//! After the fault phase the driver lets everything settle, then lets the
//! dispatchers run until the outbox holds nothing of the run waiting or
//! sending (at most 30 s and four leases), kills the children, reads the
//! store's own tables (`tool_runtime_calls` and `tool_runtime_outbox`,
//! SQLite `calls` and `outbox`) and the chaos tables, and checks:
//!
//! 1. every call (in the store, or acknowledged by `Runtime::call` as
//!    stored) is settled: none lost, none stuck pending or running;
//! 2. no execution started after its call's recorded `settled_at`, in a
//!    paused process too (and a declined call never ran);
//! 3. the executions of one call never overlap in time. An execution's end
//!    is its `ended_at`, else its `dropped_at`, else the kill of its process.
//!    The runtime stops a call when its lease runs out by its own clock, and
//!    a process thawed from `SIGSTOP` checks that deadline before it polls
//!    the tool again, so a stopped execution can only be *dropped* after the
//!    thaw. An overlap is allowed, and reported as `paused`, only when the
//!    earlier execution's process was stopped between its start and the
//!    later one's, and the earlier one has no `ended_at` after the later
//!    start (it was dropped after the thaw, or its process killed). Every
//!    other overlap is a violation: an `ended_at` written after the other
//!    execution started, or a start while the other ran, paused or not;
//! 4. tool (a), approved and not retry-safe, ran at most once per call (a
//!    recovery settles it as interrupted, never runs it again);
//! 5. the recorded outcome of a completed call names an execution of that
//!    call that exists, ended, and was not dropped;
//! 6. every `Ok` answer of a decision (`approve`, `decline`, `resume`) or of
//!    `wait` equals the outcome the store recorded; errors are allowed only
//!    of the kinds `Running` and `NotRecorded`, and `Store` while the
//!    database was down (or within two leases and 2 s after it came back).
//!    What `call` answered for a plain (f) call counts as an answer too:
//!    its outcome must be the recorded one, unless it says the outcome is
//!    not recorded (kind `NotRecorded`) or the call could not be stored
//!    (kind `Store`);
//! 7. tool (f), exactly-once effects: every (f) call recorded as completed
//!    has exactly one `chaos_effects` row, and it names the execution the
//!    recorded outcome names (never a superseded execution's); every other
//!    (f) call (failed, interrupted, declined) has none; and no effect
//!    belongs to any other call;
//! 8. notifications delivered at least once: every notification of the
//!    run's calls in the outbox is `delivered` at the end (none waiting,
//!    sending or dead) and has a `chaos_deliveries` row; every delivery
//!    names a notification the outbox holds (none of a change that did not
//!    apply), with its kind and call; a call's notifications first reached
//!    the sink in their order (`seq`). A notification delivered more than
//!    once (its dispatcher killed between the sink and the settling, or a
//!    sink's time limit run out after it recorded) is allowed, under its
//!    one id, and counted;
//! 9. notifications say what happened, each change once: a call's
//!    notifications, in order, are exactly those its row in the store
//!    tells of. Stored waiting for approval ((a), (b), (f) with approval):
//!    `approval.requested`, then, once no longer pending, one
//!    `call.decided` whose `action` is `decline` exactly when the call
//!    settled declined; stored suspended ((e), stored only when it
//!    suspends): `call.suspended`, then, once no longer pending, one
//!    `call.resumed`; a background task ((c), (d)), once settled: one
//!    `task.completed` if it completed, else one `task.failed`; nothing
//!    for a plain (f) call, no `approval.granted` (no decision names a
//!    principal) and no `approval.expired` (no call has an expiry); and no
//!    notification of a call the store does not have. That each was
//!    written in the very transaction of its change the tables cannot show
//!    (its `at_ms` is the writer's clock before the write); a change that
//!    did not apply shows as a notification too many or of a call not
//!    stored.
//!
//! SQLite stamps have millisecond resolution, so its comparisons allow 2 ms.
//! It prints one JSON line and a summary, and exits 1 on any violation.
//!
//! # How to run it
//!
//! ```text
//! # PostgreSQL: a throwaway server (it is restarted and stopped!)
//! source .ci/postgres start
//! cargo run -p chaos --release -- run --store postgres --url "$DATABASE_URL" \
//!     --pg-dir "$CI_PG_DIR" --calls 3000 --seconds 600 --lease-ms 2000 --seed 1
//! # SQLite
//! cargo run -p chaos --release -- run --store sqlite --path /tmp/chaos.db \
//!     --calls 3000 --seconds 600 --lease-ms 2000 --seed 1
//! # The short form CI runs: PostgreSQL ($DATABASE_URL, $CI_PG_DIR), then SQLite
//! cargo run -p chaos -- ci
//! ```
//!
//! `--pg-dir` (default `$CI_PG_DIR`) is the data directory of the server,
//! restarted as `.ci/postgres` started it (its owner, its port, `-l
//! DIR/server.log`); `PG_BIN` overrides the newest `/usr/lib/postgresql/*/bin`.
//! Children log to `--log-dir` (default a new directory under the temporary
//! directory, printed at the start).

mod check;
mod common;
mod db;
mod driver;
mod restate;
mod roles;

use std::process::ExitCode;

use common::Args;

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = raw.split_first() else {
        eprintln!(
            "usage: chaos run|ci|restate|worker|decider|dispatcher|front|restate-service [--options]; see the crate docs"
        );
        return ExitCode::from(2);
    };
    let args = match Args::parse(rest) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("chaos: {error}");
            return ExitCode::from(2);
        }
    };
    let result = match command.as_str() {
        "run" => driver::run_command(&args),
        "ci" => driver::ci_command(&args),
        "worker" | "decider" | "dispatcher" | "front" => roles::child(command, &args),
        "restate" => restate::command(&args),
        "restate-service" => restate::service_command(&args),
        other => Err(format!("unknown command {other:?}")),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("chaos {command}: {error}");
            ExitCode::from(2)
        }
    }
}
