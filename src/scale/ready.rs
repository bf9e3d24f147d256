//! [`Readiness`]: the probe a balancer sends to decide whether an instance gets traffic.
//!
//! An instance is ready while its server is serving *and* its continuation store answers: an
//! instance whose store is down could only answer `state_unavailable` to every resume, so the
//! balancer should send those requests to a sibling. It is not ready while draining (after
//! [`Server::shutdown`] began), so the balancer stops routing to it before it stops.
//!
//! The store is probed with a `load` of one fixed chain id that no chain ever has in practice
//! (ids are 128 random bits), bounded by [`Readiness::probe_timeout`]: a store that does not
//! answer in time is "not ready", never a hung probe. Any answer (found or absent) is "the
//! store answers".
//!
//! Answers are `200 ready`, or `503` with a one-word reason (`draining`, `stopped`,
//! `store-unavailable`, `store-timeout`), `text/plain`, `cache-control: no-store`. The service
//! answers every request it is given the same way: mount it on the probe path (for example
//! `GET /ready`) in front of the MCP endpoint.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::core::store::{LedgerStore, StoreError};
use crate::machine::ledger::ChainId;
use crate::server::{Server, ServerPhase};

/// Default bound of one store probe: well under the usual balancer probe time-out (nginx and
/// HAProxy default to a few seconds), so the balancer always gets an answer from us.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The chain id the probe loads. Chain ids are 128 random bits, so no real chain has it; the
/// load only proves the store answers.
pub const PROBE_CHAIN: ChainId = ChainId([0; 16]);

/// Why an instance is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// Shutdown began: calls drain, nothing new should arrive.
    Draining,
    /// The server stopped (or its cleanup failed).
    Stopped,
    /// The store answered with a failure.
    StoreUnavailable,
    /// The store did not answer within the probe time-out (or its own operation time-out).
    StoreTimeout,
}

impl NotReady {
    /// The one-word reason in the 503 body.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            NotReady::Draining => "draining",
            NotReady::Stopped => "stopped",
            NotReady::StoreUnavailable => "store-unavailable",
            NotReady::StoreTimeout => "store-timeout",
        }
    }
}

/// The readiness probe of one instance; cheap to clone. See the module docs.
#[derive(Clone)]
pub struct Readiness {
    server: Server,
    store: Arc<dyn LedgerStore>,
    probe_timeout: Duration,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("probe_timeout", &self.probe_timeout)
            .finish_non_exhaustive()
    }
}

impl Readiness {
    /// A probe of `server` and the store it was given (`ServerOptions::ledger_store`).
    #[must_use]
    pub fn new(server: Server, store: Arc<dyn LedgerStore>) -> Readiness {
        Readiness {
            server,
            store,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
        }
    }

    /// Overrides the bound of one store probe ([`DEFAULT_PROBE_TIMEOUT`]).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Readiness {
        self.probe_timeout = timeout;
        self
    }

    /// Serving and the store answers: `Ok`; otherwise why not. The server's phase is read
    /// first, so a draining instance never waits on its store.
    pub async fn check(&self) -> Result<(), NotReady> {
        match self.server.status().phase {
            ServerPhase::Serving => {}
            ServerPhase::Draining => return Err(NotReady::Draining),
            ServerPhase::Stopped | ServerPhase::CleanupFailed => return Err(NotReady::Stopped),
        }
        match tokio::time::timeout(self.probe_timeout, self.store.load(PROBE_CHAIN)).await {
            Err(_) | Ok(Err(StoreError::Timeout(_))) => Err(NotReady::StoreTimeout),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readiness: the ledger store failed");
                Err(NotReady::StoreUnavailable)
            }
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// The HTTP answer of [`Readiness::check`].
    pub async fn respond(&self) -> Response<Full<Bytes>> {
        let (status, body) = match self.check().await {
            Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
            Err(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{}\n", why.as_str()),
            ),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send>>;

impl<B> tower::Service<Request<B>> for Readiness {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<B>) -> Answer {
        let probe = self.clone();
        Box::pin(async move { Ok(probe.respond().await) })
    }
}

impl<B> hyper::service::Service<Request<B>> for Readiness {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, _request: Request<B>) -> Answer {
        let probe = self.clone();
        Box::pin(async move { Ok(probe.respond().await) })
    }
}
