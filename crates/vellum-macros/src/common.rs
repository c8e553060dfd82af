//! What the three handler macros share: attribute options, doc comments, and the reading of
//! a handler's signature into extractors, state and input properties.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, Lit, LitStr, Meta, Pat, PathArguments,
    ReturnType, Signature, Token, Type, punctuated::Punctuated,
};

/// `name = "..."`-style options of `#[tool(...)]`, `#[prompt(...)]`, `#[resource(...)]`.
#[derive(Default)]
pub(crate) struct Options {
    /// The positional string (the resource's URI or template).
    pub(crate) positional: Option<LitStr>,
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    /// `scope = "..."`, in order; repeatable (every one is required).
    pub(crate) scopes: Vec<LitStr>,
    /// `annotations(read_only, destructive = false, ...)`: each hint and its value.
    pub(crate) annotations: Vec<(Ident, bool)>,
    /// `icons("https://...", ...)`: the icons' URIs.
    pub(crate) icons: Vec<LitStr>,
    /// `task_support = "optional"`.
    pub(crate) task_support: Option<LitStr>,
    /// `map_tool = path::to::fn`: a `FnOnce(Tool) -> Tool` applied to the described tool
    /// (what `ToolRoute::map_tool` does for a free tool, and the one way for a method's).
    pub(crate) map_tool: Option<Expr>,
}

/// The hints `annotations(...)` takes.
pub(crate) const ANNOTATIONS: &[&str] = &["read_only", "destructive", "idempotent", "open_world"];

impl Options {
    /// Parses the options; `allowed` lists the keys this macro takes.
    pub(crate) fn parse(
        tokens: TokenStream,
        macro_name: &str,
        allowed: &[&str],
        positional: bool,
    ) -> syn::Result<Options> {
        let mut options = Options::default();
        if tokens.is_empty() {
            return Ok(options);
        }
        let metas = syn::parse::Parser::parse2(
            Punctuated::<Meta, Token![,]>::parse_terminated,
            tokens.clone(),
        );
        let metas = match metas {
            Ok(m) => m,
            Err(_) if positional => {
                // `#[resource("uri", name = "...")]`: a string first, then options.
                return Self::parse_positional(tokens, macro_name, allowed);
            }
            Err(e) => return Err(e),
        };
        for meta in metas {
            options.set(meta, macro_name, allowed)?;
        }
        Ok(options)
    }

    fn parse_positional(
        tokens: TokenStream,
        macro_name: &str,
        allowed: &[&str],
    ) -> syn::Result<Options> {
        let parser = |input: syn::parse::ParseStream<'_>| {
            let first: LitStr = input.parse()?;
            let mut metas = Vec::new();
            while !input.is_empty() {
                input.parse::<Token![,]>()?;
                if input.is_empty() {
                    break;
                }
                metas.push(input.parse::<Meta>()?);
            }
            Ok((first, metas))
        };
        let (first, metas) = syn::parse::Parser::parse2(parser, tokens)?;
        let mut options = Options {
            positional: Some(first),
            ..Options::default()
        };
        for meta in metas {
            options.set(meta, macro_name, allowed)?;
        }
        Ok(options)
    }

    /// `annotations(...)` and `icons(...)`: the two list options.
    fn set_list(&mut self, list: &syn::MetaList, key: &str) -> syn::Result<()> {
        if key == "icons" {
            let uris = list.parse_args_with(Punctuated::<LitStr, Token![,]>::parse_terminated)?;
            self.icons.extend(uris);
            return Ok(());
        }
        let hints = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?;
        for hint in hints {
            let (path, value) = match &hint {
                Meta::Path(p) => (p, true),
                Meta::NameValue(nv) => match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(b), ..
                    }) => (&nv.path, b.value),
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "a hint takes `true` or `false` (alone it means true)",
                        ));
                    }
                },
                Meta::List(l) => (&l.path, true),
            };
            let name = path
                .get_ident()
                .filter(|i| ANNOTATIONS.contains(&i.to_string().as_str()));
            let Some(name) = name else {
                return Err(syn::Error::new(
                    path.span(),
                    format!(
                        "unknown hint; annotations(...) takes: {}",
                        ANNOTATIONS.join(", ")
                    ),
                ));
            };
            self.annotations.push((name.clone(), value));
        }
        Ok(())
    }

    fn set(&mut self, meta: Meta, macro_name: &str, allowed: &[&str]) -> syn::Result<()> {
        if let Meta::List(list) = &meta {
            let key = list
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            if allowed.contains(&key.as_str()) && matches!(key.as_str(), "annotations" | "icons") {
                return self.set_list(list, &key);
            }
        }
        let Meta::NameValue(nv) = &meta else {
            return Err(syn::Error::new(
                meta.span(),
                format!(
                    "expected `key = \"value\"` in #[{macro_name}(...)]; keys: {}",
                    allowed.join(", ")
                ),
            ));
        };
        let key = nv
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        if !allowed.contains(&key.as_str()) {
            return Err(syn::Error::new(
                nv.path.span(),
                format!(
                    "unknown option `{key}` of #[{macro_name}]; it takes: {}",
                    allowed.join(", ")
                ),
            ));
        }
        if key == "map_tool" {
            self.map_tool = Some(nv.value.clone());
            return Ok(());
        }
        let Expr::Lit(ExprLit {
            lit: Lit::Str(value),
            ..
        }) = &nv.value
        else {
            return Err(syn::Error::new(
                nv.value.span(),
                format!("`{key}` takes a string literal: {key} = \"...\""),
            ));
        };
        if key == "scope" {
            self.scopes.push(value.clone());
            return Ok(());
        }
        let slot = match key.as_str() {
            "task_support" => &mut self.task_support,
            "name" => &mut self.name,
            "description" => &mut self.description,
            "title" => &mut self.title,
            "mime_type" => &mut self.mime_type,
            _ => &mut self.positional,
        };
        *slot = Some(value.clone());
        Ok(())
    }
}

