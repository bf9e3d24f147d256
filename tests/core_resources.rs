//! Resources, templates, prompts and completion (F-section, G-section, H1, O30–O35).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Access, BuildError, Caller, CompletionRef, CoreError, Invocation, Outcome, Policy, PromptDef,
    PromptError, PromptReply, ReadReply, Registry, RegistryBuilder, ResourceDef, ResourceError,
    TemplateDef, MAX_RESOURCE_SIZE,
};

struct SecretPolicy;
impl Policy for SecretPolicy {
    fn resource(&self, caller: &Caller, uri: &str) -> Access {
        if uri == "mem://big" && caller.principal() == Some("guest") {
            Access::ListOnly
        } else if uri.starts_with("mem://secret") && caller.principal() != Some("root") {
            Access::Hidden
        } else {
            Access::Allowed
        }
    }
    fn prompt(&self, caller: &Caller, name: &str) -> Access {
        if name == "admin" && caller.principal() != Some("root") {
            Access::Hidden
        } else {
            Access::Allowed
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct ReviewArgs {
    /// Programming language.
    language: String,
    /// Optional focus.
    focus: Option<String>,
}

fn registry() -> Registry {
    RegistryBuilder::new()
        .resource(ResourceDef::new(
            "mem://empty",
            "empty",
            |_i: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![
                    ResourceContents::text(uri.clone(), ""),
                    ResourceContents::blob(uri, b""),
                ]))
            },
        ))
        .resource(ResourceDef::new(
            "mem://secret",
            "secret",
            |_i: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "s3cr3t")]))
            },
        ))
        .resource(ResourceDef::new(
            "mem://gone",
            "gone",
            |_i: Invocation, _uri: String| async move { Err(ResourceError::NotFound) },
        ))
        .resource(ResourceDef::new(
            "mem://broken",
            "broken",
            |_i: Invocation, _uri: String| async move {
                Err(ResourceError::Internal { retryable: true })
            },
        ))
        .resource(ResourceDef::new(
            "mem://big",
            "big",
            |_i: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    "x".repeat(200),
                )]))
            },
        ))
        .resource(ResourceDef::new(
            "mem://bundle",
            "bundle",
            |_i: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "part")])
                    .partial("one file was skipped", vec!["mem://bundle/b".to_owned()]))
            },
        ))
        .template(
            TemplateDef::new(
                "mem://notes/{id}/v{rev}",
                "note",
                |_i: Invocation, uri: String, vars: BTreeMap<String, String>| async move {
                    Ok(ReadReply::new(vec![ResourceContents::text(
                        uri,
                        format!("{}@{}", vars["id"], vars["rev"]),
                    )]))
                },
            )
            .complete(
                "id",
                |_c: &Caller, prefix: &str, _ctx: &BTreeMap<String, String>| {
                    (0..150).map(|i| format!("{prefix}{i}")).collect()
                },
            ),
        )
        .prompt(
            PromptDef::typed("review", |_i: Invocation, a: ReviewArgs| async move {
                Ok(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!(
                            "Review {} ({})",
                            a.language,
                            a.focus.unwrap_or_default()
                        )),
                    )],
                })
            })
            .complete(
                "language",
                |_c: &Caller, v: &str, _ctx: &BTreeMap<String, String>| {
                    ["python", "rust", "ruby"]
                        .iter()
                        .filter(|l| l.starts_with(v))
                        .map(|s| (*s).to_owned())
                        .collect()
                },
            ),
        )
        .prompt(PromptDef::new("admin", |_i: Invocation, _a| async move {
            Err::<Outcome<PromptReply>, _>(PromptError::Internal { retryable: false })
        }))
        .policy(SecretPolicy)
        .max_read_bytes(150)
        .build()
        .unwrap()
}

fn inv(who: &str) -> Invocation {
    Invocation::new(Caller::new(who))
}

async fn read(reg: &Registry, who: &str, uri: &str) -> Result<String, CoreError> {
    match reg.read_resource(inv(who), uri).await? {
        Outcome::Complete(r) => Ok(serde_json::to_string(&r).unwrap()),
        Outcome::InputRequired { .. } => panic!("unexpected input request"),
    }
}

#[tokio::test]
async fn f4_o33_empty_text_and_blob_keep_their_field_and_cache_hints() {
    let reg = registry();
    assert_eq!(
        read(&reg, "u", "mem://empty").await.unwrap(),
        r#"{"contents":[{"text":"","uri":"mem://empty"},{"blob":"","uri":"mem://empty"}],"ttlMs":0,"cacheScope":"private"}"#
    );
}

