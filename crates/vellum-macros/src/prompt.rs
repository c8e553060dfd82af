//! `#[prompt]`: a function as an MCP prompt.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::common::{
    Handler, Options, ParamKind, Place, bind, builder_name, builder_params, call, clones,
    ctx_ident, generic_of, opt_lit, opt_str, req_ident,
};

pub(crate) const OPTIONS: &[&str] = &["name", "description", "title"];

/// The route builder of one prompt.
pub(crate) fn route(
    options: &Options,
    doc: Option<String>,
    handler: &Handler,
    vis: &TokenStream,
    place: Place,
) -> syn::Result<TokenStream> {
    let name = options
        .name
        .as_ref()
        .map_or_else(|| handler.name.to_string(), |n| n.value());
    let description = opt_str(options.description.as_ref().map(|d| d.value()).or(doc));
    let title = opt_lit(&options.title);
    let req = req_ident();
    let request_ty = quote!(::vellum::server::GetPromptRequest);
    let b = bind(handler, &request_ty, |ident, ty| {
        string_argument(ident, ty, quote!(&#req.arguments))
    });
    let params = builder_params(handler, place, &b)?;
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
    let builder = builder_name(handler, "prompt", place);
    let clones = clones(handler, place, &b);
    let lets = &b.lets;
    let call = call(handler, place, &b.args);
    let ctx = ctx_ident();
    let out = Ident::new("__vellum_out", Span::mixed_site());
    let output = &handler.output;
    let convert = quote_spanned!(output.span()=> ::vellum::handler::__private::prompt_result::<#output>(#out));
    let doc = format!(
        "The route of the `{name}` prompt (made by `#[prompt]`): `.register(&server)` serves it."
    );
    let attrs = match place {
        Place::Free => quote!(#[doc = #doc]),
        Place::Method => quote!(#[doc(hidden)]),
    };
    Ok(quote! {
        #attrs
        #vis fn #builder(#params) -> ::vellum::handler::PromptRoute<impl ::vellum::handler::PromptHandler> {
            let prompt = ::vellum::handler::__private::prompt(#name, #description, #title, ::std::vec![#(#declared),*]);
            ::vellum::handler::PromptRoute::new(prompt, move |#ctx: ::vellum::server::RequestContext, #req: ::vellum::server::GetPromptRequest| {
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
