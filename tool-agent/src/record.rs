//! What the store keeps of a run, so that any instance can go on with it:
//! its thread, conversation, steps, and the calls of its last step that
//! settled or wait. Runs saved by earlier versions load: fields are only
//! ever added, with a default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::ModelOutput;
use tool_runtime::{CallOutcome, Decision, PendingKind};

use crate::error::AgentError;
use crate::model::Message;

/// The conversation a run belongs to: given to the tools
/// (`ToolContext::agent`) and kept with the run.
///
/// ```
/// use tool_agent::Thread;
///
/// let thread = Thread::new("t-7").with_resource("user-3");
/// assert_eq!((thread.thread_id.as_str(), thread.resource_id.as_deref()), ("t-7", Some("user-3")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Thread {
    /// The thread's id.
    pub thread_id: String,
    /// Whose it is (a user, an account), if known.
    pub resource_id: Option<String>,
}

impl Thread {
    /// The thread `thread_id`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Thread {
            thread_id: thread_id.into(),
            resource_id: None,
        }
    }

    /// Whose thread it is.
    #[must_use]
    pub fn with_resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }
}

/// What a call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitingFor {
    Approval,
    ResumeData,
    /// Its output, from the application: a declaration-only tool's call.
    Output,
}

impl WaitingFor {
    /// What a call must wait for to take `decision`, as errors name it.
    pub(crate) fn needed_by(decision: &Decision) -> &'static str {
        match decision.pending_kinds() {
            [PendingKind::Approval] => WaitingFor::Approval.describe(),
            [PendingKind::Suspended] => WaitingFor::ResumeData.describe(),
            _ => "approval or output",
        }
    }

    /// Whether a call waiting for this takes `decision`.
    fn takes(self, decision: &Decision) -> bool {
        let kind = match self {
            WaitingFor::Approval => PendingKind::Approval,
            WaitingFor::ResumeData => PendingKind::Suspended,
            WaitingFor::Output => PendingKind::Output,
        };
        decision.pending_kinds().contains(&kind)
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            WaitingFor::Approval => "approval",
            WaitingFor::ResumeData => "resume data",
            WaitingFor::Output => "output",
        }
    }
}

/// A call of the run that waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    pub(crate) tool_name: String,
    pub(crate) waiting_for: WaitingFor,
    pub(crate) args: Value,
    #[serde(default)]
    pub(crate) payload: Option<Value>,
    #[serde(default)]
    pub(crate) resume_schema: Option<Value>,
}

/// A call's result, as the conversation will hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Settled {
    pub(crate) tool_name: String,
    /// The raw output, or what the model is told of a call that did not
    /// complete (kept as `content` by earlier versions).
    #[serde(alias = "content")]
    pub(crate) result: Value,
    /// What the model reads instead of `result` (`to_model_output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_output: Option<ModelOutput>,
    pub(crate) is_error: bool,
}

impl Settled {
    /// What the conversation keeps of a call of `tool_name` that ended with
    /// `outcome`: a completed call's raw output and its model output, else
    /// what the model is told (raw; the transcript applies the tools'
    /// transcript transforms).
    pub(crate) fn of(tool_name: &str, outcome: &CallOutcome) -> Self {
        let (result, model_output, is_error) = match outcome {
            CallOutcome::Completed {
                output,
                model_output,
                ..
            } => (output.clone(), model_output.clone(), false),
            CallOutcome::BackgroundStarted { .. } => (outcome.to_model_value(), None, false),
            other => (other.to_model_value(), None, true),
        };
        Settled {
            tool_name: tool_name.to_owned(),
            result,
            model_output,
            is_error,
        }
    }

    /// The conversation's message for call `call_id`.
    pub(crate) fn into_message(self, call_id: String) -> Message {
        Message::ToolResult {
            call_id,
            tool_name: self.tool_name,
            result: self.result,
            model_output: self.model_output,
            is_error: self.is_error,
        }
    }
}

/// A background task a call of the run started, until its result enters
/// the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BackgroundTask {
    pub(crate) tool_name: String,
    /// The runtime's task: the stored call any instance reads its outcome from.
    pub(crate) task_id: String,
    /// The call's input, which its result is shown with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<Value>,
    /// Its result, once it settled, until the next step takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settled: Option<Settled>,
}

/// A background task a run awaits ([`Agent::background_tasks`](crate::Agent::background_tasks)).
///
/// ```
/// # async fn demo(agent: tool_agent::Agent) -> Result<(), tool_agent::AgentError> {
/// for task in agent.background_tasks("run-1").await? {
///     println!("{} ({}): task {}, settled: {}", task.call_id, task.tool_name, task.task_id, task.settled);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AwaitedTask {
    /// The call that started it.
    pub call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// The runtime's task (`Runtime::wait` takes it).
    pub task_id: String,
    /// Whether the run has its result, for its next step.
    pub settled: bool,
}

