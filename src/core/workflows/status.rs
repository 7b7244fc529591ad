//! Where an execution stands ([`ExecutionStatus`]) and where each step it ran stands
//! ([`RunStatus`]), by the names the rows keep and the API shows.

use crate::db::executions::{Execution, StepRun};

/// Every execution status's name, as the list's filter accepts them.
pub const STATUSES: [&str; 6] = [
    ExecutionStatus::Running.as_str(),
    ExecutionStatus::Waiting.as_str(),
    ExecutionStatus::Completed.as_str(),
    ExecutionStatus::Exited.as_str(),
    ExecutionStatus::Failed.as_str(),
    ExecutionStatus::Cancelled.as_str(),
];

/// Where an execution stands: RUNNING (due at a step) and WAITING (a DELAY or a WAIT_FOR_EVENT)
/// are active; the rest are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionStatus {
    Running,
    Waiting,
    Completed,
    /// Ended by an EXIT step.
    Exited,
    Failed,
    Cancelled,
}

impl ExecutionStatus {
    pub const ALL: [ExecutionStatus; 6] =
        [Self::Running, Self::Waiting, Self::Completed, Self::Exited, Self::Failed, Self::Cancelled];

    /// The name stored and shown: `RUNNING`, `WAITING`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "RUNNING",
            Self::Waiting => "WAITING",
            Self::Completed => "COMPLETED",
            Self::Exited => "EXITED",
            Self::Failed => "FAILED",
            Self::Cancelled => "CANCELLED",
        }
    }

    /// The status of a stored execution; `None` for a name no version wrote.
    pub fn of(ex: &Execution) -> Option<ExecutionStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == ex.status)
    }

    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Waiting)
    }

    /// Sets `ex`'s status.
    pub fn set(self, ex: &mut Execution) {
        ex.status = self.as_str().to_string();
    }
}

/// Whether a stored execution is not over yet.
pub fn is_active(ex: &Execution) -> bool {
    ExecutionStatus::of(ex).is_some_and(ExecutionStatus::is_active)
}

/// Where one step run stands: RUNNING (a webhook's call under way) and WAITING are open; the
/// rest are closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Waiting,
    Completed,
    Failed,
    Skipped,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] =
        [Self::Running, Self::Waiting, Self::Completed, Self::Failed, Self::Skipped];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "RUNNING",
            Self::Waiting => "WAITING",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Skipped => "SKIPPED",
        }
    }

    pub fn of(run: &StepRun) -> Option<RunStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == run.status)
    }

    pub fn is_open(self) -> bool {
        matches!(self, Self::Running | Self::Waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_back_as_they_are_stored() {
        for status in ExecutionStatus::ALL {
            let mut ex = Execution::default();
            status.set(&mut ex);
            assert_eq!(ExecutionStatus::of(&ex), Some(status));
            assert_eq!(is_active(&ex), matches!(status, ExecutionStatus::Running | ExecutionStatus::Waiting));
        }
        let unknown = Execution { status: "PAUSED".into(), ..Execution::default() };
        assert_eq!(ExecutionStatus::of(&unknown), None);
        assert!(!is_active(&unknown));
        for status in RunStatus::ALL {
            let run = StepRun { status: status.as_str().into(), ..StepRun::default() };
            assert_eq!(RunStatus::of(&run), Some(status));
        }
    }
}
