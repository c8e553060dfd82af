//! `#[resource("uri or template")]`: a function as an MCP resource or resource template.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::common::{Handler, Options, ParamKind, Place, bind, opt_lit, req_ident};
use crate::prompt::string_argument;
use crate::route::{Route, builder, description_of, name_of, out_ident};

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
    let name = name_of(options, handler);
    let description = description_of(options, doc);
    let title = opt_lit(&options.title);
    let mime = opt_lit(&options.mime_type);
    let req = req_ident();
    let request_ty = quote!(::vellum::server::ReadResourceRequest);
    let b = bind(handler, &request_ty, |ident, ty| {
        string_argument(ident, ty, quote!(&#req.variables))
    });
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
    let out = out_ident();
    let output = &handler.output;
    let route = Route {
        kind: "resource",
        label: uri_text,
        route_ty: quote!(::vellum::handler::ResourceRoute<impl ::vellum::handler::ResourceHandler>),
        request_ty,
        setup: quote!(),
        make,
        describe,
        prepare: quote!(),
        convert: quote_spanned!(output.span()=> ::vellum::handler::__private::read_result::<#output>(#out, &#req.uri, #mime)),
    };
    builder(handler, vis, place, &b, route)
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
