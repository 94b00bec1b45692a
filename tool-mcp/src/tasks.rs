//! Background tools as MCP tasks (the tasks extension, SEP-2663): a client
//! that declares the extension gets a task handle for a call of a deferred
//! background tool at once, polls `tasks/get` (status, then the call's
//! result), and may `tasks/cancel` it. A task is the runtime's background
//! task, a stored call: `tasks/get` reads the store, so it answers on any
//! instance sharing it and after a restart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tool_core::Excerpt;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams,
    ElicitResult, GetTaskResult, InputRequest, InputRequests, InputResponses, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use serde_json::Value;
use tool_core::ErrorKind;

use crate::convert;
use crate::elicit::{self, Answer, Form, RESUME_KEY};
use crate::request_state::hex;
use crate::shared::Shared;
use crate::task_input::TaskInputs;
use tool_runtime::{
    CallOutcome, CallState, PendingCall, PendingKind, Runtime, RuntimeError, StoredCall,
};

/// The id prefix of a call that is (or may become) a task.
const TASK_PREFIX: &str = "mcp-task-";

/// How often a client is asked to poll.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The handle of a task that started now.
pub(crate) fn started(runtime: &Runtime, task_id: &str) -> CallToolResponse {
    let now = SystemTime::now();
    let created = created_time(task_id).unwrap_or(now);
    let task = Task::new(task_id, TaskStatus::Working, iso8601(created), iso8601(now))
        .with_poll_interval_ms(millis(POLL_INTERVAL))
        .with_ttl_ms(ttl(runtime, created, now));
    CallToolResponse::Task(CreateTaskResult::new(task))
}

/// `ttlMs`: how long from `created` the task stays readable at least. The
/// store keeps a call while it runs and for the runtime's settled
/// retention once it settled, so: until its last update (`updated`: now
/// while it works, when it settled after) plus the retention.
fn ttl(runtime: &Runtime, created: SystemTime, updated: SystemTime) -> u64 {
    let lived = updated.duration_since(created).unwrap_or_default();
    millis(lived.saturating_add(runtime.retention().age))
}

/// `tasks/get`: the task's status, with the call's result once it settled
/// (`wraps_output` as for the requesting peer's `tools/call` results).
pub(crate) async fn get(
    shared: &Shared,
    task_id: &str,
    modern: bool,
) -> Result<GetTaskResult, ErrorData> {
    let task = detailed(shared, task_id, modern).await?;
    Ok(GetTaskResult::new(task))
}

/// The task `task_id` as the store has it: its status, times and, once it
/// settled, the call's result (or error). Both task protocols (SEP-2663,
/// and 2025-11-25's experimental tasks) are read from this.
pub(crate) async fn detailed(
    shared: &Shared,
    task_id: &str,
    modern: bool,
) -> Result<DetailedTask, ErrorData> {
    let runtime = &shared.runtime;
    let stored = stored_task(runtime, task_id).await?;
    let created = created_time(task_id);
    let StoredCall { call, state, .. } = stored;
    let (payload, updated) = match state {
        CallState::Pending if call.kind == PendingKind::Suspended => {
            let input_requests = suspension_form(runtime, &call)
                .map(|form| InputRequests::from([(suspension_key(&call), elicitation(form))]))
                // Resume data no form can ask for: the application resumes it.
                .unwrap_or_default();
            (
                TaskPayload::InputRequired { input_requests },
                SystemTime::now(),
            )
        }
        CallState::Pending | CallState::Running { .. } => {
            let payload = match shared.inputs.outstanding(task_id) {
                Some(input_requests) => TaskPayload::InputRequired { input_requests },
                None => TaskPayload::Working,
            };
            (payload, SystemTime::now())
        }
        CallState::Settled {
            outcome,
            settled_at,
        } => {
            let outcome: CallOutcome = outcome.into();
            let payload = match outcome {
                CallOutcome::Aborted => TaskPayload::Cancelled,
                CallOutcome::Completed {
                    output,
                    model_output,
                    ..
                } => {
                    let served = shared.served(&call.head.tool_id).map(|s| &**s);
                    let wraps = served.is_some_and(|s| s.wraps_output_for(modern));
                    completed(convert::completed(
                        output,
                        model_output.as_ref(),
                        served,
                        wraps,
                    ))
                }
                // A crash is no answer of the tool's: the task failed
                // (SEP-2663 keeps `completed` + `isError` for a tool's own
                // errors, `failed` for the server's).
                CallOutcome::Failed { error } if error.kind() == tool_core::ErrorKind::Panic => {
                    failed(ErrorData::internal_error(error.message().to_owned(), None))
                }
                other => completed(convert::not_completed(&other)),
            };
            (payload, settled_at)
        }
    };
    let created = created.unwrap_or(updated);
    let task = Task::new(
        task_id,
        TaskStatus::Working,
        iso8601(created),
        iso8601(updated),
    )
    .with_poll_interval_ms(millis(POLL_INTERVAL))
    .with_ttl_ms(ttl(runtime, created, updated));
    Ok(DetailedTask::new(task, payload))
}

