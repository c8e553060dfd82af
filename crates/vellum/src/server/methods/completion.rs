//! `completion/complete`: checks that the reference and argument exist, then asks the
//! completer of that argument (or the server's completion handler) and sends at most 100
//! candidates.
//!
//! Not here: registering completers (`registry/registration.rs`).

use std::sync::Arc;

use crate::protocol::{CompleteParams, CompleteResult, CompletionReference, ErrorObject, methods};
use crate::server::handler_error::Served;
use crate::server::registry::prompt::completer_key;
use crate::server::request::context::RequestContext;
use crate::server::request::reply::{Outcome, complete as complete_result, failure};
use crate::server::request::request::RequestShared;

/// The most candidates one answer carries.
const MAX_VALUES: usize = 100;

/// `completion/complete`.
pub(super) async fn complete(
    shared: &Arc<RequestShared>,
    p: CompleteParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta.clone());
    let handler = {
        let reg = shared.server.registry().read();
        if reg.completion.is_none() && reg.completers.is_empty() {
            return Err(ErrorObject::method_not_found(methods::COMPLETION_COMPLETE));
        }
        match &p.reference {
            CompletionReference::Prompt { name, .. } => {
                let Some(prompt) = reg.prompts.get(name) else {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown prompt: {name}"
                    )));
                };
                let known = prompt
                    .prompt
                    .arguments
                    .iter()
                    .flatten()
                    .any(|a| a.name == p.argument.name);
                if !known {
                    return Err(ErrorObject::invalid_params(format!(
                        "Prompt {name} has no argument {}",
                        p.argument.name
                    )));
                }
            }
            CompletionReference::Resource { uri } => {
                if !reg.templates.contains_key(uri) && !reg.resources.contains_key(uri) {
                    return Err(ErrorObject::invalid_params(format!(
                        "Unknown resource template: {uri}"
                    )));
                }
            }
        }
        let key = completer_key(&p.reference, &p.argument.name);
        match reg.completers.get(&key).or(reg.completion.as_ref()) {
            Some(h) => h.clone(),
            // Nothing completes this argument: no suggestions.
            None => return Ok(complete_result(shared, CompleteResult::default())),
        }
    };
    Ok(
        match handler
            .complete(RequestContext::new(shared.clone()), p)
            .await
        {
            Ok(mut r) => {
                r.completion.values.truncate(MAX_VALUES);
                complete_result(shared, r)
            }
            Err(e) => failure(shared, e.into_wire(Served::Other, shared.is_modern())),
        },
    )
}
