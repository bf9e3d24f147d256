//! The `echo` server written against rmcp's public `ServerHandler` API, shared by
//! `rmcp_http` and `rmcp_stdio`.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// One tool, `echo`, that sends its `text` argument back as text content.
#[derive(Debug, Clone, Default)]
pub struct Echo;

const SUPPORTED: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

fn echo_tool() -> Tool {
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    });
    let serde_json::Value::Object(schema) = schema else {
        unreachable!("literal object")
    };
    Tool::new("echo", "Sends the given text back.", Arc::new(schema))
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}
