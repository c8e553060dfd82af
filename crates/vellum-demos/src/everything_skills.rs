//! The `everything` server's Agent Skills (the skills extension, SEP-2640): two skills built
//! in memory, one with supporting files in a sub-directory, published with
//! `Server::add_skill`. Listing them (`skills/list`, `skills/get`), reading their files
//! (`resources/read` of `skill://…`) and browsing their directories
//! (`resources/directory/read`) is the SDK's doing.

use vellum::error::ConfigError;
use vellum::prelude::*;
use vellum::server::SkillFiles;

/// The `SKILL.md` of the `refunds` skill.
const REFUNDS: &str = "---
name: refunds
description: Process customer refund requests according to the refund policy
license: Apache-2.0
metadata:
  io.modelcontextprotocol.skills/audience: support
---

# Refunds

1. Check the order in `references/policy.md`.
2. Answer with the template in `templates/email.md`.
";

/// The `SKILL.md` of the `release-notes` skill.
const RELEASE_NOTES: &str = "---
name: release-notes
description: Write release notes from a list of merged changes
---

# Release notes

Group the changes by kind, newest first, one line each.
";

/// Adds the skills `acme/billing/refunds` (with `references/` and `templates/`) and
/// `release-notes` to `server`.
pub fn add_skill_fixtures(server: &Server) -> Result<(), ConfigError> {
    let refunds = SkillFiles::new("acme/billing", REFUNDS)?
        .with_file(
            "references/policy.md",
            "# Refund policy\n\nRefunds within 30 days of purchase, to the original payment method.\n",
        )?
        .with_file(
            "templates/email.md",
            "Dear {name},\n\nYour refund of {amount} is on its way.\n",
        )?;
    server.add_skill(refunds)?;
    server.add_skill(SkillFiles::new("", RELEASE_NOTES)?)?;
    Ok(())
}