/// The text of the `///` doc comments among `attrs`, lines joined, trimmed; `None` if empty.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            let line = s.value();
            // `/// text` arrives as " text": drop the one space the comment syntax adds.
            lines.push(
                line.strip_prefix(' ')
                    .unwrap_or(&line)
                    .trim_end()
                    .to_owned(),
            );
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `Some("text")` or `None` as tokens.
pub(crate) fn opt_str(value: Option<String>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// `Some("text")` or `None` from a literal option.
pub(crate) fn opt_lit(value: &Option<LitStr>) -> TokenStream {
    opt_str(value.as_ref().map(LitStr::value))
}

/// What one argument of a handler function is.
pub(crate) enum ParamKind {
    /// A [`FromRequest`] value, passed by reference when the parameter is `&T`.
    Extract { by_ref: bool },
    /// `State<T>`: `T` comes from the route builder.
    State { inner: Type },
    /// `Json<T>`: a tool's whole input.
    Input { inner: Type },
    /// A typed input property (tools) or a string argument / template variable (prompts,
    /// resources).
    Property { ident: Ident },
}

pub(crate) struct Param {
    pub(crate) kind: ParamKind,
    /// The parameter's type (for `&T`, `T`).
    pub(crate) ty: Type,
    /// Its doc comment (a property's description).
    pub(crate) doc: Option<String>,
    /// `#[serde(...)]` and `#[schemars(...)]` attributes, forwarded to the property.
    pub(crate) forward: Vec<Attribute>,
}

/// The extractor types the macros know by name (the last segment of the type's path).
const EXTRACTORS: &[&str] = &[
    "RequestContext",
    "CallToolRequest",
    "GetPromptRequest",
    "ReadResourceRequest",
    "Caller",
    "Principal",
    "Extension",
];

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// `T` of `Name<T>` when `ty`'s last path segment is `Name`.
pub(crate) fn generic_of(ty: &Type, name: &str) -> Option<Type> {
    let seg = last_segment(ty)?;
    if seg.ident != name {
        return None;
    }
    match &seg.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        }),
        _ => None,
    }
}

fn is_extractor(ty: &Type) -> bool {
    let Some(seg) = last_segment(ty) else {
        return false;
    };
    if EXTRACTORS.iter().any(|e| seg.ident == e) {
        return true;
    }
    // `Option<Caller>`, `Option<Principal>`: the caller when there is one.
    generic_of(ty, "Option").is_some_and(|inner| {
        last_segment(&inner).is_some_and(|s| s.ident == "Caller" || s.ident == "Principal")
    })
}

/// The handler as the macros read it.
pub(crate) struct Handler {
    pub(crate) name: Ident,
    pub(crate) is_async: bool,
    pub(crate) has_self: bool,
    pub(crate) params: Vec<Param>,
    /// The declared return type (`()` when there is none).
    pub(crate) output: Type,
}

