//! The protected server's catalogue shared by the auth tests (`server_auth`,
//! `auth_end_to_end`): `whoami`, which shows the verified caller a tool sees, and `greet`, an
//! MRTR prompt whose continuation is bound to the token's subject (D36, I6).
#![cfg(feature = "auth")]
#![allow(dead_code)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, Role};
use strict_mcp::core::{Invocation, Outcome, PromptDef, PromptReply, ToolDef};
use strict_mcp::server::auth::CALLER_SCOPE;

/// A tool input with no arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Empty {}

/// What `whoami` answers.
#[derive(serde::Serialize, JsonSchema)]
pub struct WhoAmI {
    /// The caller's principal id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The caller's granted scopes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `whoami`: the caller's principal and granted scopes, as the protected server hands them on.
pub fn whoami() -> ToolDef {
    ToolDef::typed("whoami", |inv: Invocation, _i: Empty| async move {
        Ok(WhoAmI {
            principal: inv.caller().principal().map(str::to_owned),
            scope: inv.caller().attribute(CALLER_SCOPE).map(str::to_owned),
        })
    })
}

/// `greet`: the first round asks for a name by form elicitation; the second renders one user
/// message, `text(answer, invocation)` of the client's answer to `name`.
pub fn greet(text: fn(&RawValue, &Invocation) -> String) -> PromptDef {
    PromptDef::new(
        "greet",
        move |inv: Invocation, _args: BTreeMap<String, String>| async move {
            let Some(answer) = inv.input_response("name") else {
                let ask = inv.elicit_form(
                    "Whom to greet?",
                    json!({"type":"object","properties":{"name":{"type":"string"}}}),
                )?;
                return Ok(Outcome::input("name", ask));
            };
            Ok(Outcome::Complete(PromptReply {
                description: None,
                messages: vec![PromptMessage::new(
                    Role::User,
                    ContentBlock::text(text(answer, &inv)),
                )],
            }))
        },
    )
}