/// The stored task `task_id`: a background call (kind `Task`), or any call
/// of a task id (one that suspended, or was approved, on its way).
pub(crate) async fn stored_task(runtime: &Runtime, task_id: &str) -> Result<StoredCall, ErrorData> {
    match runtime.inbox().stored(task_id).await {
        Ok(Some(stored)) if stored.call.kind == PendingKind::Task || is_task_id(task_id) => {
            Ok(stored)
        }
        Ok(_) => Err(ErrorData::invalid_params(
            format!(
                "no task {:?}: it was never started, or was forgotten",
                Excerpt::of(task_id)
            ),
            None,
        )),
        Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
    }
}

/// `tasks/cancel` (either task protocol): fires the task's abort signal.
/// Cooperative: the signal fires where the task runs here; a task that
/// already ended, or runs on another instance, goes on.
pub(crate) async fn cancel(runtime: &Runtime, task_id: &str) -> Result<(), ErrorData> {
    stored_task(runtime, task_id).await?;
    if runtime.cancel(task_id).is_err() {
        tracing::debug!(
            task_id,
            "tasks/cancel: the task does not run on this instance"
        );
    }
    Ok(())
}

/// `tasks/update`: the client's answers to the task's questions. The
/// question of a suspended task resumes it; those its tool asks while it
/// runs (here) are delivered. Keys that match no outstanding question
/// (answered already, never asked) are ignored: the ack says nothing of
/// the task, whose next state `tasks/get` shows. An answer of the wrong
/// shape, or resume data the tool's resume schema rejects, is refused with
/// invalid params, saying why; the question stays.
pub(crate) async fn update(
    runtime: &Runtime,
    inputs: &TaskInputs,
    task_id: &str,
    responses: &InputResponses,
) -> Result<(), ErrorData> {
    let StoredCall { call, state, .. } = stored_task(runtime, task_id).await?;
    let refused = |key: &str, why: &str| {
        ErrorData::invalid_params(
            format!(
                "inputResponses[{:?}] of task {:?} was not taken: {}",
                Excerpt::of(key),
                Excerpt::of(task_id),
                Excerpt::of(why)
            ),
            None,
        )
    };
    if state.is_pending() && call.kind == PendingKind::Suspended {
        let key = suspension_key(&call);
        let Some(answer) = responses.get(&key) else {
            tracing::debug!(task_id, "tasks/update without the suspended task's answer");
            return Ok(());
        };
        let result: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
            refused(
                &key,
                &format!(
                    "expected an elicitation result ({{\"action\": ..., \"content\": ...}}): {e}"
                ),
            )
        })?;
        let Some(form) = suspension_form(runtime, &call) else {
            return Err(refused(
                &key,
                "the task's resume data cannot be asked for in a form: the application resumes it",
            ));
        };
        return match form.answer(&result) {
            Answer::Data(data) => match resume_detached(runtime, task_id, data).await {
                Ok(()) => Ok(()),
                Err(outcome) => Err(refused(&key, &rejection(&outcome))),
            },
            Answer::Refused(action) => {
                // No resume data: the call stays suspended, its question open.
                tracing::info!(
                    task_id,
                    ?action,
                    "the client did not answer the suspended task's question"
                );
                Ok(())
            }
        };
    }
    let delivered = inputs
        .answer(task_id, responses)
        .map_err(|bad| refused(&bad.key, &bad.why))?;
    tracing::debug!(
        task_id,
        delivered,
        ignored = responses.len() - delivered,
        "tasks/update"
    );
    Ok(())
}

/// Resumes the suspended call `call_id` with `data` without waiting for it
/// to finish: `Ok` once the call is claimed (it then runs as a task of its
/// own, recorded in the store), or the outcome of a resume that was refused
/// before the claim (resume data that fails the resume schema, a call no
/// longer suspended), the call unchanged.
pub(crate) async fn resume_detached(
    runtime: &Runtime,
    call_id: &str,
    data: Value,
) -> Result<(), CallOutcome> {
    let mut resume = tokio::spawn(runtime.resume(call_id, data));
    let mut pause = Duration::from_millis(2);
    loop {
        tokio::select! {
            joined = &mut resume => {
                return match joined {
                    Ok(Ok(CallOutcome::Failed { error })) if error.kind() == ErrorKind::ResumeValidation => {
                        Err(CallOutcome::Failed { error })
                    }
                    Ok(Ok(_)) => Ok(()),
                    // Another answer won the claim: it runs.
                    Ok(Err(RuntimeError::Running { .. })) => Ok(()),
                    Ok(Err(error)) => Err(CallOutcome::Failed {
                        error: tool_core::ModelError::new(ErrorKind::Execution, error.to_string()),
                    }),
                    Err(error) => Err(CallOutcome::Failed {
                        error: tool_core::ModelError::new(
                            ErrorKind::Execution,
                            format!("the resume failed: {error}"),
                        ),
                    }),
                };
            }
            () = tokio::time::sleep(pause) => {
                let claimed = runtime.inbox().stored(call_id).await.ok().flatten().is_some_and(|s| !s.state.is_pending());
                if claimed {
                    return Ok(());
                }
                pause = (pause * 2).min(Duration::from_millis(50));
            }
        }
    }
}

