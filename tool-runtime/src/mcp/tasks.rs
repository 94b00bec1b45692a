//! Background tools as MCP tasks (the tasks extension, SEP-2663): a client
//! that declares the extension gets a task handle for a call of a deferred
//! background tool at once, polls `tasks/get` (status, then the call's
//! result), and may `tasks/cancel` it. A task is the runtime's background
//! task, a stored call: `tasks/get` reads the store, so it answers on any
//! instance sharing it and after a restart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};

use super::convert::{self, ServedTool};
use crate::store::{CallState, StoredCall};
use crate::{CallOutcome, Runtime};

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
    millis(lived.saturating_add(runtime.inner.calls.retention()))
}

/// `tasks/get`: the task's status, with the call's result once it settled
/// (`wraps_output` as for the requesting peer's `tools/call` results).
pub(crate) async fn get(
    runtime: &Runtime,
    served: impl Fn(&str) -> Option<ServedTool>,
    task_id: &str,
    modern: bool,
) -> Result<GetTaskResult, ErrorData> {
    let unknown = || {
        ErrorData::invalid_params(
            format!("no task {task_id:?}: it was never started, or was forgotten"),
            None,
        )
    };
    let stored = match runtime.stored(task_id).await {
        Ok(Some(stored)) if stored.call.kind == crate::PendingKind::Task => stored,
        Ok(_) => return Err(unknown()),
        Err(error) => return Err(ErrorData::internal_error(error.to_string(), None)),
    };
    let created = created_time(task_id);
    let StoredCall { call, state, .. } = stored;
    let (payload, updated) = match state {
        CallState::Pending | CallState::Running { .. } => (TaskPayload::Working, SystemTime::now()),
        CallState::Settled {
            outcome,
            settled_at,
        } => {
            let outcome: CallOutcome = outcome.into();
            let payload = match &outcome {
                CallOutcome::Aborted => TaskPayload::Cancelled,
                CallOutcome::Completed {
                    output,
                    model_output,
                    ..
                } => {
                    let tool = served(&call.tool_id);
                    let has_schema = runtime
                        .tool(&call.tool_id)
                        .is_some_and(|t| t.definition().output_schema.is_some());
                    let wraps = tool.is_some_and(|t| t.wraps_output_for(modern));
                    completed(convert::completed(
                        output,
                        model_output.as_ref(),
                        has_schema,
                        wraps,
                    ))
                }
                // A crash is no answer of the tool's: the task failed
                // (SEP-2663 keeps `completed` + `isError` for a tool's own
                // errors, `failed` for the server's).
                CallOutcome::Failed { error } if error.kind() == tool_core::ErrorKind::Panic => {
                    failed(ErrorData::internal_error(error.message().to_owned(), None))
                }
                other => completed(convert::not_completed(other)),
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
    Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
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

/// A new task's id (the runtime's call id): it carries its creation time,
/// so that any instance can say when the task was created.
pub(crate) fn new_task_id() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "mcp-{:x}-{}",
        now.as_millis(),
        uuid::Uuid::new_v4().simple()
    )
}

/// When the task `task_id` was created, from its id.
fn created_time(task_id: &str) -> Option<SystemTime> {
    let millis = task_id.strip_prefix("mcp-")?.split('-').next()?;
    let millis = u64::from_str_radix(millis, 16).ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(millis))
}

fn millis(duration: Duration) -> u64 {
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
    fn a_task_id_says_when_the_task_was_created() {
        let id = new_task_id();
        let created = iso8601(created_time(&id).expect("a creation time"));
        assert!(created.starts_with("20"), "{created}");
        assert_eq!(created_time("mcp-zz-1"), None);
        assert_eq!(created_time("other"), None);
    }
}
