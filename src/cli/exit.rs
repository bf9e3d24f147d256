//! The exit-code table: one code per outcome class, so scripts can branch on the class
//! without parsing output.

use crate::client::{ClientError, ConnectError, TaskError};

/// How a run ended; `as i32` is the process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The request completed successfully.
    Success = 0,
    /// The tool ran and reported its own failure (`isError: true`).
    ToolError = 1,
    /// The command line (or an argument file) was not usable; nothing was sent for it.
    Usage = 2,
    /// The transport failed, the server could not be started, or no reply came in time.
    Transport = 3,
    /// The server answered with a JSON-RPC / MCP error, or does not speak 2026-07-28.
    Protocol = 4,
    /// The server's answer was invalid or of an unrecognised result type.
    InvalidResult = 5,
    /// The server needs input the run could not supply.
    InputRequired = 6,
    /// `check` found a rule that does not hold.
    CheckFailed = 7,
    /// A waited-for task ended cancelled.
    TaskCancelled = 8,
    /// A waited-for task was still running when the wait (or the task's TTL) ran out.
    TaskPending = 9,
    /// Interrupted (Ctrl-C); the call was cancelled and the server shut down.
    Interrupted = 130,
}

impl Exit {
    /// The process exit status.
    #[must_use]
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The class of a client error.
    #[must_use]
    pub fn of(error: &ClientError) -> Exit {
        match error {
            ClientError::Transport(_) | ClientError::Deadline { .. } => Exit::Transport,
            ClientError::Rpc(_) | ClientError::HeaderMismatchRefresh { .. } => Exit::Protocol,
            ClientError::Invalid(_) | ClientError::Pagination(_) | ClientError::Skill(_) => {
                Exit::InvalidResult
            }
            ClientError::InputRequired(_)
            | ClientError::TooManyRounds { .. }
            | ClientError::Declined(_) => Exit::InputRequired,
            ClientError::ToolFailed(_) => Exit::ToolError,
            ClientError::Request(_) => Exit::Usage,
        }
    }

    /// The class of a failed task request or wait.
    #[must_use]
    pub fn of_task(error: &TaskError) -> Exit {
        match error {
            TaskError::UnknownTask { .. } | TaskError::NotNegotiated(_) => Exit::Protocol,
            TaskError::WaitDeadline { .. } | TaskError::TtlExpired { .. } => Exit::TaskPending,
            TaskError::Invalid { .. } => Exit::InvalidResult,
            TaskError::Client(e) => Exit::of(e),
        }
    }

    /// The class of a failed connection (discovery).
    #[must_use]
    pub fn of_connect(error: &ConnectError) -> Exit {
        match error {
            ConnectError::Discover(e) => Exit::of(e),
            _ => Exit::Protocol,
        }
    }
}