/// Everything needed to go on with a run, on any instance: what the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) agent_id: String,
    pub(crate) thread: Thread,
    /// The conversation up to the last assistant message.
    pub(crate) messages: Vec<Message>,
    /// Steps taken.
    pub(crate) steps: usize,
    /// Results of the last step's calls that settled, by call id.
    pub(crate) settled: BTreeMap<String, Settled>,
    /// The last step's calls that wait, by call id.
    pub(crate) waiting: BTreeMap<String, Waiting>,
    /// Suspensions the conversation moved on from (a reply came): resumed
    /// by a call that names them (auto-resume).
    #[serde(default)]
    pub(crate) suspensions: BTreeMap<String, Waiting>,
    /// The run's request context (its JSON values): every call of the run
    /// runs with it, on any instance.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub(crate) request_context: serde_json::Map<String, serde_json::Value>,
    /// The background tasks the run's calls started whose results have not
    /// entered the conversation yet, by call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) tasks: BTreeMap<String, BackgroundTask>,
}

impl RunRecord {
    pub(crate) fn new(agent_id: &str, thread: Thread, messages: Vec<Message>) -> Self {
        RunRecord {
            agent_id: agent_id.to_owned(),
            thread,
            messages,
            steps: 0,
            settled: BTreeMap::new(),
            waiting: BTreeMap::new(),
            suspensions: BTreeMap::new(),
            request_context: serde_json::Map::new(),
            tasks: BTreeMap::new(),
        }
    }

    /// Fails unless `call_id` waits for what takes `decision`: a decision
    /// names a waiting call of its run.
    pub(crate) fn expect_waiting(
        &self,
        run_id: &str,
        call_id: &str,
        decision: &Decision,
    ) -> Result<(), AgentError> {
        match self.waiting.get(call_id) {
            Some(waiting) if waiting.waiting_for.takes(decision) => Ok(()),
            _ => Err(self.not_waiting(run_id, call_id, WaitingFor::needed_by(decision))),
        }
    }

    /// The background tasks the run awaits.
    pub(crate) fn awaited_tasks(&self) -> Vec<AwaitedTask> {
        self.tasks
            .iter()
            .map(|(call_id, task)| AwaitedTask {
                call_id: call_id.clone(),
                tool_name: task.tool_name.clone(),
                task_id: task.task_id.clone(),
                settled: task.settled.is_some(),
            })
            .collect()
    }

    /// Takes over the background tasks `other` (an earlier run of the
    /// thread) awaits: this run gives the model their results. Named by
    /// their task ids, unique across runs (a provider may reuse call ids).
    pub(crate) fn adopt_tasks(&mut self, other: &mut RunRecord) {
        for (_, task) in std::mem::take(&mut other.tasks) {
            self.tasks.insert(task.task_id.clone(), task);
        }
    }

    /// The calls that wait, and for what.
    pub(crate) fn waiting_calls(&self) -> Vec<(String, &'static str)> {
        self.waiting
            .iter()
            .map(|(id, w)| (id.clone(), w.waiting_for.describe()))
            .collect()
    }

