//! The route builder every attribute generates: `#[tool]`, `#[prompt]` and `#[resource]`
//! differ in what they describe and how a call's arguments are read, not in the builder's
//! shape, which is written here once.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use crate::common::{
    Bindings, Handler, Options, Place, builder_name, builder_params, call, clones, ctx_ident,
    opt_str, req_ident,
};

/// The `name` option, or the function's name.
pub(crate) fn name_of(options: &Options, handler: &Handler) -> String {
    options
        .name
        .as_ref()
        .map_or_else(|| handler.name.to_string(), |n| n.value())
}

/// The `description` option, or the function's doc comment.
pub(crate) fn description_of(options: &Options, doc: Option<String>) -> TokenStream {
    opt_str(options.description.as_ref().map(|d| d.value()).or(doc))
}

/// The local the user's function's result is bound to, for [`Route::convert`].
pub(crate) fn out_ident() -> Ident {
    Ident::new("__vellum_out", Span::mixed_site())
}

/// What one kind of route puts into the shared builder.
pub(crate) struct Route {
    /// `tool`, `prompt` or `resource`: the builder's name suffix and the attribute's name.
    pub(crate) kind: &'static str,
    /// What the builder's doc names (the tool's name, the resource's URI).
    pub(crate) label: String,
    /// The builder's return type.
    pub(crate) route_ty: TokenStream,
    /// The request type the handler takes.
    pub(crate) request_ty: TokenStream,
    /// Items and checks at the start of the builder.
    pub(crate) setup: TokenStream,
    /// The route constructor, called with `describe` and the handler.
    pub(crate) make: TokenStream,
    /// The tool, prompt or resource the route serves.
    pub(crate) describe: TokenStream,
    /// Statements first in each call's future (reading typed arguments).
    pub(crate) prepare: TokenStream,
    /// The call's result (in [`out_ident`]) turned into the answer.
    pub(crate) convert: TokenStream,
}

/// The route builder function of `handler`, from its bindings `b` (`common::bind`).
pub(crate) fn builder(
    handler: &Handler,
    vis: &TokenStream,
    place: Place,
    b: &Bindings,
    r: Route,
) -> syn::Result<TokenStream> {
    let params = builder_params(handler, place, b)?;
    let builder = builder_name(handler, r.kind, place);
    let clones = clones(handler, place, b);
    let lets = &b.lets;
    let call = call(handler, place, &b.args);
    let ctx = ctx_ident();
    let req = req_ident();
    let out = out_ident();
    let doc = format!(
        "The route of the `{}` {kind} (made by `#[{kind}]`): `.register(&server)` serves it.",
        r.label,
        kind = r.kind
    );
    let attrs = match place {
        Place::Free => quote!(#[doc = #doc]),
        Place::Method => quote!(#[doc(hidden)]),
    };
    let Route {
        route_ty,
        request_ty,
        setup,
        make,
        describe,
        prepare,
        convert,
        ..
    } = r;
    Ok(quote! {
        #attrs
        #vis fn #builder(#params) -> #route_ty {
            #setup
            #make(#describe, move |#ctx: ::vellum::server::RequestContext, #req: #request_ty| {
                #clones
                async move {
                    let _ = (&#ctx, &#req);
                    #prepare
                    #(#lets)*
                    let #out = #call;
                    #convert
                }
            })
        }
    })
}
