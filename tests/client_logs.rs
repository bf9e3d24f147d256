//! J14: the client logs why it cancels a request. Its own binary, so the global subscriber
//! installed here sees every call site (tracing caches call-site interest process-wide);
//! `cli` brings `tracing-subscriber`.
#![forbid(unsafe_code)]
#![cfg(all(feature = "client", feature = "cli"))]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, Inbound, Transport, TransportError,
};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::wire::jsonrpc::Message;
use support::logs::Layout;
use tokio::sync::mpsc;

/// A server that discovers and never answers anything else; it keeps what it was sent.
struct Silent {
    sent: Mutex<Vec<Message>>,
    tx: mpsc::UnboundedSender<Inbound>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Inbound>>,
}

const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}"#;

impl Transport for Silent {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            self.sent.lock().unwrap().push(message.clone());
            if let Message::Request(r) = message {
                if r.method == "server/discover" {
                    let line = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{DISCOVER}}}"#,
                        r.id.token()
                    );
                    let m = decode(line.as_bytes(), &IngressLimits::CLIENT).unwrap();
                    let _ = self.tx.send(Inbound::Message(m));
                }
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            self.rx
                .lock()
                .await
                .recv()
                .await
                .ok_or(TransportError::Closed)
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn j14_a_cancelled_request_is_logged_with_its_id_and_reason() {
    let logs = support::logs::capture(tracing::Level::DEBUG, Layout::Bare);
    let (tx, rx) = mpsc::unbounded_channel();
    let silent = Arc::new(Silent {
        sent: Mutex::new(Vec::new()),
        tx,
        rx: tokio::sync::Mutex::new(rx),
    });
    let client = Client::connect(silent.clone(), ClientOptions::default())
        .await
        .expect("connect");
    let options = CallOptions::default().deadline(Duration::from_millis(50));
    let err = client.call("slow", None, &options).await.unwrap_err();
    assert!(matches!(err, ClientError::Deadline { .. }), "{err:?}");
    // The notice goes out in the background: wait (bounded, at least 20 s: only a hang
    // stopper) until it was sent.
    for _ in 0..2000 {
        if silent.sent.lock().unwrap().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = silent.sent.lock().unwrap().clone();
    let Some(Message::Notification(n)) = sent.get(2) else {
        panic!("no cancellation sent: {sent:?}");
    };
    assert_eq!(n.method, "notifications/cancelled");
    let Message::Request(call) = &sent[1] else {
        panic!("{sent:?}")
    };
    let text = logs.text();
    let line = format!(
        "DEBUG cancelling a request id={} reason=\"the caller stopped waiting (deadline passed or call dropped)\"\n",
        call.id.token()
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("cancelling a request"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        line,
        "{text}"
    );
}
