//! `#[prompt]`: a function as an MCP prompt.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::common::{
    Handler, Options, ParamKind, Place, bind, generic_of, opt_lit, opt_str, req_ident,
};
use crate::route::{Route, builder, description_of, name_of, out_ident};

pub(crate) const OPTIONS: &[&str] = &["name", "description", "title"];

/// The route builder of one prompt.
pub(crate) fn route(
    options: &Options,
    doc: Option<String>,
    handler: &Handler,
    vis: &TokenStream,
    place: Place,
) -> syn::Result<TokenStream> {
    let name = name_of(options, handler);
    let description = description_of(options, doc);
    let title = opt_lit(&options.title);
    let req = req_ident();
    let request_ty = quote!(::vellum::server::GetPromptRequest);
    let b = bind(handler, &request_ty, |ident, ty| {
        string_argument(ident, ty, quote!(&#req.arguments))
    });
    let mut declared = Vec::new();
    for p in &handler.params {
        if let ParamKind::Property { ident } = &p.kind {
            let arg = ident.to_string();
            let desc = opt_str(p.doc.clone());
            let required = generic_of(&p.ty, "Option").is_none();
            declared.push(
                quote!(::vellum::handler::__private::prompt_argument(#arg, #desc, #required)),
            );
        }
    }
    let out = out_ident();
    let output = &handler.output;
    let route = Route {
        kind: "prompt",
        describe: quote!(::vellum::handler::__private::prompt(#name, #description, #title, ::std::vec![#(#declared),*])),
        label: name,
        route_ty: quote!(::vellum::handler::PromptRoute<impl ::vellum::handler::PromptHandler>),
        request_ty,
        setup: quote!(),
        make: quote!(::vellum::handler::PromptRoute::new),
        prepare: quote!(),
        convert: quote_spanned!(output.span()=> ::vellum::handler::__private::prompt_result::<#output>(#out)),
    };
    builder(handler, vis, place, &b, route)
}

/// A string argument (prompt argument or template variable) parsed into its type: required,
/// or optional for `Option<T>`.
pub(crate) fn string_argument(ident: &Ident, ty: &syn::Type, values: TokenStream) -> TokenStream {
    let name = ident.to_string();
    match generic_of(ty, "Option") {
        Some(inner) => quote_spanned! {ty.span()=>
            ::vellum::handler::__private::optional::<#inner>(#values, #name)?
        },
        None => quote_spanned! {ty.span()=>
            ::vellum::handler::__private::required::<#ty>(#values, #name)?
        },
    }
}
