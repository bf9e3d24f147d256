//! The outbox of one rewritten legacy request: notifications pass as they are (progress,
//! `notifications/message` and `notifications/cancelled` have the same shape in both eras);
//! the reply is rewritten into the legacy shape ([`super::translate::to_legacy`]).

use std::sync::Arc;

use super::translate::{to_legacy, Original};
use crate::machine::subscriptions::Transport;
use crate::server::{Outbox, Reply};

/// The HTTP status of every reply to a request the legacy session accepted.
pub(crate) const LEGACY_REPLY_STATUS: u16 = 200;

/// Wraps the host's outbox for one legacy request.
pub(crate) struct LegacyOutbox {
    inner: Arc<dyn Outbox>,
    original: Original,
}

impl LegacyOutbox {
    pub(crate) fn new(inner: Arc<dyn Outbox>, original: Original) -> Self {
        LegacyOutbox { inner, original }
    }
}

impl Outbox for LegacyOutbox {
    fn notify(&self, line: String) -> bool {
        self.inner.notify(line)
    }

    fn finish(&self, reply: Reply) {
        let line = to_legacy(&self.original, &reply.line);
        // A JSON-RPC error to an accepted legacy request travels in a 200 response: on the
        // 2025 HTTP transport a 404 means the session is gone (the client would start over)
        // and a 400 means the message itself was not accepted. stdio ignores the status.
        self.inner.finish(Reply {
            line,
            status: LEGACY_REPLY_STATUS,
        });
    }

    fn transport(&self) -> Transport {
        self.inner.transport()
    }
    fn admitted(&self) {
        self.inner.admitted();
    }
}
