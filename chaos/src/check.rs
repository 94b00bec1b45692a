//! The check at the end of a run: what the store recorded, against what the
//! tools, deciders, dispatchers and the driver recorded.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::common::{APPROVE, APPROVE_SAFE, SUSPEND, TASK_ONCE, TASK_RETRY, TRANSACTIONAL};

/// A call as the store's own table has it.
#[derive(Debug)]
pub struct StoreCall {
    pub call_id: String,
    pub tool: String,
    pub kind: String,
    pub state: String,
    pub outcome: Option<Value>,
    pub settled_us: Option<i64>,
}

/// One execution of a tool body.
#[derive(Debug)]
pub struct Exec {
    pub id: String,
    pub call_id: String,
    pub tool: String,
    pub instance: String,
    pub pid: i64,
    pub attempt: i64,
    pub start_us: Option<i64>,
    pub ended_us: Option<i64>,
    pub dropped_us: Option<i64>,
}

/// One answer a decider (or the front's `wait`) got.
#[derive(Debug)]
pub struct Answer {
    pub call_id: String,
    pub instance: String,
    pub verb: String,
    pub ok: Option<String>,
    pub error: Option<String>,
    pub error_kind: Option<String>,
    pub asked_us: i64,
    pub answered_us: i64,
}

/// One fault the driver made (or saw).
#[derive(Debug)]
pub struct Fault {
    pub kind: String,
    pub target: String,
    pub pid: i64,
    pub at_us: i64,
    pub clock: String,
}

/// A call the front created.
#[derive(Debug)]
pub struct Created {
    pub call_id: String,
    pub tool: String,
    pub instance: String,
    pub answer: Option<String>,
}

/// One effect of tool (f), as its call's transaction committed it.
#[derive(Debug)]
pub struct Effect {
    pub id: i64,
    pub call_id: String,
    pub execution: String,
    pub at_us: i64,
}

/// A notification as the store's outbox has it.
#[derive(Debug)]
pub struct StoreNotification {
    pub seq: i64,
    pub id: String,
    pub kind: String,
    pub call_id: String,
    pub state: String,
    pub attempts: i64,
    pub data: Value,
    pub last_error: Option<String>,
}

/// One delivery of a notification, as the dispatchers' sink recorded it.
#[derive(Debug)]
pub struct Delivery {
    pub id: String,
    pub notification_id: String,
    pub kind: String,
    pub call_id: String,
    pub instance: String,
    pub pid: i64,
    pub at_us: i64,
}

/// Everything the check reads.
pub struct Data {
    pub calls: Vec<StoreCall>,
    pub executions: Vec<Exec>,
    pub answers: Vec<Answer>,
    pub faults: Vec<Fault>,
    pub created: Vec<Created>,
    pub effects: Vec<Effect>,
    pub notifications: Vec<StoreNotification>,
    pub deliveries: Vec<Delivery>,
}

/// How the check compares times.
pub struct Params {
    /// Resolution allowance of the stamps (SQLite: milliseconds).
    pub tol_us: i64,
    /// The runtimes' lease.
    pub lease_us: i64,
}

/// A broken promise.
#[derive(Debug)]
pub struct Violation {
    pub check: &'static str,
    pub call_id: String,
    pub detail: String,
}

/// What the check found.
pub struct Report {
    pub json: Value,
    pub violations: Vec<Violation>,
    pub paused: Vec<String>,
}

/// A time for the report: microseconds since the epoch as UTC text.
fn ts(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let micros = us.rem_euclid(1_000_000);
    let (h, m, s) = (
        secs.rem_euclid(86_400) / 3600,
        secs.rem_euclid(3600) / 60,
        secs.rem_euclid(60),
    );
    format!("{h:02}:{m:02}:{s:02}.{micros:06}Z")
}

fn opt_ts(us: Option<i64>) -> String {
    us.map_or_else(|| "-".to_owned(), ts)
}

struct Timeline {
    /// Per pid, its stop intervals (`i64::MAX` when never continued).
    stops: HashMap<i64, Vec<(i64, i64)>>,
    /// Per pid, when it was killed (or shut down, or seen dead).
    deaths: HashMap<i64, i64>,
    /// When the database was down.
    outages: Vec<(i64, i64)>,
}

impl Timeline {
    fn new(faults: &[Fault]) -> Timeline {
        let mut stops: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        let mut deaths = HashMap::new();
        let mut outages = Vec::new();
        let mut down_since: Option<i64> = None;
        for fault in faults {
            match fault.kind.as_str() {
                "stop" => stops
                    .entry(fault.pid)
                    .or_default()
                    .push((fault.at_us, i64::MAX)),
                "cont" => {
                    if let Some(open) = stops
                        .get_mut(&fault.pid)
                        .and_then(|list| list.iter_mut().rev().find(|(_, c)| *c == i64::MAX))
                    {
                        open.1 = fault.at_us;
                    }
                }
                "kill" | "shutdown" | "exit" => {
                    deaths.entry(fault.pid).or_insert(fault.at_us);
                }
                "pg_down" | "pg_restart_begin" => down_since = Some(fault.at_us),
                "pg_up" | "pg_restart_end" => {
                    if let Some(since) = down_since.take() {
                        outages.push((since, fault.at_us));
                    }
                }
                _ => {}
            }
        }
        if let Some(since) = down_since {
            outages.push((since, i64::MAX));
        }
        Timeline {
            stops,
            deaths,
            outages,
        }
    }

