//! Read and prompt time-outs in the core: per-item overrides are recorded and checked at build
//! time, looked up by the server, and the errors the server answers with have exact wire
//! shapes (O32, O33, G5). Cancellation reaches read and prompt handlers (C9, J9). The core has
//! no timer: it only observes the cancellation token.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{
    BuildError, Caller, CancelToken, CoreError, Invocation, Outcome, PromptDef, PromptError,
    PromptReply, ReadReply, RegistryBuilder, ResourceDef, ResourceError, TemplateDef, MAX_TIMEOUT,
    MIN_TIMEOUT,
};

fn text(uri: String) -> Result<ReadReply, ResourceError> {
    Ok(ReadReply::new(vec![ResourceContents::text(uri, "x")]))
}

fn resource(uri: &str) -> ResourceDef {
    ResourceDef::new(
        uri,
        "r",
        |_i: Invocation, uri: String| async move { text(uri) },
    )
}

fn template(t: &str) -> TemplateDef {
    TemplateDef::new(t, "t", |_i: Invocation, uri: String, _v| async move {
        text(uri)
    })
}

fn prompt(name: &str) -> PromptDef {
    PromptDef::new(name, |_i: Invocation, _a| async move {
        Ok(Outcome::Complete(PromptReply {
            description: None,
            messages: Vec::new(),
        }))
    })
}

#[test]
fn o33_bounds_are_one_millisecond_to_one_hour() {
    assert_eq!(MIN_TIMEOUT, Duration::from_millis(1));
    assert_eq!(MAX_TIMEOUT, Duration::from_secs(3600));
}

#[test]
fn o33_out_of_range_overrides_are_build_errors_naming_the_item() {
    let too_long = MAX_TIMEOUT + Duration::from_nanos(1);
    let cases: Vec<(RegistryBuilder, &str)> = vec![
        (
            RegistryBuilder::new().resource(resource("mem://a").timeout(Duration::ZERO)),
            "resource `mem://a`: time-out 0ns is outside 1 ms ..= 1 h",
        ),
        (
            RegistryBuilder::new()
                .resource(resource("mem://a").timeout(Duration::from_micros(999))),
            "resource `mem://a`: time-out 999µs is outside 1 ms ..= 1 h",
        ),
        (
            RegistryBuilder::new().template(template("mem://n/{id}").timeout(too_long)),
            "resource template `mem://n/{id}`: time-out 3600.000000001s is outside 1 ms ..= 1 h",
        ),
        (
            RegistryBuilder::new().prompt(prompt("p").timeout(Duration::ZERO)),
            "prompt `p`: time-out 0ns is outside 1 ms ..= 1 h",
        ),
    ];
    for (builder, message) in cases {
        let err = builder.build().unwrap_err();
        assert!(matches!(err, BuildError::InvalidTimeout { .. }), "{err:?}");
        assert_eq!(err.to_string(), message);
    }
    // Both ends of the range are accepted.
    RegistryBuilder::new()
        .resource(resource("mem://a").timeout(MIN_TIMEOUT))
        .resource(resource("mem://b").timeout(MAX_TIMEOUT))
        .build()
        .unwrap();
}

#[test]
fn o33_overrides_are_looked_up_like_the_read_dispatches() {
    let registry = RegistryBuilder::new()
        .resource(resource("mem://notes/fixed").timeout(Duration::from_millis(7)))
        .template(template("mem://notes/{id}").timeout(Duration::from_millis(9)))
        .template(template("mem://plain/{id}"))
        .prompt(prompt("slow").timeout(Duration::from_secs(2)))
        .prompt(prompt("fast"))
        .build()
        .unwrap();
    // The static resource wins over the template that also matches.
    assert_eq!(
        registry.read_timeout("mem://notes/fixed"),
        Some(Duration::from_millis(7))
    );
    assert_eq!(
        registry.read_timeout("mem://notes/3"),
        Some(Duration::from_millis(9))
    );
    assert_eq!(registry.read_timeout("mem://plain/3"), None);
    assert_eq!(registry.read_timeout("mem://unknown"), None);
    assert_eq!(
        registry.prompt_timeout("slow"),
        Some(Duration::from_secs(2))
    );
    assert_eq!(registry.prompt_timeout("fast"), None);
    assert_eq!(registry.prompt_timeout("nope"), None);
}

