//! `#[resource("uri or template")]`: a function as an MCP resource or resource template.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::common::{
    Handler, Options, ParamKind, Place, bind, builder_name, builder_params, call, clones,
    ctx_ident, opt_lit, opt_str, req_ident,
};
use crate::prompt::string_argument;

pub(crate) const OPTIONS: &[&str] = &["name", "description", "title", "mime_type"];

/// The variable names of an RFC 6570 template (`{var}`, `{+path}`, `{?a,b*}`, `{x:3}`).
fn template_variables(template: &str) -> Vec<String> {
    let mut vars = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let expr = &rest[open + 1..open + close];
        let expr = expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expr.split(',') {
            let var = var
                .split(':')
                .next()
                .unwrap_or_default()
                .trim_end_matches('*');
            if !var.is_empty() {
                vars.push(var.to_owned());
            }
        }
        rest = &rest[open + close + 1..];
    }
    vars
}

/// The route builder of one resource.
pub(crate) fn route(
    options: &Options,
    doc: Option<String>,
    handler: &Handler,
    vis: &TokenStream,
    place: Place,
) -> syn::Result<TokenStream> {
    let Some(uri) = &options.positional else {
        return Err(syn::Error::new(
            handler.name.span(),
            "#[resource] needs the resource's URI or URI template: #[resource(\"file:///notes.md\")] or #[resource(\"note://{id}\")]",
        ));
    };
    let uri_text = uri.value();
    if !uri_text.contains(':') {
        return Err(syn::Error::new(
            uri.span(),
            "a resource URI needs a scheme, like file:///notes.md or note://{id}",
        ));
    }
    let variables = template_variables(&uri_text);
    let is_template = uri_text.contains('{');
    for p in &handler.params {
        if let ParamKind::Property { ident } = &p.kind {
            let var = ident.to_string();
            if !is_template {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "a resource at a fixed URI takes no arguments; to read `{var}` from the URI, use a template such as \"{}{{{var}}}\"",
                        uri_text.trim_end_matches('/').to_owned() + "/"
                    ),
                ));
            }
            if !variables.contains(&var) {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "`{var}` is not a variable of the template {uri_text:?} (its variables: {})",
                        variables.join(", ")
                    ),
                ));
            }
        }
    }
    let name = options
        .name
        .as_ref()
        .map_or_else(|| handler.name.to_string(), |n| n.value());
    let description = opt_str(options.description.as_ref().map(|d| d.value()).or(doc));
    let title = opt_lit(&options.title);
    let mime = opt_lit(&options.mime_type);
    let req = req_ident();
    let request_ty = quote!(::vellum::server::ReadResourceRequest);
    let b = bind(handler, &request_ty, |ident, ty| {
        string_argument(ident, ty, quote!(&#req.variables))
    });
    let params = builder_params(handler, place, &b)?;
    let (describe, make) = if is_template {
        (
            quote!(::vellum::handler::__private::resource_template(#uri_text, #name, #title, #description, #mime)),
            quote!(::vellum::handler::ResourceRoute::template),
        )
    } else {
        (
            quote!(::vellum::handler::__private::resource(#uri_text, #name, #title, #description, #mime)),
            quote!(::vellum::handler::ResourceRoute::fixed),
        )
    };
    let builder = builder_name(handler, "resource", place);
    let clones = clones(handler, place, &b);
    let lets = &b.lets;
    let call = call(handler, place, &b.args);
    let ctx = ctx_ident();
    let out = Ident::new("__vellum_out", Span::mixed_site());
    let output = &handler.output;
    let convert = quote_spanned!(output.span()=> ::vellum::handler::__private::read_result::<#output>(#out, &#req.uri, #mime));
    let doc = format!(
        "The route of the `{uri_text}` resource (made by `#[resource]`): `.register(&server)` serves it."
    );
    let attrs = match place {
        Place::Free => quote!(#[doc = #doc]),
        Place::Method => quote!(#[doc(hidden)]),
    };
    Ok(quote! {
        #attrs
        #vis fn #builder(#params) -> ::vellum::handler::ResourceRoute<impl ::vellum::handler::ResourceHandler> {
            #make(#describe, move |#ctx: ::vellum::server::RequestContext, #req: ::vellum::server::ReadResourceRequest| {
                #clones
                async move {
                    let _ = (&#ctx, &#req);
                    #(#lets)*
                    let #out = #call;
                    #convert
                }
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::template_variables;

    #[test]
    fn variables_of_every_operator() {
        assert_eq!(template_variables("note://{id}"), ["id"]);
        assert_eq!(
            template_variables("file:///{+path}{?rev,fmt*}{#frag:3}"),
            ["path", "rev", "fmt", "frag"]
        );
        assert!(template_variables("file:///fixed").is_empty());
    }
}