    /// When the execution ended: its `ended_at`, else its `dropped_at`
    /// (the later of the two when both), else the death of its process.
    fn end(&self, e: &Exec) -> Option<i64> {
        match (e.ended_us, e.dropped_us) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (Some(a), None) | (None, Some(a)) => Some(a),
            (None, None) => self
                .deaths
                .get(&e.pid)
                .copied()
                .filter(|&at| Some(at) >= e.start_us),
        }
    }

    /// The stop of the execution's process (`SIGSTOP` at, `SIGCONT` at)
    /// that overlaps `from..=to`, if one does.
    fn stopped_within(&self, e: &Exec, from: i64, to: i64) -> Option<(i64, i64)> {
        self.stops
            .get(&e.pid)?
            .iter()
            .copied()
            .find(|&(s, c)| s <= to && c >= from)
    }
}

/// An execution for a report line.
fn exec_line(e: &Exec, end: Option<i64>) -> String {
    format!(
        "execution {} ({} pid {}, attempt {}) ran {} to {} (ended_at {}, dropped_at {})",
        e.id,
        e.instance,
        e.pid,
        e.attempt,
        opt_ts(e.start_us),
        opt_ts(end),
        opt_ts(e.ended_us),
        opt_ts(e.dropped_us)
    )
}

/// Runs checks 1–9 over `data`.
pub fn check(data: &Data, params: &Params, store_name: &str) -> Report {
    let tol = params.tol_us;
    let timeline = Timeline::new(&data.faults);
    let mut violations = Vec::new();
    let mut paused = Vec::new();
    let mut violate = |check: &'static str, call_id: &str, detail: String| {
        violations.push(Violation {
            check,
            call_id: call_id.to_owned(),
            detail,
        });
    };
    let calls: HashMap<&str, &StoreCall> =
        data.calls.iter().map(|c| (c.call_id.as_str(), c)).collect();
    let mut executions: HashMap<&str, Vec<&Exec>> = HashMap::new();
    for e in data.executions.iter().filter(|e| e.start_us.is_some()) {
        executions.entry(e.call_id.as_str()).or_default().push(e);
    }
    for list in executions.values_mut() {
        list.sort_by_key(|e| e.start_us);
    }
    let status = |c: &StoreCall| {
        c.outcome
            .as_ref()
            .and_then(|o| o.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned()
    };

    // 1. Every call settled; every call `call` acknowledged is in the store.
    let acknowledged = |answer: &Option<String>| {
        matches!(
            answer.as_deref(),
            Some(
                "approval_required"
                    | "background_started"
                    | "suspended"
                    | "completed"
                    | "failed"
                    | "not_recorded"
            )
        )
    };
    for c in &data.calls {
        if c.state != "settled" {
            violate(
                "1",
                &c.call_id,
                format!("{} call of {} is {} at the end", c.kind, c.tool, c.state),
            );
        }
    }
    let mut unacknowledged = 0;
    for created in &data.created {
        if calls.contains_key(created.call_id.as_str()) {
            continue;
        }
        if acknowledged(&created.answer) {
            violate(
                "1",
                &created.call_id,
                format!(
                    "Runtime::call answered {:?} to {} for this {} call, but the store does not have it",
                    created.answer, created.instance, created.tool
                ),
            );
        } else {
            unacknowledged += 1;
        }
    }

    // 2. No execution started after its call settled (a paused process
    // included: a thawed process stops a call whose lease ran out before it
    // polls the tool again); a declined call never ran.
    for e in data.executions.iter() {
        let (Some(start), Some(c)) = (e.start_us, calls.get(e.call_id.as_str())) else {
            continue;
        };
        let Some(settled) = c.settled_us.filter(|_| c.state == "settled") else {
            continue;
        };
        if start > settled + tol {
            let stop = timeline
                .stopped_within(e, start - params.lease_us, start)
                .map_or_else(String::new, |(s, c)| {
                    format!(
                        "; its process was stopped {} to {}",
                        ts(s),
                        if c == i64::MAX { "-".to_owned() } else { ts(c) }
                    )
                });
            violate(
                "2",
                &e.call_id,
                format!(
                    "{} started after the call settled at {}{stop}",
                    exec_line(e, timeline.end(e)),
                    ts(settled)
                ),
            );
        }
        if status(c) == "declined" {
            violate(
                "2",
                &e.call_id,
                format!(
                    "declined, yet execution {} ran (started {})",
                    e.id,
                    ts(start)
                ),
            );
        }
    }

    // 3. Executions of one call never overlap. The one exception: the
    // earlier execution's process was stopped (`SIGSTOP`) between its start
    // and the later one's, and the earlier one was only dropped after the
    // thaw (no `ended_at` after the later start: a thawed process stops the
    // call before polling the tool again), reported as `paused`. An
    // `ended_at` after the other's start, or a start in a paused process
    // after the other started, is a violation.
    let mut overlaps_paused = 0;
    for (call_id, list) in &executions {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let (Some(a_start), Some(b_start)) = (a.start_us, b.start_us) else {
                    continue;
                };
                let a_end = timeline.end(a);
                if a_end.is_some_and(|end| end <= b_start + tol) {
                    continue;
                }
                let line = format!(
                    "{}; execution {} ({} pid {}, attempt {}) started at {}",
                    exec_line(a, a_end),
                    b.id,
                    b.instance,
                    b.pid,
                    b.attempt,
                    ts(b_start)
                );
                let stop = timeline.stopped_within(a, a_start, b_start + tol);
                let ended_late = a.ended_us.is_some_and(|end| end > b_start + tol);
                match stop {
                    Some((s, c)) if !ended_late => {
                        overlaps_paused += 1;
                        paused.push(format!(
                            "overlap (paused process, stopped {} to {}, dropped after the thaw) of {call_id}: {line}",
                            ts(s),
                            if c == i64::MAX { "-".to_owned() } else { ts(c) }
                        ));
                    }
                    Some((s, c)) => violate(
                        "3",
                        call_id,
                        format!(
                            "{line}; the first wrote ended_at after the second started, though its process was stopped {} to {} (a thawed process must drop it, not poll it)",
                            ts(s),
                            if c == i64::MAX { "-".to_owned() } else { ts(c) }
                        ),
                    ),
                    None => {
                        let b_stop = timeline
                            .stopped_within(b, b_start - params.lease_us, b_start)
                            .map_or_else(String::new, |(s, c)| {
                                format!(
                                    " (the second's process was stopped {} to {})",
                                    ts(s),
                                    if c == i64::MAX { "-".to_owned() } else { ts(c) }
                                )
                            });
                        violate("3", call_id, format!("{line}{b_stop}"));
                    }
                }
            }
        }
    }

    // 4. Tool (a) ran at most once per call.
    for (call_id, list) in &executions {
        let ran = list.iter().filter(|e| e.tool == APPROVE).count();
        if ran > 1 {
            let settled = calls.get(call_id).map_or("-".to_owned(), |c| status(c));
            let ids: Vec<String> = list
                .iter()
                .map(|e| format!("{} ({}, started {})", e.id, e.instance, opt_ts(e.start_us)))
                .collect();
            violate(
                "4",
                call_id,
                format!(
                    "{APPROVE} ran {ran} times (settled {settled}): {}",
                    ids.join(", ")
                ),
            );
        }
    }

    // 5. A completed call's outcome names an execution of it that ended.
    let by_id: HashMap<&str, &Exec> = data.executions.iter().map(|e| (e.id.as_str(), e)).collect();
    for c in &data.calls {
        if status(c) != "completed" {
            continue;
        }
        let named = c
            .outcome
            .as_ref()
            .and_then(|o| o.pointer("/output/execution"))
            .and_then(Value::as_str);
        let problem = match named.map(|id| (id, by_id.get(id))) {
            None => Some("its outcome names no execution".to_owned()),
            Some((id, None)) => Some(format!(
                "its outcome names execution {id}, which was never recorded"
            )),
            Some((id, Some(e))) if e.call_id != c.call_id => Some(format!(
                "its outcome names execution {id}, of call {}",
                e.call_id
            )),
            Some((id, Some(e))) if e.start_us.is_none() || e.ended_us.is_none() => Some(format!(
                "its outcome names execution {id}, which started {} and ended {}",
                opt_ts(e.start_us),
                opt_ts(e.ended_us)
            )),
            Some((id, Some(e))) if e.dropped_us.is_some() => Some(format!(
                "its outcome names execution {id}, whose future was dropped at {}",
                opt_ts(e.dropped_us)
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            violate("5", &c.call_id, problem);
        }
    }

    // 6. Every Ok answer is the recorded outcome; errors only of the allowed kinds.
    let margin = 2 * params.lease_us + 2_000_000;
    let mut answer_kinds: BTreeMap<String, u64> = BTreeMap::new();
    for a in &data.answers {
        let kind = match (&a.ok, a.error_kind.as_deref()) {
            (Some(_), _) => "ok".to_owned(),
            (None, Some(kind)) => kind.to_owned(),
            (None, None) => "none".to_owned(),
        };
        *answer_kinds
            .entry(format!("{}:{kind}", a.verb))
            .or_default() += 1;
        let when = format!("asked {} answered {}", ts(a.asked_us), ts(a.answered_us));
        if let Some(ok) = &a.ok {
            let answered: Value = serde_json::from_str(ok).unwrap_or(Value::Null);
            match calls.get(a.call_id.as_str()) {
                None => violate(
                    "6",
                    &a.call_id,
                    format!(
                        "{} answered Ok {ok} to {}, but the store has no such call",
                        a.verb, a.instance
                    ),
                ),
                Some(c) if c.outcome.as_ref() != Some(&answered) => violate(
                    "6",
                    &a.call_id,
                    format!(
                        "{} answered {} Ok {ok} ({when}); the store recorded {} ({}, settled {})",
                        a.verb,
                        a.instance,
                        c.outcome
                            .as_ref()
                            .map_or("nothing".to_owned(), Value::to_string),
                        c.state,
                        opt_ts(c.settled_us)
                    ),
                ),
                Some(_) => {}
            }
            continue;
        }
        match a.error_kind.as_deref() {
            Some("running" | "not_recorded") => {}
            Some("store") => {
                let in_outage = timeline.outages.iter().any(|&(down, up)| {
                    a.asked_us <= up.saturating_add(margin) && a.answered_us >= down
                });
                if !in_outage {
                    violate(
                        "6",
                        &a.call_id,
                        format!(
                            "{} answered {} a store error outside any outage ({when}): {}",
                            a.verb,
                            a.instance,
                            a.error.as_deref().unwrap_or("-")
                        ),
                    );
                }
            }
            other => violate(
                "6",
                &a.call_id,
                format!(
                    "{} answered {} {} ({when}): {}",
                    a.verb,
                    a.instance,
                    other.unwrap_or("-"),
                    a.error.as_deref().unwrap_or("-")
                ),
            ),
        }
    }

    // 7. Tool (f): a completed call has exactly one effect, written by the
    // execution its recorded outcome names; any other call none (a failed,
    // interrupted or declined call's transaction committed nothing, and a
    // superseded execution's never commits).
    let mut effects: HashMap<&str, Vec<&Effect>> = HashMap::new();
    for effect in &data.effects {
        effects
            .entry(effect.call_id.as_str())
            .or_default()
            .push(effect);
    }
    let effect_line = |effect: &Effect| {
        let by = by_id.get(effect.execution.as_str()).map_or_else(
            || "an execution never recorded".to_owned(),
            |e| exec_line(e, timeline.end(e)),
        );
        format!(
            "effect #{} at {} by execution {} [{by}]",
            effect.id,
            ts(effect.at_us),
            effect.execution
        )
    };
    let mut f_calls: BTreeMap<String, u64> = BTreeMap::new();
    for c in data.calls.iter().filter(|c| c.tool == TRANSACTIONAL) {
        let list = effects
            .get(c.call_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        let status = status(c);
        *f_calls.entry(format!("{}:{status}", c.kind)).or_default() += 1;
        let listed = || {
            list.iter()
                .map(|effect| effect_line(effect))
                .collect::<Vec<_>>()
                .join("; ")
        };
        if c.state == "settled" && status == "completed" {
            let named = c
                .outcome
                .as_ref()
                .and_then(|o| o.pointer("/output/execution"))
                .and_then(Value::as_str)
                .unwrap_or("-");
            match list {
                [one] if one.execution == named => {}
                [one] => violate(
                    "7",
                    &c.call_id,
                    format!(
                        "completed naming execution {named} (settled {}), but its one effect is another's: {}",
                        opt_ts(c.settled_us),
                        effect_line(one)
                    ),
                ),
                _ => violate(
                    "7",
                    &c.call_id,
                    format!(
                        "completed naming execution {named} (settled {}), with {} effects: {}",
                        opt_ts(c.settled_us),
                        list.len(),
                        listed()
                    ),
                ),
            }
        } else if !list.is_empty() {
            violate(
                "7",
                &c.call_id,
                format!(
                    "{} ({status}, settled {}) with {} effects: {}",
                    c.state,
                    opt_ts(c.settled_us),
                    list.len(),
                    listed()
                ),
            );
        }
    }
    for effect in &data.effects {
        match calls.get(effect.call_id.as_str()) {
            Some(c) if c.tool == TRANSACTIONAL => {}
            Some(c) => violate(
                "7",
                &effect.call_id,
                format!("an effect of a call of {}: {}", c.tool, effect_line(effect)),
            ),
            None => violate(
                "7",
                &effect.call_id,
                format!(
                    "an effect of a call the store does not have: {}",
                    effect_line(effect)
                ),
            ),
        }
    }
    // The (f) executions that ended without their effect committing (their
    // call failed, or their commit was superseded or rolled back).
    let committed: std::collections::HashSet<&str> = data
        .effects
        .iter()
        .map(|effect| effect.execution.as_str())
        .collect();
    let f_executions: Vec<&Exec> = data
        .executions
        .iter()
        .filter(|e| e.tool == TRANSACTIONAL && e.start_us.is_some())
        .collect();
    let f_uncommitted = f_executions
        .iter()
        .filter(|e| !committed.contains(e.id.as_str()))
        .count();
    let f_rerun = executions
        .values()
        .filter(|list| list[0].tool == TRANSACTIONAL && list.len() > 1)
        .count();

    // 8. Every notification of the run delivered, each at least once, a
    // call's in order; nothing delivered that the outbox does not hold (a
    // notification of a change that did not apply). One delivered more than
    // once (its dispatcher killed after the sink took it and before it
    // settled, or its time limit run out after the sink recorded it) is
    // allowed and counted, under its one id, kind and call.
    let notified: HashMap<&str, &StoreNotification> = data
        .notifications
        .iter()
        .map(|n| (n.id.as_str(), n))
        .collect();
    let mut delivered: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &data.deliveries {
        delivered
            .entry(d.notification_id.as_str())
            .or_default()
            .push(d);
    }
    let notification_line = |n: &StoreNotification| {
        let error = n
            .last_error
            .as_deref()
            .map_or_else(String::new, |e| format!(", last error: {e}"));
        format!(
            "notification {} ({}, seq {}, {} after {} attempts{error})",
            n.id, n.kind, n.seq, n.state, n.attempts
        )
    };
    let delivery_line = |d: &Delivery| {
        format!(
            "delivery {} by {} (pid {}) at {}",
            d.id,
            d.instance,
            d.pid,
            ts(d.at_us)
        )
    };
    for n in &data.notifications {
        if n.state != "delivered" {
            violate(
                "8",
                &n.call_id,
                format!("{} at the end", notification_line(n)),
            );
        }
        if !delivered.contains_key(n.id.as_str()) {
            violate(
                "8",
                &n.call_id,
                format!("{} never reached the sink", notification_line(n)),
            );
        }
    }
    for d in &data.deliveries {
        match notified.get(d.notification_id.as_str()) {
            None => violate(
                "8",
                &d.call_id,
                format!(
                    "{} of notification {} ({}), which the outbox does not hold",
                    delivery_line(d),
                    d.notification_id,
                    d.kind
                ),
            ),
            Some(n) if n.kind != d.kind || n.call_id != d.call_id => violate(
                "8",
                &d.call_id,
                format!(
                    "{} of {} as {} of call {}",
                    delivery_line(d),
                    notification_line(n),
                    d.kind,
                    d.call_id
                ),
            ),
            Some(_) => {}
        }
    }
    // In order: a notification is claimed only once every earlier one of
    // its call settled, and a delivered one reached the sink before.
    let mut by_call: BTreeMap<&str, Vec<&StoreNotification>> = BTreeMap::new();
    for n in &data.notifications {
        by_call.entry(n.call_id.as_str()).or_default().push(n);
    }
    let first_delivery = |n: &StoreNotification| {
        delivered
            .get(n.id.as_str())
            .and_then(|list| list.iter().map(|d| d.at_us).min())
    };
    for (call_id, list) in &mut by_call {
        list.sort_by_key(|n| n.seq);
        for pair in list.windows(2) {
            let (Some(earlier), Some(later)) = (first_delivery(pair[0]), first_delivery(pair[1]))
            else {
                continue;
            };
            if later < earlier {
                violate(
                    "8",
                    call_id,
                    format!(
                        "{} first reached the sink at {}, before {} at {}",
                        notification_line(pair[1]),
                        ts(later),
                        notification_line(pair[0]),
                        ts(earlier)
                    ),
                );
            }
        }
    }

    // 9. A call's notifications are what happened to it, as its row in the
    // store tells, each written once with its change
    // (`expected_notifications`), and a decision's says which it was.
    // That each was written in the very transaction of its change the
    // tables cannot show (`at_ms` is the writer's clock before it wrote):
    // a change that did not apply shows here as a notification too many,
    // or one of a call the store does not have.
    for (call_id, list) in &by_call {
        if !calls.contains_key(call_id) {
            for n in list {
                violate(
                    "9",
                    call_id,
                    format!("{} of a call the store does not have", notification_line(n)),
                );
            }
        }
    }
    for c in &data.calls {
        let list = by_call
            .get(c.call_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        let status = status(c);
        let expected = expected_notifications(c, &status);
        let held: Vec<&str> = list.iter().map(|n| n.kind.as_str()).collect();
        if held != expected {
            let listed: Vec<String> = list.iter().map(|n| notification_line(n)).collect();
            violate(
                "9",
                &c.call_id,
                format!(
                    "{} call of {} ({}, {status}) should have {expected:?}, the outbox holds [{}]",
                    c.kind,
                    c.tool,
                    c.state,
                    listed.join("; ")
                ),
            );
        }
        let decided = list.iter().find(|n| n.kind == "call.decided");
        if let Some(n) = decided.filter(|_| c.kind == "approval") {
            let action = n.data.get("action").and_then(Value::as_str).unwrap_or("-");
            let taken = if status == "declined" {
                "decline"
            } else {
                "approve"
            };
            if action != taken {
                violate(
                    "9",
                    &c.call_id,
                    format!(
                        "{} says {action}, the call is {} ({status})",
                        notification_line(n),
                        c.state
                    ),
                );
            }
        }
    }
    let mut notified_kinds: BTreeMap<&str, u64> = BTreeMap::new();
    let mut notified_states: BTreeMap<&str, u64> = BTreeMap::new();
    for n in &data.notifications {
        *notified_kinds.entry(n.kind.as_str()).or_default() += 1;
        *notified_states.entry(n.state.as_str()).or_default() += 1;
    }
    let delivered_again: Vec<&Vec<&Delivery>> =
        delivered.values().filter(|list| list.len() > 1).collect();
    let by_another = delivered_again
        .iter()
        .filter(|list| list.iter().any(|d| d.instance != list[0].instance))
        .count();

    // Figures.
    let count_faults = |kind: &str| data.faults.iter().filter(|f| f.kind == kind).count();
    let mut kills: BTreeMap<String, u64> = BTreeMap::new();
    for f in data.faults.iter().filter(|f| f.kind == "kill") {
        let role = f.target.split('-').next().unwrap_or("?").to_owned();
        *kills.entry(role).or_default() += 1;
    }
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut tools: BTreeMap<String, u64> = BTreeMap::new();
    for c in &data.calls {
        *outcomes.entry(status(c)).or_default() += 1;
        *tools.entry(c.tool.clone()).or_default() += 1;
    }
    let interrupted = data
        .calls
        .iter()
        .filter(|c| {
            c.outcome
                .as_ref()
                .is_some_and(|o| o.to_string().contains("was interrupted"))
        })
        .count();
    let mut by_check: BTreeMap<&str, u64> = BTreeMap::new();
    for v in &violations {
        *by_check.entry(v.check).or_default() += 1;
    }
    let dropped = data
        .executions
        .iter()
        .filter(|e| e.dropped_us.is_some())
        .count();
    // A suspending call runs twice (suspend, resume); every other once.
    let reruns = executions
        .values()
        .filter(|list| list.len() > if list[0].tool == SUSPEND { 2 } else { 1 })
        .count();
    let clocks_process = data.faults.iter().filter(|f| f.clock != "db").count();
    let json = json!({
        "store": store_name,
        "calls": data.calls.len(),
        "calls_by_tool": tools,
        "outcomes": outcomes,
        "interrupted": interrupted,
        "calls_not_stored_front_killed_or_db_down": unacknowledged,
        "executions": data.executions.iter().filter(|e| e.start_us.is_some()).count(),
        "executions_dropped": dropped,
        "calls_run_more_than_once": reruns,
        "kills": kills,
        "kills_total": count_faults("kill"),
        "stops": count_faults("stop"),
        "pg_restarts": count_faults("pg_restart_begin"),
        "pg_outages": count_faults("pg_down"),
        "unexpected_exits": count_faults("exit"),
        "faults_stamped_by_process_clock": clocks_process,
        "answers": answer_kinds,
        "transactional": {
            "calls_by_kind_and_outcome": f_calls,
            "effects": data.effects.len(),
            "executions": f_executions.len(),
            "executions_without_effect": f_uncommitted,
            "executions_dropped": f_executions.iter().filter(|e| e.dropped_us.is_some()).count(),
            "calls_run_more_than_once": f_rerun,
        },
        "notifications": {
            "total": data.notifications.len(),
            "by_kind": notified_kinds,
            "by_state": notified_states,
            "most_attempts": data.notifications.iter().map(|n| n.attempts).max().unwrap_or(0),
            "deliveries": data.deliveries.len(),
            "delivered_more_than_once": delivered_again.len(),
            "delivered_again_by_another_dispatcher": by_another,
            "extra_deliveries": data.deliveries.len() - delivered.len(),
        },
        "paused_overlaps": overlaps_paused,
        "violations": violations.len(),
        "violations_by_check": by_check,
        "tools": [APPROVE, APPROVE_SAFE, TASK_RETRY, TASK_ONCE, SUSPEND, TRANSACTIONAL],
    });
    Report {
        json,
        violations,
        paused,
    }
}

/// The kinds of the notifications a call of the run has, in order, as its
/// row in the store tells what happened to it (check 9):
/// - stored waiting for approval (tools (a), (b), (f) with approval): asked
///   for, then decided once it is no longer pending;
/// - stored suspended (tool (e), which runs unstored until it suspends):
///   suspended, then resumed once it is no longer pending (the deciders only
///   resume it);
/// - a background task (tools (c), (d)): its end once settled, completed or
///   else failed;
/// - nothing else: no call of the run has an expiry (`approval.expired`),
///   no decision names a principal (`approval.granted`), and a plain (f)
///   call is nobody's to be told of.
fn expected_notifications(c: &StoreCall, status: &str) -> Vec<&'static str> {
    let decided = c.state != "pending";
    match (c.kind.as_str(), c.tool.as_str()) {
        ("approval", _) if decided => vec!["approval.requested", "call.decided"],
        ("approval", _) => vec!["approval.requested"],
        ("suspended", _) if decided => vec!["call.suspended", "call.resumed"],
        ("suspended", _) => vec!["call.suspended"],
        ("task", TASK_RETRY | TASK_ONCE) if c.state == "settled" => {
            if status == "completed" {
                vec!["task.completed"]
            } else {
                vec!["task.failed"]
            }
        }
        _ => Vec::new(),
    }
}

impl Report {
    /// The JSON line, then a summary for a human.
    pub fn print(&self) {
        println!("{}", self.json);
        let j = &self.json;
        println!(
            "chaos {}: {} calls {}, outcomes {}, {} executions ({} dropped by lease loss, {} calls ran more than once)",
            j["store"].as_str().unwrap_or("?"),
            j["calls"],
            j["calls_by_tool"],
            j["outcomes"],
            j["executions"],
            j["executions_dropped"],
            j["calls_run_more_than_once"],
        );
        println!(
            "  faults: {} kills {}, {} stops, {} PostgreSQL restarts, {} outages, {} unexpected exits",
            j["kills_total"],
            j["kills"],
            j["stops"],
            j["pg_restarts"],
            j["pg_outages"],
            j["unexpected_exits"]
        );
        println!("  answers: {}", j["answers"]);
        let t = &j["transactional"];
        println!(
            "  transactional (f): calls {}, {} effects, {} executions ({} without an effect, {} dropped), {} calls ran more than once",
            t["calls_by_kind_and_outcome"],
            t["effects"],
            t["executions"],
            t["executions_without_effect"],
            t["executions_dropped"],
            t["calls_run_more_than_once"]
        );
        let n = &j["notifications"];
        println!(
            "  notifications: {} {}, states {}, at most {} attempts; {} deliveries ({} extra: {} notifications delivered more than once, {} of them by another dispatcher)",
            n["total"],
            n["by_kind"],
            n["by_state"],
            n["most_attempts"],
            n["deliveries"],
            n["extra_deliveries"],
            n["delivered_more_than_once"],
            n["delivered_again_by_another_dispatcher"]
        );
        println!(
            "  paused processes (reported, not violations): {} overlaps by an execution dropped after the thaw",
            j["paused_overlaps"]
        );
        for line in self.paused.iter().take(10) {
            println!("    {line}");
        }
        if self.violations.is_empty() {
            println!("  no violations");
        } else {
            println!(
                "  {} VIOLATIONS {}:",
                self.violations.len(),
                j["violations_by_check"]
            );
            for v in self.violations.iter().take(40) {
                println!("    check {} call {}: {}", v.check, v.call_id, v.detail);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    fn exec(
        id: &str,
        call: &str,
        pid: i64,
        start: i64,
        ended: Option<i64>,
        dropped: Option<i64>,
    ) -> Exec {
        Exec {
            id: id.to_owned(),
            call_id: call.to_owned(),
            tool: TRANSACTIONAL.to_owned(),
            instance: format!("worker-{pid}"),
            pid,
            attempt: 1,
            start_us: Some(start),
            ended_us: ended,
            dropped_us: dropped,
        }
    }

    fn call(id: &str, outcome: Value, settled: i64) -> StoreCall {
        StoreCall {
            call_id: id.to_owned(),
            tool: TRANSACTIONAL.to_owned(),
            kind: "task".to_owned(),
            state: "settled".to_owned(),
            outcome: Some(outcome),
            settled_us: Some(settled),
        }
    }

    fn completed(execution: &str) -> Value {
        json!({ "status": "completed", "output": { "execution": execution } })
    }

    fn effect(id: i64, call: &str, execution: &str) -> Effect {
        Effect {
            id,
            call_id: call.to_owned(),
            execution: execution.to_owned(),
            at_us: 5 * S,
        }
    }

    fn stop(pid: i64, at: i64, cont: i64) -> Vec<Fault> {
        [("stop", at), ("cont", cont)]
            .into_iter()
            .map(|(kind, at_us)| Fault {
                kind: kind.to_owned(),
                target: format!("worker-{pid}"),
                pid,
                at_us,
                clock: "db".to_owned(),
            })
            .collect()
    }

    fn run(data: &Data) -> Report {
        check(
            data,
            &Params {
                tol_us: 0,
                lease_us: 2 * S,
            },
            "test",
        )
    }

    fn checks(report: &Report) -> Vec<&'static str> {
        report.violations.iter().map(|v| v.check).collect()
    }

    /// A call run by `a` (pid 1, stopped 2 s to 6 s) and again by `b` (pid
    /// 2, from 5 s to 6 s, the recorded one).
    fn taken_over(a: Exec) -> Data {
        Data {
            calls: vec![call("c", completed("b"), 6 * S)],
            executions: vec![a, exec("b", "c", 2, 5 * S, Some(6 * S), None)],
            answers: Vec::new(),
            faults: stop(1, 2 * S, 6 * S),
            created: Vec::new(),
            effects: vec![effect(1, "c", "b")],
            notifications: Vec::new(),
            deliveries: Vec::new(),
        }
    }

    #[test]
    fn a_paused_execution_dropped_after_the_thaw_is_reported_not_violated() {
        let report = run(&taken_over(exec("a", "c", 1, S, None, Some(6 * S + 1000))));
        assert_eq!(checks(&report), Vec::<&str>::new());
        assert_eq!(report.json["paused_overlaps"], 1);
    }

    #[test]
    fn a_paused_execution_that_wrote_ended_at_after_the_other_started_is_a_violation() {
        let report = run(&taken_over(exec("a", "c", 1, S, Some(6 * S + 1000), None)));
        assert_eq!(checks(&report), ["3"]);
        assert_eq!(report.json["paused_overlaps"], 0);
    }

    #[test]
    fn an_overlap_without_a_stop_of_the_first_is_a_violation() {
        let mut data = taken_over(exec("a", "c", 1, S, None, Some(6 * S + 1000)));
        data.faults = stop(2, 2 * S, 5 * S - 1000);
        assert_eq!(checks(&run(&data)), ["3"]);
    }

    #[test]
    fn a_start_after_the_call_settled_is_a_violation_even_after_a_thaw() {
        let mut data = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        data.executions
            .push(exec("late", "c", 1, 6 * S + 500, None, Some(6 * S + 600)));
        assert_eq!(checks(&run(&data)), ["2"]);
    }

    #[test]
    fn check_7_wants_one_effect_of_the_recorded_execution_and_none_otherwise() {
        let ok = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        assert!(run(&ok).violations.is_empty());

        let mut twice = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        twice.effects.push(effect(2, "c", "b"));
        assert_eq!(checks(&run(&twice)), ["7"]);

        let mut superseded = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        superseded.effects = vec![effect(1, "c", "a")];
        assert_eq!(checks(&run(&superseded)), ["7"]);

        let mut none = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        none.effects.clear();
        assert_eq!(checks(&run(&none)), ["7"]);

        let mut failed = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        failed.calls[0].outcome = Some(json!({ "status": "failed", "error": "interrupted" }));
        assert_eq!(checks(&run(&failed)), ["7"]);
        failed.effects.clear();
        assert!(run(&failed).violations.is_empty());

        let mut stray = taken_over(exec("a", "c", 1, S, None, Some(2 * S)));
        stray.effects.push(effect(3, "nobody", "b"));
        assert_eq!(checks(&run(&stray)), ["7"]);
    }

    fn notification(seq: i64, call: &str, kind: &str) -> StoreNotification {
        StoreNotification {
            seq,
            id: format!("ntf_{seq}"),
            kind: kind.to_owned(),
            call_id: call.to_owned(),
            state: "delivered".to_owned(),
            attempts: 1,
            data: json!({}),
            last_error: None,
        }
    }

    fn delivery(n: &StoreNotification, by: &str, at: i64) -> Delivery {
        Delivery {
            id: format!("{by}-{}", n.seq),
            notification_id: n.id.clone(),
            kind: n.kind.clone(),
            call_id: n.call_id.clone(),
            instance: by.to_owned(),
            pid: 9,
            at_us: at,
        }
    }

    /// A settled call of `tool`, stored as `kind`, that ran execution
    /// `execution` (recorded, 1 s to 2 s) when it completed.
    fn settled(id: &str, tool: &str, kind: &str, outcome: Value) -> (StoreCall, Exec) {
        let execution = format!("{id}-run");
        let mut e = exec(&execution, id, 1, S, Some(2 * S), None);
        e.tool = tool.to_owned();
        let outcome = if outcome["status"] == "completed" {
            completed(&execution)
        } else {
            outcome
        };
        let c = StoreCall {
            tool: tool.to_owned(),
            kind: kind.to_owned(),
            ..call(id, outcome, 3 * S)
        };
        (c, e)
    }

    /// Calls of each notifying kind, settled, with their notifications,
    /// each delivered once, in order: an approved (a) call, a declined one,
    /// a resumed (e) call, a completed (c) task and a failed (d) one.
    fn notified() -> Data {
        let done = json!({ "status": "completed" });
        let failed = json!({ "status": "failed", "error": "interrupted" });
        let declined = json!({ "status": "declined", "reason": "chaos" });
        let (mut calls, mut executions) = (Vec::new(), Vec::new());
        for (id, tool, kind, outcome) in [
            ("a", APPROVE, "approval", &done),
            ("n", APPROVE, "approval", &declined),
            ("s", SUSPEND, "suspended", &done),
            ("c", TASK_RETRY, "task", &done),
            ("d", TASK_ONCE, "task", &failed),
        ] {
            let (c, e) = settled(id, tool, kind, outcome.clone());
            calls.push(c);
            if outcome["status"] != "declined" {
                executions.push(e);
            }
        }
        let mut approve = notification(2, "a", "call.decided");
        approve.data = json!({ "action": "approve" });
        let mut decline = notification(4, "n", "call.decided");
        decline.data = json!({ "action": "decline", "reason": "chaos" });
        let notifications = vec![
            notification(1, "a", "approval.requested"),
            approve,
            notification(3, "n", "approval.requested"),
            decline,
            notification(5, "s", "call.suspended"),
            notification(6, "s", "call.resumed"),
            notification(7, "c", "task.completed"),
            notification(8, "d", "task.failed"),
        ];
        let deliveries = notifications
            .iter()
            .map(|n| delivery(n, "dispatcher-0-g0", n.seq * S))
            .collect();
        Data {
            calls,
            executions,
            answers: Vec::new(),
            faults: Vec::new(),
            created: Vec::new(),
            effects: Vec::new(),
            notifications,
            deliveries,
        }
    }

    #[test]
    fn notifications_of_what_happened_delivered_in_order_pass() {
        let report = run(&notified());
        assert_eq!(checks(&report), Vec::<&str>::new());
        assert_eq!(report.json["notifications"]["total"], 8);
        assert_eq!(report.json["notifications"]["delivered_more_than_once"], 0);
    }

    #[test]
    fn check_8_allows_a_notification_delivered_again_under_its_id_and_counts_it() {
        let mut again = notified();
        let (decided, suspended) = (&again.notifications[1], &again.notifications[4]);
        again.deliveries.extend([
            delivery(decided, "dispatcher-1-g0", 2 * S + 500),
            delivery(suspended, "dispatcher-0-g0", 5 * S + 500),
        ]);
        let report = run(&again);
        assert_eq!(checks(&report), Vec::<&str>::new());
        let figures = &report.json["notifications"];
        assert_eq!(figures["delivered_more_than_once"], 2);
        assert_eq!(figures["delivered_again_by_another_dispatcher"], 1);
        assert_eq!(figures["extra_deliveries"], 2);

        let mut other_kind = notified();
        let mut wrong = delivery(&other_kind.notifications[1], "dispatcher-1-g0", 2 * S + 500);
        wrong.kind = "call.resumed".to_owned();
        other_kind.deliveries.push(wrong);
        assert_eq!(checks(&run(&other_kind)), ["8"]);
    }

    #[test]
    fn check_8_wants_every_notification_delivered_in_order_and_nothing_else() {
        for state in ["waiting", "sending", "dead"] {
            let mut unsettled = notified();
            unsettled.notifications[2].state = state.to_owned();
            assert_eq!(checks(&run(&unsettled)), ["8"], "{state}");
        }

        let mut never = notified();
        never.deliveries.remove(6);
        assert_eq!(checks(&run(&never)), ["8"]);

        let mut not_stored = notified();
        let mut rolled_back = notification(9, "a", "call.decided");
        rolled_back.id = "ntf_rolled_back".to_owned();
        not_stored
            .deliveries
            .push(delivery(&rolled_back, "dispatcher-0-g0", 9 * S));
        assert_eq!(checks(&run(&not_stored)), ["8"]);

        let mut reordered = notified();
        reordered.deliveries[4].at_us = 7 * S;
        assert_eq!(checks(&run(&reordered)), ["8"]);
    }

    #[test]
    fn check_9_wants_each_change_notified_once() {
        let mut twice = notified();
        let mut again = notification(9, "a", "approval.requested");
        again.id = "ntf_again".to_owned();
        twice
            .deliveries
            .push(delivery(&again, "dispatcher-0-g0", 9 * S));
        twice.notifications.push(again);
        assert_eq!(checks(&run(&twice)), ["9"]);

        let mut undecided = notified();
        undecided.notifications.remove(1);
        undecided.deliveries.remove(1);
        assert_eq!(checks(&run(&undecided)), ["9"]);

        let mut other_end = notified();
        other_end.notifications[7].kind = "task.completed".to_owned();
        other_end.deliveries[7].kind = "task.completed".to_owned();
        assert_eq!(checks(&run(&other_end)), ["9"]);

        let mut resumed_first = notified();
        resumed_first.notifications[4].seq = 6;
        resumed_first.notifications[5].seq = 5;
        resumed_first.deliveries[4].at_us = 6 * S;
        resumed_first.deliveries[5].at_us = 5 * S;
        assert_eq!(checks(&run(&resumed_first)), ["9"]);

        let mut plain = notified();
        let (c, e) = settled("f", TRANSACTIONAL, "task", json!({ "status": "completed" }));
        plain.effects.push(effect(1, "f", &e.id));
        plain.calls.push(c);
        plain.executions.push(e);
        assert_eq!(checks(&run(&plain)), Vec::<&str>::new());
        let told = notification(9, "f", "task.completed");
        plain
            .deliveries
            .push(delivery(&told, "dispatcher-0-g0", 9 * S));
        plain.notifications.push(told);
        assert_eq!(checks(&run(&plain)), ["9"]);

        let mut stranger = notified();
        let told = notification(9, "nobody", "approval.requested");
        stranger
            .deliveries
            .push(delivery(&told, "dispatcher-0-g0", 9 * S));
        stranger.notifications.push(told);
        assert_eq!(checks(&run(&stranger)), ["9"]);
    }

    #[test]
    fn check_9_wants_a_decision_notified_as_it_was_taken() {
        let mut approved_as_declined = notified();
        approved_as_declined.notifications[1].data = json!({ "action": "decline" });
        assert_eq!(checks(&run(&approved_as_declined)), ["9"]);

        let mut declined_as_approved = notified();
        declined_as_approved.notifications[3].data = json!({ "action": "approve" });
        assert_eq!(checks(&run(&declined_as_approved)), ["9"]);
    }

    #[test]
    fn check_9_wants_a_waiting_call_notified_only_of_its_wait() {
        let mut waiting = notified();
        waiting.calls[0].state = "pending".to_owned();
        waiting.calls[0].outcome = None;
        waiting.calls[0].settled_us = None;
        waiting.executions.remove(0);
        assert_eq!(checks(&run(&waiting)), ["1", "9"]);
        waiting.notifications.remove(1);
        waiting.deliveries.remove(1);
        assert_eq!(checks(&run(&waiting)), ["1"]);
    }
}