    /// The error of a decision (or reply) that needed `call_id` to wait for
    /// `expected`, listing what does wait.
    pub(crate) fn not_waiting(
        &self,
        run_id: &str,
        call_id: &str,
        expected: &'static str,
    ) -> AgentError {
        AgentError::NotWaiting {
            run_id: run_id.to_owned(),
            call_id: call_id.to_owned(),
            expected,
            waiting: self.waiting_calls(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ToolCallRequest;

    /// A run waiting on one approval and one suspension, as the store
    /// holds it: the shape earlier versions saved.
    fn stored() -> Value {
        json!({
            "agent_id": "banker",
            "thread": { "thread_id": "t1", "resource_id": "user-3" },
            "messages": [
                { "role": "user", "text": "send 10 and book" },
                { "role": "assistant", "text": "", "tool_calls": [
                    { "call_id": "c-transfer", "tool_name": "transfer", "arguments": { "amount": 10 } },
                    { "call_id": "c-book", "tool_name": "book", "arguments": { "restaurant": "Roma" } },
                    { "call_id": "c-lookup", "tool_name": "lookup", "arguments": {} }
                ] }
            ],
            "steps": 1,
            "settled": {
                "c-lookup": { "tool_name": "lookup", "result": { "balance": 100 }, "is_error": false }
            },
            "waiting": {
                "c-book": { "tool_name": "book", "waiting_for": "resume_data", "args": { "restaurant": "Roma" }, "payload": { "question": "how many seats?" }, "resume_schema": null },
                "c-transfer": { "tool_name": "transfer", "waiting_for": "approval", "args": { "amount": 10 }, "payload": null, "resume_schema": { "type": "object" } }
            },
            "suspensions": {}
        })
    }

    #[test]
    fn a_stored_run_loads_and_saves_in_the_same_shape() {
        let record: RunRecord = serde_json::from_value(stored()).unwrap();
        assert_eq!(record.thread, Thread::new("t1").with_resource("user-3"));
        assert_eq!(
            record.messages[1],
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCallRequest {
                        call_id: "c-transfer".into(),
                        tool_name: "transfer".into(),
                        arguments: json!({ "amount": 10 }),
                    },
                    ToolCallRequest {
                        call_id: "c-book".into(),
                        tool_name: "book".into(),
                        arguments: json!({ "restaurant": "Roma" }),
                    },
                    ToolCallRequest {
                        call_id: "c-lookup".into(),
                        tool_name: "lookup".into(),
                        arguments: json!({}),
                    },
                ],
            }
        );
        assert_eq!(
            record.waiting["c-transfer"].waiting_for,
            WaitingFor::Approval
        );
        assert_eq!(record.waiting["c-book"].waiting_for, WaitingFor::ResumeData);
        assert_eq!(serde_json::to_value(&record).unwrap(), stored());
    }

    #[test]
    fn a_run_saved_when_results_were_kept_as_content_loads_them_as_results() {
        let mut old = stored();
        old["settled"]["c-lookup"] =
            json!({ "tool_name": "lookup", "content": { "balance": 100 }, "is_error": false });
        old["messages"].as_array_mut().unwrap().push(json!({
            "role": "tool_result", "call_id": "c-0", "tool_name": "lookup", "content": "none", "is_error": true
        }));
        let record: RunRecord = serde_json::from_value(old).unwrap();
        assert_eq!(record.settled["c-lookup"].result, json!({ "balance": 100 }));
        assert_eq!(record.settled["c-lookup"].model_output, None);
        assert_eq!(
            record.messages.last(),
            Some(&Message::ToolResult {
                call_id: "c-0".into(),
                tool_name: "lookup".into(),
                result: json!("none"),
                model_output: None,
                is_error: true,
            })
        );
    }

    #[test]
    fn a_run_saved_before_suspensions_and_payloads_were_kept_loads() {
        let mut old = stored();
        old.as_object_mut().unwrap().remove("suspensions");
        for waiting in old["waiting"].as_object_mut().unwrap().values_mut() {
            let waiting = waiting.as_object_mut().unwrap();
            waiting.remove("payload");
            waiting.remove("resume_schema");
        }
        let record: RunRecord = serde_json::from_value(old).unwrap();
        assert!(record.suspensions.is_empty());
        assert_eq!(record.waiting["c-book"].payload, None);
        assert_eq!(record.waiting["c-transfer"].resume_schema, None);
    }

    #[test]
    fn a_run_awaiting_background_tasks_keeps_them_and_an_older_run_loads_without() {
        let record: RunRecord = serde_json::from_value(stored()).unwrap();
        assert!(record.tasks.is_empty(), "saved before tasks were kept");
        let mut awaiting = stored();
        awaiting["tasks"] = json!({
            "c-report": { "tool_name": "report", "task_id": "run-1/c-report" },
            "c-export": {
                "tool_name": "export",
                "task_id": "run-1/c-export",
                "settled": { "tool_name": "export", "result": "exported", "is_error": false }
            }
        });
        let record: RunRecord = serde_json::from_value(awaiting.clone()).unwrap();
        assert_eq!(serde_json::to_value(&record).unwrap(), awaiting);
        let listed: Vec<(String, bool)> = record
            .awaited_tasks()
            .into_iter()
            .map(|task| (task.call_id, task.settled))
            .collect();
        assert_eq!(
            listed,
            [
                ("c-export".to_owned(), true),
                ("c-report".to_owned(), false)
            ]
        );
    }

    #[test]
    fn a_decision_names_a_call_waiting_for_it() {
        let record: RunRecord = serde_json::from_value(stored()).unwrap();
        assert!(
            record
                .expect_waiting("run-1", "c-transfer", &Decision::Approve)
                .is_ok()
        );
        let wrong_kind = record.expect_waiting("run-1", "c-transfer", &Decision::Resume(json!({})));
        let settled = record.expect_waiting("run-1", "c-lookup", &Decision::Approve);
        assert_eq!(
            settled.unwrap_err().to_string(),
            "call \"c-lookup\" is not waiting for approval in run \"run-1\"; waiting: c-book (resume data), c-transfer (approval)"
        );
        assert!(matches!(
            wrong_kind,
            Err(AgentError::NotWaiting {
                expected: "resume data",
                ..
            })
        ));
        // A decline or a response takes a call waiting for approval or for its output.
        assert!(
            record
                .expect_waiting("run-1", "c-transfer", &Decision::Respond(json!(1)))
                .is_ok()
        );
        assert_eq!(
            WaitingFor::needed_by(&Decision::Decline(None)),
            "approval or output"
        );
        assert_eq!(
            WaitingFor::needed_by(&Decision::Resume(json!({}))),
            "resume data"
        );
    }
}
