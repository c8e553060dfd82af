//! URI-template parsing and matching (`vellum::uri_template::UriTemplate`) on
//! arbitrary templates and URIs: no panic, no super-linear time, and a match binds only the
//! template's variables (optional ones may stay unbound).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vellum::uri_template::UriTemplate;

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
        assert!(
            vars.keys().all(|k| names.binary_search(&k.as_str()).is_ok()),
            "a match binds only the template's variables"
        );
    }
});
