//! `#[tool]`: a function as an MCP tool.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::common::{Handler, Options, ParamKind, Place, bind, opt_lit, req_ident};
use crate::route::{Route, builder, description_of, out_ident};

pub(crate) const OPTIONS: &[&str] = &[
    "name",
    "description",
    "title",
    "scope",
    "annotations",
    "icons",
    "task_support",
    "map_tool",
];

/// True for one OAuth scope token (RFC 6749 §3.3: printable ASCII but space, `"` and `\\`).
fn valid_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e))
}

/// True for a valid tool name (1 to 128 of `A-Za-z0-9_.-`), as the server checks it.
fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The route builder of one tool.
pub(crate) fn route(
    options: &Options,
    doc: Option<String>,
    handler: &Handler,
    vis: &TokenStream,
    place: Place,
) -> syn::Result<TokenStream> {
    let name = match &options.name {
        Some(n) => {
            if !valid_name(&n.value()) {
                return Err(syn::Error::new(
                    n.span(),
                    "a tool name is 1 to 128 of A-Z a-z 0-9 _ - .",
                ));
            }
            n.value()
        }
        None => handler.name.to_string(),
    };
    let description = description_of(options, doc);
    let title = opt_lit(&options.title);
    let mut scopes = Vec::new();
    for scope in &options.scopes {
        if !valid_scope(&scope.value()) {
            return Err(syn::Error::new(
                scope.span(),
                "a scope is one OAuth scope token (printable ASCII, no space, `\"` or `\\`): \
                 write `scope = \"...\"` once per scope; a call needs all of them",
            ));
        }
        scopes.push(scope.value());
    }

    let extras = describe_extras(options)?;

    let args = Ident::new("__vellum_args", Span::mixed_site());
    let args_ty = Ident::new("__VellumArgs", Span::mixed_site());
    let request_ty = quote!(::vellum::server::CallToolRequest);
    let b = bind(handler, &request_ty, |ident, _| quote!(#args.#ident));

    // The input: one `Json<T>`, typed arguments (a struct of them), or nothing.
    let mut checks = Vec::new();
    let mut fields = Vec::new();
    for p in &handler.params {
        if let ParamKind::Property { ident } = &p.kind {
            let ty = &p.ty;
            checks.push(quote_spanned! {ty.span()=>
                ::vellum::handler::__private::typed_argument::<#ty>();
            });
            let doc = p.doc.iter();
            let forward = &p.forward;
            fields.push(quote!(#(#[doc = #doc])* #(#forward)* #ident: #ty));
        }
    }
    let input = handler.params.iter().find_map(|p| match &p.kind {
        ParamKind::Input { inner } => Some(inner),
        _ => None,
    });
    let (args_struct, input_schema, deserialize) = if !fields.is_empty() {
        (
            quote! {
                #[derive(::vellum::handler::__private::serde::Deserialize, ::vellum::handler::__private::schemars::JsonSchema)]
                #[serde(crate = "::vellum::handler::__private::serde")]
                #[schemars(crate = "::vellum::handler::__private::schemars")]
                struct #args_ty { #(#fields),* }
            },
            quote!(::vellum::handler::__private::input_schema::<#args_ty>()),
            {
                let req = req_ident();
                quote! {
                    let #args: #args_ty = match ::vellum::handler::__private::arguments(&#req) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(r) => return ::core::result::Result::Ok(r),
                    };
                }
            },
        )
    } else if let Some(inner) = input {
        (
            quote!(),
            quote_spanned!(inner.span()=> ::vellum::handler::__private::input_schema::<#inner>()),
            quote!(),
        )
    } else {
        (
            quote!(),
            quote!(::vellum::handler::__private::input_schema::<
                ::vellum::server::NoArgs,
            >()),
            quote!(),
        )
    };
    let output = &handler.output;
    let output_schema =
        quote_spanned!(output.span()=> ::vellum::handler::__private::output_schema::<#output>());
    let out = out_ident();
    // Spanned at the return type, like the output schema's check: a type that is not a
    // result is reported there.
    let convert =
        quote_spanned!(output.span()=> ::vellum::handler::__private::tool_result::<#output>(#out));
    let mut describe = quote! {
        ::vellum::handler::__private::tool(#name, #description, #title, #input_schema, #output_schema)
            #(.requires_scope(#scopes))*
            #extras
    };
    if let Some(map) = &options.map_tool {
        // Spanned at the function given: one that is not `FnOnce(Tool) -> Tool` is
        // reported there.
        describe =
            quote_spanned!(map.span()=> ::vellum::handler::__private::map_tool(#describe, #map));
    }
    let route = Route {
        kind: "tool",
        describe,
        label: name,
        route_ty: quote!(::vellum::handler::ToolRoute<impl ::vellum::handler::ToolHandler>),
        request_ty,
        setup: quote!(#(#checks)* #args_struct),
        make: quote!(::vellum::handler::ToolRoute::new),
        prepare: deserialize,
        convert,
    };
    builder(handler, vis, place, &b, route)
}

/// The builder calls of `annotations(...)`, `icons(...)` and `task_support = "..."`.
fn describe_extras(options: &Options) -> syn::Result<TokenStream> {
    let mut calls = TokenStream::new();
    if !options.annotations.is_empty() {
        let hint = |name: &str| {
            let value = options
                .annotations
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v);
            match value {
                Some(v) => quote!(::core::option::Option::Some(#v)),
                None => quote!(::core::option::Option::None),
            }
        };
        let (r, d, i, o) = (
            hint("read_only"),
            hint("destructive"),
            hint("idempotent"),
            hint("open_world"),
        );
        calls.extend(quote! {
            .with_annotations(::vellum::handler::__private::annotations(#r, #d, #i, #o))
        });
    }
    if !options.icons.is_empty() {
        let icons = &options.icons;
        calls.extend(quote! {
            .with_icons(::std::vec![#(::vellum::handler::__private::icon(#icons)),*])
        });
    }
    if let Some(support) = &options.task_support {
        let variant = match support.value().as_str() {
            "forbidden" => quote!(Forbidden),
            "optional" => quote!(Optional),
            "required" => quote!(Required),
            _ => {
                return Err(syn::Error::new(
                    support.span(),
                    "task_support is \"forbidden\", \"optional\" or \"required\"",
                ));
            }
        };
        calls.extend(quote!(.with_task_support(::vellum::protocol::TaskSupport::#variant)));
    }
    Ok(calls)
}
