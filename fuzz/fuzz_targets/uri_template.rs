//! URI-template parsing and matching (`vellum::server::uri_template::UriTemplate`) on
//! arbitrary templates and URIs: no panic, and a match binds exactly the template's
//! variables.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vellum::server::uri_template::UriTemplate;

fuzz_target!(|input: (&str, &str)| {
    let (template, uri) = input;
    let Ok(t) = UriTemplate::parse(template) else {
        return;
    };
    assert_eq!(t.as_str(), template);
    if let Some(vars) = t.matches(uri) {
        let mut names: Vec<&str> = t.variables().collect();
        names.sort_unstable();
        names.dedup();
        let bound: Vec<&str> = vars.keys().map(String::as_str).collect();
        assert_eq!(
            bound, names,
            "a match binds exactly the template's variables"
        );
    }
});
