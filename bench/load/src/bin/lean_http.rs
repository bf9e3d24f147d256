//! The lean HTTP floor (issue #23): what an HTTP JSON-RPC echo costs with nothing to spare.
//! hyper's HTTP/1.1 server connection only (no HTTP/2 sniffing, no auto builder), a
//! current-thread tokio runtime (no work stealing, no cross-thread wake-ups), serde_json for
//! the body both ways. It answers exactly what `bare_http` answers (`tools/call` echo, the
//! minimal `server/discover` result, `202` for a notification), and exits after
//! `MAX_SECONDS` like the other servers. Run by `run.sh` as server `lean`; every HTTP ratio
//! is taken against the faster (lower CPU per request) of `bare` and `lean` in the same run.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let reply = if msg["method"].as_str() == Some(strict_mcp_load::DISCOVER) {
        json!({ "jsonrpc": "2.0", "id": msg["id"], "result": strict_mcp_load::discover_result() })
    } else if msg.get("id").is_none() {
        return Ok(status(StatusCode::ACCEPTED));
    } else {
        let text = msg["params"]["arguments"]["text"]
            .as_str()
            .unwrap_or_default();
        json!({
            "jsonrpc": "2.0",
            "id": msg["id"],
            "result": { "content": [ { "type": "text", "text": text } ] }
        })
    };
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

fn main() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = strict_mcp_load::bind_loopback().await?;
        let stop = strict_mcp_load::lifetime_over();
        tokio::pin!(stop);
        loop {
            let (stream, _) = tokio::select! {
                () = &mut stop => return Ok(()),
                accepted = listener.accept() => accepted?,
            };
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(handle))
                    .await;
            });
        }
    })
}
