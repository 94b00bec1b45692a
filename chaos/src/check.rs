//! The check at the end of a run: what the store recorded, against what the
//! tools, deciders and the driver recorded.

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

/// Everything the check reads.
pub struct Data {
    pub calls: Vec<StoreCall>,
    pub executions: Vec<Exec>,
    pub answers: Vec<Answer>,
    pub faults: Vec<Fault>,
    pub created: Vec<Created>,
    pub effects: Vec<Effect>,
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

/// Runs checks 1–7 over `data`.
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
}
