//! The route table: each method to the module of its family. Params arrive read once
//! ([`Params`]); each family reads the members it needs from them.

use std::sync::Arc;

use super::answer::{page, Answer};
use super::context::{cursor, Ctx, Params};
use super::{completion, discover, listen, prompts, resources, skills, tools, Cause, Outbox};
use crate::core::CancelToken;
use crate::wire::jsonrpc::Request;

/// Routes one checked request to its family. `Err` is an answer found while reading the
/// method's own params.
pub(crate) async fn route(
    ctx: &Ctx,
    request: &Request,
    params: &Params<'_>,
    outbox: &Arc<dyn Outbox>,
    client_cancel: &CancelToken,
) -> Result<Answer, Answer> {
    let caller = &ctx.caller;
    Ok(match request.method.as_str() {
        "server/discover" => discover::discover(ctx),
        "tools/list" => tools::list(ctx, cursor(params)?.as_deref()),
        // The large arms are boxed (issue #23): each request then allocates only its own
        // method's state machine, and the request future that wraps this one (held for a
        // listen stream's whole life) is sized by the small arms, not by the largest.
        "tools/call" => Box::pin(tools::call(ctx, params)).await,
        "resources/list" => page(
            ctx.registry
                .list_resources(caller, cursor(params)?.as_deref())
                .map(|p| super::apps::omit(ctx.server.apps(), p)),
            "resources",
        ),
        "resources/templates/list" => page(
            ctx.registry
                .list_resource_templates(caller, cursor(params)?.as_deref()),
            "resourceTemplates",
        ),
        "prompts/list" => page(
            ctx.registry
                .list_prompts(caller, cursor(params)?.as_deref()),
            "prompts",
        ),
        "resources/read" => Box::pin(resources::read(ctx, params, &request.id)).await?,
        "prompts/get" => Box::pin(prompts::get(ctx, params)).await?,
        "completion/complete" => completion::complete(ctx, params)?,
        crate::wire::tasks::TASKS_GET
        | crate::wire::tasks::TASKS_UPDATE
        | crate::wire::tasks::TASKS_CANCEL => {
            Box::pin(super::tasks::route(ctx, request.method.as_str(), params)).await
        }
        "subscriptions/listen" => {
            listen::listen(ctx, request, params, outbox, client_cancel).await?
        }
        "skills/list" => skills::list(ctx, params)?,
        "skills/get" => skills::get(ctx, params)?,
        "resources/directory/read" => skills::read_directory(ctx, params)?,
        _ => Answer::error(Cause::MethodNotFound, "Method not found"),
    })
}