/// Reads `sig`, removing the attributes the macro consumes from its parameters (rustc
/// accepts no doc comment or `#[serde]` on a function parameter).
pub(crate) fn read_signature(sig: &mut Signature, what: &str) -> syn::Result<Handler> {
    if let Some(g) = sig.generics.params.first() {
        return Err(syn::Error::new(
            g.span(),
            format!(
                "a #[{what}] function cannot be generic: the macro needs its concrete types to derive schemas"
            ),
        ));
    }
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let mut has_self = false;
    let mut params = Vec::new();
    for input in sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(r) => {
                if r.reference.is_none() || r.mutability.is_some() {
                    push(syn::Error::new(
                        r.span(),
                        format!(
                            "a #[{what}] method takes `&self`: calls run concurrently, so keep mutable state behind a Mutex or an atomic"
                        ),
                    ));
                }
                has_self = true;
            }
            FnArg::Typed(pt) => match read_param(pt, what) {
                Ok(p) => params.push(p),
                Err(e) => push(e),
            },
        }
    }
    let inputs = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Input { .. }))
        .count();
    let props = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Property { .. }))
        .count();
    if what == "tool" && inputs > 0 && (inputs > 1 || props > 0) {
        push(syn::Error::new(
            sig.inputs.span(),
            "a #[tool] takes its input either as one `Json<T>` argument or as typed arguments (each a property of the input), not both",
        ));
    }
    if what != "tool" && inputs > 0 {
        push(syn::Error::new(
            sig.inputs.span(),
            format!(
                "`Json<T>` is a tool's input; a #[{what}]'s arguments are strings: take `name: String` (or `Option<String>`, or any `FromStr` type)"
            ),
        ));
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let output = match &sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    };
    if let Type::ImplTrait(t) = &output {
        return Err(syn::Error::new(
            t.span(),
            format!(
                "a #[{what}] function must name its return type (the macro derives the output schema from it); write the type instead of `impl Trait`"
            ),
        ));
    }
    Ok(Handler {
        name: sig.ident.clone(),
        is_async: sig.asyncness.is_some(),
        has_self,
        params,
        output,
    })
}

fn read_param(pt: &mut syn::PatType, what: &str) -> syn::Result<Param> {
    let doc = doc_text(&pt.attrs);
    let mut extract = false;
    let mut forward = Vec::new();
    let mut keep = Vec::new();
    for attr in pt.attrs.drain(..) {
        if attr.path().is_ident("doc") {
            continue;
        } else if attr.path().is_ident("extract") {
            extract = true;
        } else if attr.path().is_ident("serde") || attr.path().is_ident("schemars") {
            forward.push(attr);
        } else {
            keep.push(attr);
        }
    }
    pt.attrs = keep;
    let (ty, by_ref) = match &*pt.ty {
        Type::Reference(r) => {
            if r.mutability.is_some() {
                return Err(syn::Error::new(
                    r.span(),
                    "a handler cannot take `&mut`: take the value or `&T`",
                ));
            }
            ((*r.elem).clone(), true)
        }
        other => (other.clone(), false),
    };
    let kind = if extract || by_ref || is_extractor(&ty) {
        ParamKind::Extract { by_ref }
    } else if let Some(inner) = generic_of(&ty, "State") {
        ParamKind::State { inner }
    } else if let Some(inner) = generic_of(&ty, "Json") {
        ParamKind::Input { inner }
    } else {
        let ident = match &*pt.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    format!(
                        "a typed argument of a #[{what}] needs a plain name (it becomes the property's name); destructure inside the function, or mark an extractor `#[extract]`"
                    ),
                ));
            }
        };
        ParamKind::Property { ident }
    };
    if !forward.is_empty() && !matches!(kind, ParamKind::Property { .. }) {
        return Err(syn::Error::new(
            forward[0].span(),
            "#[serde] and #[schemars] apply to typed input properties only",
        ));
    }
    Ok(Param {
        kind,
        ty,
        doc,
        forward,
    })
}

/// The generated locals: what each parameter is bound to before the call, and the call's
/// argument expressions in the user's order.
pub(crate) struct Bindings {
    /// `let`s run inside the handler's future, before the call.
    pub(crate) lets: Vec<TokenStream>,
    /// The arguments of the call, in order.
    pub(crate) args: Vec<TokenStream>,
    /// The state parameters of the route builder (`name: T`).
    pub(crate) state_params: Vec<(Ident, Type)>,
}