#[test]
fn o32_o33_timeout_and_cancellation_errors_have_exact_wire_shapes() {
    let cases = [
        (
            CoreError::ReadTimedOut {
                uri: "mem://slow".into(),
            },
            r#"{"code":-32603,"data":{"retryable":true,"uri":"mem://slow"},"message":"Resource read timed out"}"#,
        ),
        (
            CoreError::PromptTimedOut { name: "p".into() },
            r#"{"code":-32603,"data":{"name":"p","retryable":true},"message":"Prompt timed out"}"#,
        ),
        (
            CoreError::Cancelled,
            r#"{"code":-32603,"data":{"retryable":true},"message":"Request cancelled"}"#,
        ),
    ];
    for (error, wire) in cases {
        assert_eq!(error.to_error_object().to_string(), wire);
    }
}

/// A read handler that waits for its cancellation, then records that it saw it.
fn waiting_resource(seen: Arc<AtomicBool>) -> ResourceDef {
    ResourceDef::new(
        "mem://wait",
        "wait",
        move |inv: Invocation, _uri: String| {
            let seen = Arc::clone(&seen);
            async move {
                inv.cancelled().await;
                seen.store(true, Ordering::SeqCst);
                Err(ResourceError::Internal { retryable: true })
            }
        },
    )
}

#[test]
fn c9_a_read_handler_observes_the_requests_token() {
    let seen = Arc::new(AtomicBool::new(false));
    let registry = RegistryBuilder::new()
        .resource(waiting_resource(Arc::clone(&seen)))
        .build()
        .unwrap();
    let token = CancelToken::new();
    let inv = Invocation::new(Caller::anonymous()).with_cancel(token.clone());
    let mut read = Box::pin(registry.read_resource(inv, "mem://wait"));
    assert!(
        (&mut read).now_or_never().is_none(),
        "waits for cancellation"
    );
    assert!(!seen.load(Ordering::SeqCst));
    token.cancel();
    // The handler saw the cancellation and its own answer is the read's result.
    let result = read.now_or_never().expect("ends once cancelled");
    assert_eq!(result.unwrap_err(), CoreError::Internal { retryable: true });
    assert!(seen.load(Ordering::SeqCst));
}

#[test]
fn c9_a_running_read_or_prompt_is_not_abandoned_and_a_cancelled_one_does_not_start() {
    let registry = RegistryBuilder::new()
        .resource(ResourceDef::new(
            "mem://stuck",
            "stuck",
            |_i: Invocation, _u: String| std::future::pending::<Result<ReadReply, ResourceError>>(),
        ))
        .prompt(PromptDef::new("stuck", |_i: Invocation, _a| {
            std::future::pending::<Result<Outcome<PromptReply>, PromptError>>()
        }))
        .build()
        .unwrap();
    let token = CancelToken::new();
    let inv = || Invocation::new(Caller::anonymous()).with_cancel(token.clone());
    let mut read = Box::pin(registry.read_resource(inv(), "mem://stuck"));
    let mut get = Box::pin(registry.get_prompt(inv(), "stuck", BTreeMap::new()));
    assert!((&mut read).now_or_never().is_none());
    assert!((&mut get).now_or_never().is_none());
    token.cancel();
    // The handler decides how to stop; the server's time-out bounds one that never does.
    assert!((&mut read).now_or_never().is_none());
    assert!((&mut get).now_or_never().is_none());
    // Already cancelled: the handler is not started at all.
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let registry = RegistryBuilder::new()
        .resource(ResourceDef::new(
            "mem://a",
            "a",
            move |_i: Invocation, uri: String| {
                flag.store(true, Ordering::SeqCst);
                async move { text(uri) }
            },
        ))
        .prompt(prompt("p"))
        .build()
        .unwrap();
    let result = registry
        .read_resource(inv(), "mem://a")
        .now_or_never()
        .unwrap();
    assert_eq!(result.unwrap_err(), CoreError::Cancelled);
    assert!(!ran.load(Ordering::SeqCst));
    let result = registry
        .get_prompt(inv(), "p", BTreeMap::new())
        .now_or_never()
        .unwrap();
    assert_eq!(result.unwrap_err(), CoreError::Cancelled);
}

#[test]
fn o33_builders_record_their_override() {
    assert_eq!(resource("mem://a").timeout_override(), None);
    assert_eq!(
        resource("mem://a")
            .timeout(Duration::from_millis(5))
            .timeout_override(),
        Some(Duration::from_millis(5))
    );
    assert_eq!(
        template("mem://n/{id}")
            .timeout(Duration::from_millis(6))
            .timeout_override(),
        Some(Duration::from_millis(6))
    );
    assert_eq!(
        prompt("p")
            .timeout(Duration::from_millis(7))
            .timeout_override(),
        Some(Duration::from_millis(7))
    );
}
