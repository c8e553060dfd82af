//! `mcpbench report`.

use crate::cli::ReportArgs;

pub(crate) fn write(_args: &ReportArgs) -> anyhow::Result<()> {
    Ok(())
}