/// Binds every extractor and state parameter; `request_ty` is the request type of this
/// handler kind; properties are bound by `property` (their value expression).
pub(crate) fn bind(
    handler: &Handler,
    request_ty: &TokenStream,
    mut property: impl FnMut(&Ident, &Type) -> TokenStream,
) -> Bindings {
    let ctx = ctx_ident();
    let req = req_ident();
    let mut b = Bindings {
        lets: Vec::new(),
        args: Vec::new(),
        state_params: Vec::new(),
    };
    for (i, p) in handler.params.iter().enumerate() {
        let local = format_ident!("__vellum_arg{}", i, span = Span::mixed_site());
        let ty = &p.ty;
        match &p.kind {
            ParamKind::Extract { .. } | ParamKind::Input { .. } => {
                let by_ref = matches!(p.kind, ParamKind::Extract { by_ref: true });
                // Spanned at the type, so a type that is not an extractor is the error's place.
                b.lets.push(quote_spanned! {ty.span()=>
                    let #local = <#ty as ::vellum::handler::FromRequest<#request_ty>>::from_request(&#ctx, &#req)?;
                });
                b.args.push(if by_ref {
                    quote!(&#local)
                } else {
                    quote!(#local)
                });
            }
            ParamKind::State { inner } => {
                let state =
                    format_ident!("state{}", b.state_params.len(), span = Span::mixed_site());
                b.state_params.push((state.clone(), inner.clone()));
                b.lets
                    .push(quote!(let #local = ::vellum::handler::State(#state);));
                b.args.push(quote!(#local));
            }
            ParamKind::Property { ident } => {
                let value = property(ident, ty);
                b.lets.push(quote!(let #local = #value;));
                b.args.push(quote!(#local));
            }
        }
    }
    b
}

pub(crate) fn ctx_ident() -> Ident {
    Ident::new("__vellum_ctx", Span::mixed_site())
}

pub(crate) fn req_ident() -> Ident {
    Ident::new("__vellum_req", Span::mixed_site())
}

pub(crate) fn this_ident() -> Ident {
    Ident::new("__vellum_this", Span::mixed_site())
}

/// Where the route builder lives: a free function beside the handler, or an associated
/// function of a `#[tools]` impl (which gets the shared `self`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Free,
    Method,
}

/// The call of the user's function, awaited when async, with its future checked for `Send`
/// at the function's name.
pub(crate) fn call(handler: &Handler, place: Place, args: &[TokenStream]) -> TokenStream {
    let name = &handler.name;
    let this = this_ident();
    let callee = match place {
        Place::Free => quote!(#name),
        Place::Method => quote!(Self::#name),
    };
    let receiver = handler.has_self.then(|| quote!(&*#this,));
    let call = quote!(#callee(#receiver #(#args),*));
    if handler.is_async {
        quote_spanned! {name.span()=> ::vellum::handler::__private::require_send(#call).await }
    } else {
        call
    }
}

/// The clones each call of the handler takes of the route's state (`self` or `State`s).
pub(crate) fn clones(handler: &Handler, place: Place, b: &Bindings) -> TokenStream {
    let this = this_ident();
    let this_clone = (place == Place::Method && handler.has_self)
        .then(|| quote!(let #this = ::vellum::handler::__private::Arc::clone(&#this);));
    let states = b
        .state_params
        .iter()
        .map(|(s, _)| quote!(let #s = ::core::clone::Clone::clone(&#s);));
    quote!(#this_clone #(#states)*)
}

/// The parameters of the route builder.
pub(crate) fn builder_params(
    handler: &Handler,
    place: Place,
    b: &Bindings,
) -> syn::Result<TokenStream> {
    if place == Place::Free && handler.has_self {
        return Err(syn::Error::new(
            handler.name.span(),
            "a method with #[tool], #[prompt] or #[resource] needs #[vellum::tools] on its impl block",
        ));
    }
    if place == Place::Method && !b.state_params.is_empty() {
        return Err(syn::Error::new(
            handler.name.span(),
            "in a #[tools] impl the state is `self`: take `&self` instead of `State<T>`",
        ));
    }
    let this = this_ident();
    let this_param =
        (place == Place::Method).then(|| quote!(#this: ::vellum::handler::__private::Arc<Self>,));
    let states = b.state_params.iter().map(|(s, t)| quote!(#s: #t));
    Ok(quote!(#this_param #(#states),*))
}

/// A name for the route builder of a free function.
pub(crate) fn builder_name(handler: &Handler, suffix: &str, place: Place) -> Ident {
    match place {
        Place::Free => format_ident!("{}_{}", handler.name, suffix),
        Place::Method => format_ident!("__vellum_{}_{}", suffix, handler.name),
    }
}