#[tokio::test]
async fn f5_o34_unknown_hidden_notfound_are_identical_32602_with_uri() {
    let reg = registry();
    let expected = |uri: &str| {
        format!(r#"{{"code":-32602,"data":{{"uri":"{uri}"}},"message":"Resource not found"}}"#)
    };
    for uri in ["mem://nope", "mem://secret", "mem://gone"] {
        let err = read(&reg, "u", uri).await.unwrap_err();
        assert_eq!(err.to_error_object().to_string(), expected(uri));
        assert_ne!(err.code(), -32002);
    }
    assert_eq!(
        read(&reg, "root", "mem://secret").await.unwrap(),
        r#"{"contents":[{"text":"s3cr3t","uri":"mem://secret"}],"ttlMs":0,"cacheScope":"private"}"#
    );
    let listed: Vec<String> = reg
        .list_resources(&Caller::new("u"), None)
        .unwrap()
        .items
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(
        listed,
        [
            "mem://big",
            "mem://broken",
            "mem://bundle",
            "mem://empty",
            "mem://gone"
        ]
    );
}

#[tokio::test]
async fn o32_internal_and_too_large() {
    let reg = registry();
    assert_eq!(
        read(&reg, "u", "mem://broken")
            .await
            .unwrap_err()
            .to_error_object()
            .to_string(),
        r#"{"code":-32603,"data":{"retryable":true},"message":"Internal error"}"#
    );
    assert_eq!(
        read(&reg, "u", "mem://big").await.unwrap_err(),
        CoreError::ResourceTooLarge {
            uri: "mem://big".to_owned()
        }
    );
}

#[tokio::test]
async fn o32_partial_bundle_is_a_successful_read_with_report() {
    let reg = registry();
    assert_eq!(
        read(&reg, "u", "mem://bundle").await.unwrap(),
        r#"{"contents":[{"text":"part","uri":"mem://bundle"}],"ttlMs":0,"cacheScope":"private","_meta":{"dev.strict-mcp/partial":{"omitted":["mem://bundle/b"],"warning":"one file was skipped"}}}"#
    );
}

#[tokio::test]
async fn f3_templates_match_and_list() {
    let reg = registry();
    assert_eq!(
        read(&reg, "u", "mem://notes/42/v7").await.unwrap(),
        r#"{"contents":[{"text":"42@7","uri":"mem://notes/42/v7"}],"ttlMs":0,"cacheScope":"private"}"#
    );
    assert!(read(&reg, "u", "mem://notes/4/2/v7").await.is_err());
    assert!(read(&reg, "u", "mem://notes//v7").await.is_err());
    let page = reg
        .list_resource_templates(&Caller::anonymous(), None)
        .unwrap();
    assert_eq!(
        page.to_result("resourceTemplates").get(),
        r#"{"resourceTemplates":[{"name":"note","uriTemplate":"mem://notes/{id}/v{rev}"}],"ttlMs":0,"cacheScope":"private"}"#
    );
}

#[test]
fn f9_bad_uris_and_templates_refused() {
    let r = |uri: &str| {
        RegistryBuilder::new()
            .resource(ResourceDef::new(
                uri,
                "x",
                |_i: Invocation, _u: String| async move { Err(ResourceError::NotFound) },
            ))
            .build()
            .unwrap_err()
    };
    assert_eq!(
        r("no-scheme").to_string(),
        "resource `no-scheme`: missing URI scheme"
    );
    assert_eq!(
        r("1x:/a").to_string(),
        "resource `1x:/a`: invalid URI scheme (RFC 3986)"
    );
    assert_eq!(
        r("mem://a b").to_string(),
        "resource `mem://a b`: whitespace or control characters in URI"
    );
    let t = |tpl: &str| {
        RegistryBuilder::new()
            .template(TemplateDef::new(
                tpl,
                "x",
                |_i: Invocation, _u: String, _v: BTreeMap<String, String>| async move {
                    Err(ResourceError::NotFound)
                },
            ))
            .build()
            .unwrap_err()
    };
    assert!(matches!(t("mem://{+path}"), BuildError::Resource { .. }));
    assert!(matches!(t("mem://{a}{b}"), BuildError::Resource { .. }));
    assert!(matches!(t("mem://static"), BuildError::Resource { .. }));
}

/// The generated `Resource` holds `size` as `i64` (the schema's integer, what the client
/// decodes into): a `u64` size up to `MAX_RESOURCE_SIZE` is listed exactly, one past it is a
/// typed registration error rather than a wrapped negative size.
#[test]
fn o87_f11_resource_size_is_listed_up_to_its_bound_and_refused_one_past() {
    let with_size = |size: u64| {
        RegistryBuilder::new()
            .resource(
                ResourceDef::new(
                    "mem://huge",
                    "huge",
                    |_i: Invocation, _u: String| async move { Err(ResourceError::NotFound) },
                )
                .size(size),
            )
            .build()
    };
    assert_eq!(MAX_RESOURCE_SIZE, 9_223_372_036_854_775_807);
    let reg = with_size(MAX_RESOURCE_SIZE).unwrap();
    let page = reg.list_resources(&Caller::new("u"), None).unwrap();
    assert_eq!(
        serde_json::to_string(&page.items).unwrap(),
        r#"[{"name":"huge","size":9223372036854775807,"uri":"mem://huge"}]"#
    );
    let past = with_size(MAX_RESOURCE_SIZE + 1).unwrap_err();
    assert_eq!(
        past,
        BuildError::Resource {
            uri: "mem://huge".to_owned(),
            reason: "size 9223372036854775808 is past 9223372036854775807 (the schema's integer)"
                .to_owned(),
        }
    );
    assert_eq!(
        with_size(u64::MAX).unwrap_err().to_string(),
        "resource `mem://huge`: size 18446744073709551615 is past 9223372036854775807 (the schema's integer)"
    );
    // Zero is a size (present on the wire), not an absent one.
    let zero = with_size(0).unwrap();
    let page = zero.list_resources(&Caller::new("u"), None).unwrap();
    assert_eq!(page.items[0].size, Some(0));
}

#[tokio::test]
async fn g3_g5_typed_prompt_arguments() {
    let reg = registry();
    let list: serde_json::Value = serde_json::from_str(
        reg.list_prompts(&Caller::anonymous(), None)
            .unwrap()
            .to_result("prompts")
            .get(),
    )
    .unwrap();
    assert_eq!(
        list["prompts"],
        json!([{"name":"review","arguments":[
            {"name":"focus","description":"Optional focus.","required":false},
            {"name":"language","description":"Programming language.","required":true}]}])
    );
    let mut args = BTreeMap::new();
    args.insert("language".to_owned(), "rust".to_owned());
    let reply = reg
        .get_prompt(inv("u"), "review", args.clone())
        .await
        .unwrap();
    match reply {
        Outcome::Complete(r) => assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"messages":[{"content":{"text":"Review rust ()","type":"text"},"role":"user"}]}"#
        ),
        Outcome::InputRequired { .. } => panic!(),
    }
    let missing = reg
        .get_prompt(inv("u"), "review", BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Invalid params: missing required argument `language`"
    );
    args.insert("extra".to_owned(), "1".to_owned());
    let extra = reg.get_prompt(inv("u"), "review", args).await.unwrap_err();
    assert_eq!(
        extra.to_string(),
        "Invalid params: unknown argument `extra`"
    );
    let hidden = reg
        .get_prompt(inv("u"), "admin", BTreeMap::new())
        .await
        .unwrap_err();
    let unknown = reg
        .get_prompt(inv("u"), "nimda", BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(hidden.code(), -32602);
    assert_eq!(
        hidden.to_string().replace("admin", "N"),
        unknown.to_string().replace("nimda", "N")
    );
    let internal = reg
        .get_prompt(inv("root"), "admin", BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(internal.code(), -32603);
}

#[test]
fn g10_completion_for_prompts_and_templates() {
    let reg = registry();
    let c = Caller::anonymous();
    let ctx = BTreeMap::new();
    let p = CompletionRef::Prompt {
        name: "review".to_owned(),
    };
    let r = reg.complete(&c, &p, "language", "r", &ctx).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"values":["rust","ruby"]}"#
    );
    let r = reg.complete(&c, &p, "focus", "", &ctx).unwrap();
    assert_eq!(r.values, Vec::<String>::new());
    assert_eq!(
        reg.complete(&c, &p, "nope", "", &ctx).unwrap_err().code(),
        -32602
    );
    let t = CompletionRef::Resource {
        uri: "mem://notes/{id}/v{rev}".to_owned(),
    };
    let r = reg.complete(&c, &t, "id", "n", &ctx).unwrap();
    assert_eq!(r.values.len(), 100);
    assert_eq!(r.values[0], "n0");
    assert_eq!(r.total, Some(150));
    assert_eq!(r.has_more, Some(true));
    let unknown = CompletionRef::Resource {
        uri: "mem://x/{y}".to_owned(),
    };
    assert_eq!(
        reg.complete(&c, &unknown, "y", "", &ctx)
            .unwrap_err()
            .code(),
        -32602
    );
    let hidden = CompletionRef::Prompt {
        name: "admin".to_owned(),
    };
    assert_eq!(
        reg.complete(&c, &hidden, "x", "", &ctx).unwrap_err(),
        CoreError::UnknownPrompt {
            name: "admin".to_owned()
        }
    );
}

#[derive(Deserialize, JsonSchema)]
struct BadPromptArgs {
    #[allow(dead_code)]
    count: u32,
}

#[test]
fn g4_prompt_arguments_must_be_strings() {
    let p = PromptDef::typed("bad", |_i: Invocation, _a: BadPromptArgs| async move {
        Ok(PromptReply {
            description: None,
            messages: vec![],
        })
    });
    assert_eq!(
        RegistryBuilder::new()
            .prompt(p)
            .build()
            .unwrap_err()
            .to_string(),
        "prompt arguments `bad`: argument `count` must be a string"
    );
}

#[tokio::test]
async fn list_only_resource_is_listed_but_not_read() {
    let reg = registry();
    let listed: Vec<String> = reg
        .list_resources(&Caller::new("guest"), None)
        .unwrap()
        .items
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert!(listed.contains(&"mem://big".to_owned()));
    assert_eq!(
        read(&reg, "guest", "mem://big")
            .await
            .unwrap_err()
            .to_error_object()
            .to_string(),
        r#"{"code":-32602,"message":"Invalid params: Resource access denied"}"#
    );
}
