//! `#[tools]`: every handler method of an impl block, registered with `self` as the state.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{ImplItem, ItemImpl, Meta};

use crate::Kind;
use crate::common::{Options, Place, builder_name, doc_text, read_signature};

fn kind_of(attr: &syn::Attribute) -> Option<Kind> {
    let last = attr.path().segments.last()?;
    match last.ident.to_string().as_str() {
        "tool" => Some(Kind::Tool),
        "prompt" => Some(Kind::Prompt),
        "resource" => Some(Kind::Resource),
        _ => None,
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(attr.span(), "#[tools] takes no options").to_compile_error();
    }
    let mut block: ItemImpl = match syn::parse2(item.clone()) {
        Ok(b) => b,
        Err(_) => {
            return quote! {
                ::core::compile_error!("#[tools] goes on an `impl Type { ... }` block whose methods carry #[tool], #[prompt] or #[resource]");
                #item
            };
        }
    };
    if let Some((_, path, _)) = &block.trait_ {
        return syn::Error::new(
            path.span(),
            "#[tools] goes on an inherent impl (`impl Type { ... }`), not a trait impl",
        )
        .to_compile_error();
    }
    let mut builders = Vec::new();
    let mut registers = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for item in block.items.iter_mut() {
        let ImplItem::Fn(method) = item else { continue };
        let Some(pos) = method.attrs.iter().position(|a| kind_of(a).is_some()) else {
            continue;
        };
        let attr = method.attrs.remove(pos);
        let Some(kind) = kind_of(&attr) else { continue };
        let tokens = match &attr.meta {
            Meta::List(list) => list.tokens.clone(),
            _ => TokenStream::new(),
        };
        let result = Options::parse(
            tokens,
            kind.name(),
            kind.options(),
            matches!(kind, Kind::Resource),
        )
        .and_then(|options| {
            let handler = read_signature(&mut method.sig, kind.name())?;
            let route = kind.route(
                &options,
                doc_text(&method.attrs),
                &handler,
                &TokenStream::new(),
                Place::Method,
            )?;
            let suffix = kind.name();
            Ok((route, builder_name(&handler, suffix, Place::Method)))
        });
        match result {
            Ok((route, builder)) => {
                builders.push(route);
                registers.push(quote! {
                    ::vellum::handler::Register::register(
                        Self::#builder(::vellum::handler::__private::Arc::clone(&this)),
                        server,
                    )?;
                });
            }
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
    }
    if let Some(e) = errors {
        let e = e.to_compile_error();
        return quote!(#block #e);
    }
    if registers.is_empty() {
        let e = syn::Error::new(
            block.self_ty.span(),
            "#[tools] found no method with #[tool], #[prompt] or #[resource] in this impl",
        )
        .to_compile_error();
        return quote!(#block #e);
    }
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    let self_ty = &block.self_ty;
    quote! {
        #block

        impl #impl_generics #self_ty #where_clause {
            #(#builders)*
        }

        impl #impl_generics ::vellum::handler::Register for #self_ty #where_clause {
            fn register(
                self,
                server: &::vellum::server::Server,
            ) -> ::core::result::Result<(), ::vellum::error::ConfigError> {
                let this = ::vellum::handler::__private::Arc::new(self);
                #(#registers)*
                ::core::result::Result::Ok(())
            }
        }
    }
}