/// What a refused resume says.
fn rejection(outcome: &CallOutcome) -> String {
    match outcome.error() {
        Some(error) => error.message().to_owned(),
        None => "the call could not be resumed".to_owned(),
    }
}

/// The `inputRequests` key of a suspended task's question: `resume-` and
/// a digest of what it suspended with, so that every instance names it
/// alike, and a later suspension with another payload gets another key (an
/// answer to an earlier question cannot be taken for it).
fn suspension_key(call: &PendingCall) -> String {
    use sha2::Digest as _;
    let payload =
        serde_json::to_vec(call.payload.as_ref().unwrap_or(&Value::Null)).unwrap_or_default();
    let digest = sha2::Sha256::digest(&payload);
    format!("{RESUME_KEY}-{}", hex(digest.get(..6).unwrap_or_default()))
}

/// The form asking for a suspended call's resume data.
fn suspension_form(runtime: &Runtime, call: &PendingCall) -> Option<Form> {
    let schema = runtime
        .tool(&call.head.tool_id)?
        .definition()
        .resume_schema
        .clone();
    elicit::resume_form(
        call.payload.as_ref().unwrap_or(&Value::Null),
        schema.as_ref(),
        None,
    )
}

/// `form` as an `elicitation/create` input request.
pub(crate) fn elicitation(form: Form) -> InputRequest {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message,
        requested_schema: form.schema,
    };
    InputRequest::Elicitation(ElicitRequest::new(params))
}

/// A settled call's result as a completed task's (`isError` results too).
fn completed(result: rmcp::model::CallToolResult) -> TaskPayload {
    let result = match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    };
    TaskPayload::Completed { result }
}

/// A task that failed with `error` (a JSON-RPC error object).
fn failed(error: ErrorData) -> TaskPayload {
    let error = match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    };
    TaskPayload::Failed { error }
}

/// A new call's id (the runtime's call id): it carries its creation time,
/// so that any instance can say when the task was created, and, for a call
/// that is or may become a task (`task`: a background tool's, for a client
/// of the tasks extension), says so: such a call stays a task when it
/// suspends or is approved on its way, in the store of any instance.
pub(crate) fn new_call_id(task: bool) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}{:x}-{}",
        if task { TASK_PREFIX } else { "mcp-" },
        now.as_millis(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether `call_id` was made for a task ([`new_call_id`]).
pub(crate) fn is_task_id(call_id: &str) -> bool {
    call_id.starts_with(TASK_PREFIX)
}

/// When the task `task_id` was created, from its id.
fn created_time(task_id: &str) -> Option<SystemTime> {
    let rest = task_id.strip_prefix("mcp-")?;
    let rest = rest.strip_prefix("task-").unwrap_or(rest);
    let millis = rest.split('-').next()?;
    let millis = u64::from_str_radix(millis, 16).ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(millis))
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `time` in UTC as ISO 8601 (`2026-12-01T15:04:05.123Z`).
fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (days, seconds) = (since.as_secs() / 86_400, since.as_secs() % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3_600,
        seconds / 60 % 60,
        seconds % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let time = UNIX_EPOCH + Duration::from_millis(1_796_137_445_123);
        assert_eq!(iso8601(time), "2026-12-01T15:04:05.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_suspended_tasks_question_is_named_after_its_payload() {
        let asked = |payload: Value| {
            let mut call = PendingCall::new("c", "t", PendingKind::Suspended, Value::Null);
            call.payload = Some(payload);
            suspension_key(&call)
        };
        let first = asked(serde_json::json!({ "question": "Proceed?" }));
        assert!(
            first.starts_with("resume-") && first.len() == "resume-".len() + 12,
            "{first}"
        );
        assert_eq!(first, asked(serde_json::json!({ "question": "Proceed?" })));
        assert_ne!(first, asked(serde_json::json!({ "question": "And now?" })));
    }

    #[test]
    fn a_task_id_says_when_the_task_was_created() {
        for task in [false, true] {
            let id = new_call_id(task);
            assert_eq!(is_task_id(&id), task, "{id}");
            let created = iso8601(created_time(&id).expect("a creation time"));
            assert!(created.starts_with("20"), "{created}");
        }
        assert_eq!(created_time("mcp-zz-1"), None);
        assert_eq!(created_time("other"), None);
    }
}
