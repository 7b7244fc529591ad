//! Which workflow caused an event: the one whose step is running on this thread when the event
//! is emitted (in the step's transaction), or for an email's events, the workflow that sent the
//! email. The loop caps ([`super::start`]) count the starts an event of a workflow causes.

use serde_json::Value;

thread_local! {
    /// The workflow whose step is running on this thread: events emitted meanwhile (in the
    /// step's transaction) were emitted by it.
    static STEP_OF: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Marks this thread as running a step of `workflow` until dropped.
pub struct StepScope(Option<String>);

impl StepScope {
    pub fn enter(workflow: &str) -> StepScope {
        StepScope(STEP_OF.with(|s| s.replace(Some(workflow.to_string()))))
    }
}

impl Drop for StepScope {
    fn drop(&mut self) {
        let before = self.0.take();
        STEP_OF.with(|s| *s.borrow_mut() = before);
    }
}

/// The workflow that emitted event `name`: the one whose step is running, or for the events of
/// an email, the workflow that sent it (`email.*` names are reserved to the service, so their
/// `workflowId` is the service's own).
pub fn cause_of(name: &str, data: &Value) -> Option<String> {
    STEP_OF.with(|s| s.borrow().clone()).or_else(|| {
        name.starts_with("email.").then(|| data["workflowId"].as_str().map(str::to_string)).flatten()
    })
}
