//! Attribute macros of the [Vellum](https://docs.rs/vellum) MCP SDK, re-exported by `vellum`
//! (its default `macros` feature): write tools, prompts and resources as plain functions.
//!
//! - [`macro@tool`] on a function: its name is the tool's name, its doc comment the
//!   description; its typed arguments (their doc comments describe them) or one `Json<T>`
//!   are the input schema; a `Json<T>` return gives the output schema.
//! - [`macro@prompt`] and [`macro@resource`] do the same for prompts and resources.
//! - [`macro@tools`] on an `impl` block serves every such method, with `self` as the state.
//!
//! A free function `foo` gets a route builder `foo_tool()` (`foo_prompt()`,
//! `foo_resource()`) beside it; `.register(&server)` serves it. See `vellum::handler` for the
//! extractors and return types, and the examples there.
//!
//! ```ignore
//! use vellum::prelude::*;
//!
//! /// Says hello.
//! #[tool]
//! async fn greet(
//!     /// Who to greet.
//!     name: String,
//! ) -> String {
//!     format!("Hello, {name}")
//! }
//!
//! let server = Server::new(Implementation::new("demo", "1.0"), ServerOptions::default());
//! greet_tool().register(&server)?;
//! ```

mod common;
mod prompt;
mod resource;
mod route;
mod tool;
mod tools;

use proc_macro::TokenStream;
use quote::{ToTokens, quote};
use syn::ItemFn;

use common::{Handler, Options, Place, doc_text, read_signature};

/// The kinds of handler, with what each takes.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }

    pub(crate) fn options(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => tool::OPTIONS,
            Kind::Prompt => prompt::OPTIONS,
            Kind::Resource => resource::OPTIONS,
        }
    }

    pub(crate) fn route(
        self,
        options: &Options,
        doc: Option<String>,
        handler: &Handler,
        vis: &proc_macro2::TokenStream,
        place: Place,
    ) -> syn::Result<proc_macro2::TokenStream> {
        match self {
            Kind::Tool => tool::route(options, doc, handler, vis, place),
            Kind::Prompt => prompt::route(options, doc, handler, vis, place),
            Kind::Resource => resource::route(options, doc, handler, vis, place),
        }
    }
}

fn free(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut f: ItemFn = match syn::parse(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let msg = format!(
                "#[{}] goes on a function (`async fn` or `fn`), or on a method in a #[tools] impl",
                kind.name()
            );
            let item = proc_macro2::TokenStream::from(item);
            return quote!(::core::compile_error!(#msg); #item).into();
        }
    };
    let result = Options::parse(
        attr.into(),
        kind.name(),
        kind.options(),
        matches!(kind, Kind::Resource),
    )
    .and_then(|options| {
        let handler = read_signature(&mut f.sig, kind.name())?;
        let vis = f.vis.to_token_stream();
        kind.route(&options, doc_text(&f.attrs), &handler, &vis, Place::Free)
    });
    match result {
        Ok(route) => quote!(#f #route).into(),
        // Keep the function so the only errors are the macro's.
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#f #e).into()
        }
    }
}

/// An MCP tool.
///
/// On a function (async or not): builds `<name>_tool()`, its route. Options:
/// `#[tool(name = "...", description = "...", title = "...")]`; without them the name is the
/// function's and the description its doc comment. `scope = "calendar:write"` (repeat it for
/// more: a call needs all of them) is `Tool::requires_scope`: over HTTP, a caller without the
/// scope gets 403 `insufficient_scope` (OAuth step-up) before the function runs.
/// `annotations(read_only, destructive, idempotent, open_world = false)`, `icons("https://…")`
/// and `task_support = "optional"` set those fields. `map_tool = path::to::fn` applies a
/// `fn(Tool) -> Tool` (or any `FnOnce(Tool) -> Tool` expression) to the described tool, for
/// what the options do not cover (`_meta`, a schema tweak): what `.map_tool(..)` on a free
/// tool's route does, and the way to do it for a `#[tools]` method (`map_tool =
/// Self::adjust`), whose routes are registered together.
///
/// Arguments, in any order: `&RequestContext`, `&CallToolRequest`, `Caller` /
/// `Option<Caller>` or `Principal` / `Option<Principal>` (the caller), `Extension<T>`, `State<T>` (the route builder takes the
/// `T`), one `Json<T>` (the whole input), `#[extract]` for your own `FromRequest` type, and
/// typed arguments (`name: Type`, with `Type: Deserialize + JsonSchema`): each a property of
/// the input, its doc comment the property's description, `Option<_>` optional;
/// `#[serde(...)]` and `#[schemars(...)]` on it apply to the property.
///
/// Returns: `String`, `Json<T>` (structured output; `T`'s schema becomes the
/// `outputSchema`), `CallToolResult`, `()`, or `Result<T, E>` of these with `E: Display`
/// (an error becomes a tool error result the model reads).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Tool, attr, item)
}

/// An MCP prompt.
///
/// On a function: builds `<name>_prompt()`. Options: `name`, `description`, `title`. Typed
/// arguments are the prompt's arguments (`String`, or any `FromStr` type; `Option<_>` for
/// optional ones; doc comments describe them); extractors as for [`macro@tool`]. Returns
/// `String` (one user message), `PromptMessage`, `Vec<PromptMessage>`, `GetPromptResult`, or
/// `Result<T, E>` of these.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Prompt, attr, item)
}

/// An MCP resource: `#[resource("file:///notes.md")]`, or a template
/// `#[resource("note://{id}")]` whose variables are the function's typed arguments.
///
/// On a function: builds `<name>_resource()`. Options after the URI: `name`, `description`,
/// `title`, `mime_type`. Returns `String` (text), `Vec<u8>` (a blob), `ResourceContents`,
/// `Vec<ResourceContents>`, `ReadResourceResult`, or `Result<T, E>` of these.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    free(Kind::Resource, attr, item)
}

/// Serves every `#[tool]`, `#[prompt]` and `#[resource]` method of an `impl` block, with
/// `self` as the shared state: the type becomes `vellum::handler::Register`, and
/// `value.register(&server)` serves them all (the value is shared by every call, so methods
/// take `&self`).
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    tools::expand(attr.into(), item.into()).into()
}
